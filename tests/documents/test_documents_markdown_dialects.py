"""Documentation-site Markdown dialects (MkDocs Material, Python-Markdown and PyMdown extensions) on
real excerpts in tests/data/markdown_dialects: markup becomes structure, never prose, titles or paths."""

from __future__ import annotations

from pathlib import Path

import pytest

from ragstream.config import TEXT_PIPELINE_VERSION, load_config
from ragstream.documents.chunkers import chunk_document
from ragstream.documents.loaders import load_file
from ragstream.documents.markdown_dialects import clean_markdown
from ragstream.documents.markdown_text import refresh_title
from ragstream.documents.prose import CODE_BLOCK
from ragstream.models import LoadedDocument, Page, TextPiece

DIALECTS = Path(__file__).resolve().parents[1] / "data" / "markdown_dialects"
CONFIG = load_config()
LEAKS = ("{ #", "{#", "///", "!!!", "???", "{*", "*}", "{!", "--8<--", "<!--", ":simple-", ":material-", ":octicons-")
TITLES = {
    "fastapi-request-files.md": "Request Files",
    "fastapi-request-files-2020.md": "Request Files",
    "fastapi-advanced-middleware.md": "Advanced Middleware",
    "fastapi-classes-as-dependencies.md": "Classes as Dependencies",
    "mkdocs-material-admonitions.md": "Admonitions",
    "mkdocs-material-blog-badge.md": "Adding a badge to your project",  # front matter
    "textual-styles.md": "Styles",
}


def load(name: str) -> tuple[LoadedDocument, list[TextPiece]]:
    doc = load_file(DIALECTS / name, CONFIG)
    return doc, chunk_document(doc, CONFIG.chunking)


def prose(pieces: list[TextPiece]) -> str:
    """Chunk text outside fenced code (code is kept verbatim and may show any syntax)."""
    return "\n".join(CODE_BLOCK.sub(" ", piece.text) for piece in pieces)


@pytest.mark.parametrize("name", sorted(TITLES))
def test_dialect_markup_never_reaches_titles_paths_or_prose(name: str) -> None:
    doc, pieces = load(name)
    assert doc.title == TITLES[name]
    assert pieces
    paths = {" > ".join(piece.header_path) for piece in pieces}
    for leak in LEAKS:
        assert leak not in doc.title and not any(leak in path for path in paths), (leak, paths)
        assert leak not in prose(pieces), leak
    assert clean_markdown(clean_markdown(doc.text)) == clean_markdown(doc.text), "the rewrite is idempotent"


def test_fastapi_blocks_become_labelled_paragraphs_and_includes_reference_lines() -> None:
    _, pieces = load("fastapi-request-files.md")
    text = "\n".join(piece.text for piece in pieces)
    assert "Note: To receive uploaded files, first install [`python-multipart`]" in text
    assert "Tip: To declare File bodies, you need to use `File`" in text
    assert "Included file: `../../docs_src/request_files/tutorial001_an_py310.py`" in text
    assert "hl[" not in text, "line highlighting is presentation, not content"
    assert ("Request Files", "File Parameters with `UploadFile`", "`UploadFile`") in {p.header_path for p in pieces}
    assert all(piece.text.startswith("#") for piece in pieces), "every piece still starts with its heading"

    _, pieces = load("fastapi-advanced-middleware.md")
    text = "\n".join(piece.text for piece in pieces)
    assert "Note — Technical Details: For the next examples, you could also use" in text
    assert "## `HTTPSRedirectMiddleware`\n" in text


def test_content_tabs_and_nested_blocks_keep_their_labels_and_code() -> None:
    _, pieces = load("fastapi-classes-as-dependencies.md")
    text = "\n".join(piece.text for piece in pieces)
    assert "Python 3.10+:\n```Python\ncommons: Annotated[CommonQueryParams, Depends(CommonQueryParams)]\n```" in text
    assert "Python 3.10+ non-Annotated:\nTip: Prefer to use the `Annotated` version if possible." in text


def test_indented_admonitions_and_includes_inside_fences() -> None:
    _, pieces = load("fastapi-request-files-2020.md")
    text = "\n".join(piece.text for piece in pieces)
    assert "Info: To receive uploaded files, first install" in text
    assert "\n    " not in prose(pieces), "admonition bodies are dedented into plain paragraphs"
    assert "Included file: `../../../docs_src/request_files/tutorial001.py`" in text
    assert "```Python" not in text, "a fence holding only an include becomes its reference line"

    _, pieces = load("textual-styles.md")
    text = "\n".join(piece.text for piece in pieces)
    assert "Note: These docs use the term *screen*" in text
    assert "Included file: `docs/examples/guide/styles/screen.py`" in text
    assert "Included file: `docs/images/styles/box.excalidraw.svg`" in text


def test_material_front_matter_comments_collapsibles_and_tabs() -> None:
    doc, pieces = load("mkdocs-material-blog-badge.md")
    assert doc.metadata["date"] == "2023-11-30"
    assert pieces[0].header_path == ("Adding a badge to your project",)
    assert "more" not in prose(pieces).split("[badge]")[0].split("README:")[-1]

    doc, pieces = load("mkdocs-material-admonitions.md")
    assert doc.metadata["icon"] == "material/alert-outline"
    assert "md:version" not in "\n".join(piece.text for piece in pieces)
    text = clean_markdown(doc.text)  # the chunker may put a blank line between a label and its code
    assert "Example — Expand to show alternate icon sets:\nOcticons:\n``` yaml" in text
    assert "FontAwesome:\n``` yaml" in text


def test_code_fences_are_kept_verbatim() -> None:
    text = '# Usage { #usage }\n\n``` markdown\n!!! note "Title"\n\n    Body\n\n{* app.py hl[3] *}\n<!-- c -->\n```\n'
    assert clean_markdown(text) == '# Usage\n\n``` markdown\n!!! note "Title"\n\n    Body\n\n{* app.py hl[3] *}\n<!-- c -->\n```'


def test_other_include_forms_and_attribute_lists() -> None:
    text = (
        "# Guide {: #guide .wide }\n\nIntro.\n{: .lead }\n\n[Start](start.md){ .md-button }\n\n"
        '--8<--\nparts/a.md\n"parts/b.md"\n--8<--\n\n{% include "footer.md" %}\n\n'
        "Text <!-- hidden --> shown.\n<!--\n# Not a heading\n-->\n/// html | div\n\nWrapped.\n\n///\n"
    )
    cleaned = clean_markdown(text)
    assert cleaned.startswith("# Guide\n\nIntro.\n\n[Start](start.md)\n")
    for line in ("Included file: `parts/a.md`", "Included file: `parts/b.md`", "Included file: `footer.md`",
                 "Text shown.", "Wrapped."):
        assert line in cleaned.split("\n"), line
    assert "Not a heading" not in cleaned and "html" not in cleaned


def test_the_text_pipeline_version_is_part_of_the_index_fingerprint(monkeypatch: pytest.MonkeyPatch) -> None:
    before = CONFIG.index_fingerprint()
    monkeypatch.setattr("ragstream.config.root.TEXT_PIPELINE_VERSION", TEXT_PIPELINE_VERSION + 1)
    assert CONFIG.index_fingerprint() != before


def test_reindex_cleans_a_title_stored_by_an_earlier_version() -> None:
    stored = LoadedDocument(document_id="d", source="s.md", title="First Steps { #first-steps }", mime="text/markdown",
                            checksum="0", size_bytes=1, pages=(Page(number=None, text="# First Steps { #first-steps }"),))
    assert refresh_title(stored).title == "First Steps"
    pdf = stored.model_copy(update={"mime": "application/pdf", "title": "A { #b }"})
    assert refresh_title(pdf) is pdf



def test_links_and_emphasis_in_headings_reach_paths_as_their_words(tmp_path: Path) -> None:
    """``## Async Support`` / ``### [Trio](https://…)`` gives the path ``Async Support > Trio``, never the URL."""
    page = tmp_path / "async.md"
    page.write_text("# **Async** Support\n\nIntro text of the page.\n\n## [Trio](https://trio.readthedocs.io/)\n\n"
                    "Trio is supported with the `anyio` backend.\n\n## ![icon](i.png) Using `my_var_name` *here*\n\n"
                    "Text under a heading with an image and emphasis.\n", encoding="utf-8")
    doc = load_file(page, CONFIG)
    paths = {tuple(piece.header_path) for piece in chunk_document(doc, CONFIG.chunking)}
    assert doc.title == "Async Support"
    assert ("Async Support", "Trio") in paths
    assert ("Async Support", "icon Using `my_var_name` here") in paths
    assert not any("http" in part or "](" in part for path in paths for part in path), paths
