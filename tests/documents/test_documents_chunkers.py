"""Chunking strategies on small crafted texts."""

from __future__ import annotations

import re
from itertools import pairwise

from ragstream.config import ChunkingConfig
from ragstream.documents.chunkers import approximate_token_count, chunk_document
from ragstream.documents.chunkers.markdown import chunk_markdown
from ragstream.documents.chunkers.split_when_needed import chunk_split_when_needed
from ragstream.documents.chunkers.window import chunk_window, normalize_whitespace
from ragstream.models import LoadedDocument, Page


def words(text: str) -> int:
    """A predictable token counter for tests: one token per whitespace-separated word."""
    return len(text.split())


def sentences(count: int, prefix: str = "Sentence") -> str:
    return " ".join(f"{prefix} number {i} says something short." for i in range(count))


def make_doc(pages: tuple[Page, ...], mime: str) -> LoadedDocument:
    return LoadedDocument(
        document_id="d", source="s", title="t", mime=mime, checksum="0" * 64, size_bytes=1, pages=pages
    )


# -- window -------------------------------------------------------------------------------------


def test_normalize_whitespace_keeps_paragraph_breaks_only() -> None:
    assert normalize_whitespace("a  b\n c\t d\n\n\n  e\r\n f  ") == "a b c d\n\ne f"


def test_window_pieces_respect_size_overlap_and_sentence_boundaries() -> None:
    text = sentences(60)
    config = ChunkingConfig(chunk_size=200, chunk_overlap=50)
    pieces = chunk_window(text, config, words)
    assert len(pieces) > 5
    for piece in pieces:
        assert len(piece.text) <= 200
    for before, after in pairwise(pieces):
        assert before.text.endswith(".")  # cut after a sentence, not mid-word
        head = after.text[:20]
        assert head in before.text[-60:], "consecutive windows must overlap"
    covered = " ".join(piece.text for piece in pieces)
    for i in range(60):
        assert f"Sentence number {i} says" in covered


def test_window_short_text_is_one_piece() -> None:
    assert [p.text for p in chunk_window("Short  text.\n", ChunkingConfig(), words)] == ["Short text."]


def test_window_cuts_unbroken_text_at_the_size() -> None:
    pieces = chunk_window("x" * 450, ChunkingConfig(chunk_size=200, chunk_overlap=50), words)
    assert [len(p.text) for p in pieces] == [200, 200, 150]


# -- markdown -----------------------------------------------------------------------------------

MARKDOWN = """Preamble text.

# Guide

Intro to the guide.

## Install

```bash
# this is a shell comment, not a heading
pip install thing
```

### Extras

Optional extras.

## Use

Call it.
"""


def test_markdown_splits_at_headings_with_header_paths() -> None:
    pieces = chunk_markdown(MARKDOWN, ChunkingConfig(), words)
    assert [p.header_path for p in pieces] == [
        (),
        ("Guide",),
        ("Guide", "Install"),
        ("Guide", "Install", "Extras"),
        ("Guide", "Use"),
    ]
    assert pieces[0].text == "Preamble text."
    install = pieces[2].text
    assert install.startswith("## Install") and "# this is a shell comment" in install
    assert all(p.text.count("```") % 2 == 0 for p in pieces)
    assert pieces[3].text.startswith("### Extras")


def test_markdown_heading_without_body_is_carried_into_the_next_piece() -> None:
    pieces = chunk_markdown("# Top\n## Child\n\nBody text.", ChunkingConfig(), words)
    assert len(pieces) == 1
    assert pieces[0].text == "# Top\n## Child\n\nBody text."
    assert pieces[0].header_path == ("Top", "Child")


def test_markdown_long_section_is_windowed_by_blocks_without_splitting_fences() -> None:
    paragraphs = [f"Paragraph {i}. " + "words " * 20 for i in range(8)]
    fence = "```python\n" + "\n".join(f"line_{i} = {i}" for i in range(10)) + "\n```"
    body = "\n\n".join([*paragraphs[:4], fence, *paragraphs[4:]])
    config = ChunkingConfig(chunk_size=400, chunk_overlap=150)
    pieces = chunk_markdown(f"## Big Section\n\n{body}\n", config, words)
    assert len(pieces) > 2
    for piece in pieces:
        assert piece.text.startswith("## Big Section\n\n")
        assert piece.header_path == ("Big Section",)
        assert len(piece.text) <= config.chunk_size
        assert piece.text.count("```") % 2 == 0
    assert sum(fence in piece.text for piece in pieces) >= 1  # the fence stays whole
    # Overlap: some paragraph is repeated at the start of the next piece.
    bodies = [piece.text.removeprefix("## Big Section\n\n") for piece in pieces]
    assert any(after.split("\n\n")[0] in before for before, after in pairwise(bodies))


def test_markdown_fence_larger_than_chunk_size_is_split_into_closed_fences() -> None:
    fence = "```python\n" + "\n".join(f"value_{i} = {i} * 2" for i in range(60)) + "\n```"
    pieces = chunk_markdown(f"# Code\n\n{fence}\n", ChunkingConfig(chunk_size=300, chunk_overlap=0), words)
    assert len(pieces) > 1
    lines_seen = []
    for piece in pieces:
        assert len(piece.text) <= 300
        body = piece.text.removeprefix("# Code\n\n")
        assert body.startswith("```python\n") and body.endswith("\n```")
        lines_seen += body.split("\n")[1:-1]
    assert lines_seen == [f"value_{i} = {i} * 2" for i in range(60)]


def test_markdown_tilde_fence_and_longer_backtick_fences() -> None:
    text = "## A\n\n~~~\n# not a heading\n```\n~~~\n\n## B\n\n````\n```\n# still code\n````\n"
    pieces = chunk_markdown(text, ChunkingConfig(), words)
    assert [p.header_path for p in pieces] == [("A",), ("B",)]


# -- split when needed --------------------------------------------------------------------------


def big_markdown() -> str:
    return (
        "# Manual\n\nIntro.\n\n"
        "## Small\n\n" + sentences(3, "Small") + "\n\n"
        "## Large\n\nLarge intro.\n\n"
        "### Part One\n\n" + sentences(6, "One") + "\n\n"
        "### Part Two\n\n" + sentences(6, "Two") + "\n\n"
        "## Huge Paragraphs\n\n" + "\n\n".join(sentences(4, f"P{i}") for i in range(6)) + "\n"
    )


def test_split_when_needed_keeps_a_small_document_whole() -> None:
    text = big_markdown()
    pieces = chunk_split_when_needed(text, ChunkingConfig(max_chunk_tokens=10_000), words)
    assert len(pieces) == 1 and pieces[0].text == text.strip() and pieces[0].header_path == ()


def test_split_when_needed_splits_at_h2_then_h3_then_paragraphs() -> None:
    config = ChunkingConfig(max_chunk_tokens=60)
    pieces = chunk_split_when_needed(big_markdown(), config, words)
    paths = [p.header_path for p in pieces]
    assert paths[:5] == [
        ("Manual",),
        ("Manual", "Small"),
        ("Manual", "Large"),
        ("Manual", "Large", "Part One"),
        ("Manual", "Large", "Part Two"),
    ]
    assert all(path == ("Manual", "Huge Paragraphs") for path in paths[5:]) and len(paths) > 6
    by_path = {p.header_path: p.text for p in pieces}
    assert by_path[("Manual", "Small")].startswith("## Small\n\n")
    # H3 sub-pieces carry their H2 header line too.
    assert by_path[("Manual", "Large", "Part One")].startswith("## Large\n### Part One\n\nOne number 0")
    assert by_path[("Manual", "Large")] == "## Large\n\nLarge intro."
    for piece in pieces:
        assert words(piece.text) <= config.max_chunk_tokens
        if piece.header_path == ("Manual", "Huge Paragraphs"):
            assert piece.text.startswith("## Huge Paragraphs\n\n")
            paragraphs = piece.text.split("\n\n")[1:]
            assert all(re.fullmatch(r"(P\d) number 0 .*\1 number 3 says something short\.", p) for p in paragraphs)


def test_split_when_needed_has_no_overlap() -> None:
    pieces = chunk_split_when_needed(big_markdown(), ChunkingConfig(max_chunk_tokens=60), words)
    joined = "\n\n".join(p.text for p in pieces)
    for marker in ["Small number 0", "One number 5", "Two number 0", "P3 number 2", "Large intro."]:
        assert joined.count(marker) == 1


def test_split_when_needed_cuts_a_single_oversized_paragraph_at_sentences() -> None:
    text = sentences(40)
    pieces = chunk_split_when_needed(text, ChunkingConfig(max_chunk_tokens=50), words)
    assert len(pieces) > 1
    assert all(words(p.text) <= 50 and p.text.endswith(".") for p in pieces)
    assert " ".join(p.text for p in pieces) == text


# -- tables ----------------------------------------------------------------------------------------


TABLE_HEADER = "| Station | Keeper | Note |\n| --- | :---: | ---: |"


def long_table(rows: int) -> str:
    return TABLE_HEADER + "\n" + "\n".join(f"| Station {i} | Keeper {i % 5} | Lamp lit at dusk |" for i in range(rows))


def test_a_long_markdown_table_is_cut_between_rows_with_its_header_in_every_piece() -> None:
    text = "# Log\n\nBefore the table.\n\n" + long_table(80)
    config = ChunkingConfig(chunk_size=400, chunk_overlap=0)
    pieces = chunk_markdown(text, config, words)
    table_pieces = [piece for piece in pieces if "| Station " in piece.text and "---" in piece.text]
    assert len(table_pieces) >= 5
    for piece in table_pieces:
        assert piece.text.startswith("# Log\n\n") and TABLE_HEADER in piece.text and len(piece.text) <= 400
        assert piece.header_path == ("Log",)
    lines = [line for piece in table_pieces for line in piece.text.split("\n")]
    rows = [line for line in lines if line.startswith("| Station ") and line not in TABLE_HEADER]
    assert rows == [f"| Station {i} | Keeper {i % 5} | Lamp lit at dusk |" for i in range(80)], "each row once, in order"


def test_split_when_needed_repeats_the_header_of_an_oversized_table_too() -> None:
    config = ChunkingConfig(strategy="split_when_needed", max_chunk_tokens=120)
    pieces = chunk_split_when_needed("## Log\n\n" + long_table(60), config, words)
    assert len(pieces) > 2 and all(TABLE_HEADER in piece.text for piece in pieces)


def test_a_block_that_only_looks_like_a_table_is_cut_as_text() -> None:
    text = "| not a table row\n" + "\n".join(f"line {i} of a plain paragraph" for i in range(60))
    pieces = chunk_markdown(text, ChunkingConfig(chunk_size=300, chunk_overlap=0), words)
    assert len(pieces) > 1 and not any("| not a table row" in piece.text for piece in pieces[1:])


def test_auto_strategy_reads_office_csv_and_epub_text_as_markdown() -> None:
    page = (Page(text="# Sheet1\n\n" + TABLE_HEADER + "\n| a | b | c |"),)
    for mime in ("application/vnd.openxmlformats-officedocument.spreadsheetml.sheet", "text/csv",
                 "application/epub+zip", "application/vnd.oasis.opendocument.text"):
        assert chunk_document(make_doc(page, mime), ChunkingConfig(), words)[0].header_path == ("Sheet1",)


# -- dispatcher and token estimate --------------------------------------------------------------


def test_auto_strategy_picks_markdown_for_markdown_and_html_and_window_otherwise() -> None:
    page = (Page(text="# Head\n\nBody text here."),)
    assert chunk_document(make_doc(page, "text/markdown"), ChunkingConfig(), words)[0].header_path == ("Head",)
    assert chunk_document(make_doc(page, "text/html"), ChunkingConfig(), words)[0].header_path == ("Head",)
    plain = chunk_document(make_doc(page, "text/plain"), ChunkingConfig(), words)
    assert plain[0].header_path == () and plain[0].text == "# Head\n\nBody text here."


def test_pages_are_kept_for_every_strategy_and_short_pieces_dropped() -> None:
    pages = (Page(number=1, text="First page text."), Page(number=3, text="Third page text."), Page(number=4, text="x"))
    for strategy in ("auto", "window", "markdown", "split_when_needed"):
        config = ChunkingConfig(strategy=strategy, min_chunk_chars=5)
        pieces = chunk_document(make_doc(pages, "application/pdf"), config, words)
        assert [(p.page, p.text) for p in pieces] == [(1, "First page text."), (3, "Third page text.")]


def test_approximate_token_count_errs_high() -> None:
    assert approximate_token_count("") == 0
    assert approximate_token_count("the cat sat.") == 4
    assert approximate_token_count("internationalization") == 5
    assert approximate_token_count("1234567") == 3
    prose = sentences(50)
    assert approximate_token_count(prose) >= len(prose.split())
