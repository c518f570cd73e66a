"""A PDF's structure reaches its chunks: section paths from the outline (bookmarks), else from the type of the text
layer; no chunk crosses a section; a hostile outline costs bounded work (issue 44.1)."""

from __future__ import annotations

from pathlib import Path

import pytest
from support.pdf_structure_files import Bookmark, Line, deep_outline_pdf, line_tops, ruled_table_pdf, styled_pdf

from ragstream.config import load_config
from ragstream.documents import chunk_document, load_bytes
from ragstream.models import TextPiece

CONFIG = load_config()
BODY = [Line(f"The keeper lights the lamp at dusk and trims the wick at midnight, entry {n}.") for n in range(4)]


def pieces(data: bytes, **overrides: object) -> list[TextPiece]:
    config = load_config(**overrides) if overrides else CONFIG  # type: ignore[arg-type]
    doc = load_bytes(data, "keeper.pdf", config, source="keeper.pdf")
    return chunk_document(doc, config.chunking)


def test_outline_gives_each_chunk_its_section_path_and_page() -> None:
    first = [Line("The Keeper's Handbook", 20), Line("1 The Lamp", 14), *BODY, Line("1.1 Trimming the wick", 12), *BODY]
    data = styled_pdf([first, BODY, [Line("2 The Fog Signal", 14), *BODY]], [
        Bookmark("The Lamp", 0, 1),  # printed with its section number: "1 The Lamp"
        Bookmark("1.1 Trimming the wick", 0, 2),
        Bookmark("2 The Fog Signal", 2, 1),
    ])
    found = [(piece.page, piece.header_path) for piece in pieces(data)]
    assert found == [
        (1, ()),  # the title page line stands before the first bookmark
        (1, ("1 The Lamp",)),
        (1, ("1 The Lamp", "1.1 Trimming the wick")),
        (2, ("1 The Lamp", "1.1 Trimming the wick")),  # the section runs on across the page
        (3, ("2 The Fog Signal",)),
    ]


def test_a_bookmark_not_printed_goes_where_it_points_on_the_page() -> None:
    lines = [Line("Stores", 14), *BODY]  # the bookmark points just above entry 2
    tops = line_tops(lines)
    data = styled_pdf([lines], [Bookmark("Stores", 0, 1), Bookmark("Oil and wicks", 0, 2, top=tops[3] + 1)])
    found = pieces(data)
    assert [piece.header_path for piece in found] == [("Stores",), ("Stores", "Oil and wicks")]
    assert BODY[0].text in found[0].text and BODY[2].text in found[1].text and BODY[1].text not in found[1].text


def test_without_an_outline_headings_come_from_the_type() -> None:
    data = styled_pdf([
        [Line("The Keeper's Handbook", 20), Line("The Lamp", 14), *BODY, Line("Cleaning the lens", 10, bold=True),
         *BODY],
        [*BODY, Line("The Fog Signal", 14), *BODY],
    ])
    found = [(piece.page, piece.header_path) for piece in pieces(data)]
    assert found == [
        (1, ("The Keeper's Handbook", "The Lamp")),
        (1, ("The Keeper's Handbook", "The Lamp", "Cleaning the lens")),
        (2, ("The Keeper's Handbook", "The Lamp", "Cleaning the lens")),
        (2, ("The Keeper's Handbook", "The Fog Signal")),
    ]


def test_a_running_header_is_not_a_heading() -> None:
    header = Line("Lighthouse Service Manual", 10, bold=True)
    data = styled_pdf([[header, Line("The Lamp", 14), *BODY], [header, *BODY], [header, *BODY]])
    found = pieces(data)
    assert [piece.header_path for piece in found if piece.page != 1] == [("The Lamp",), ("The Lamp",)]
    assert not any("Lighthouse Service Manual" in piece.header_path for piece in found)


def test_structure_off_leaves_pages_without_headings() -> None:
    data = styled_pdf([[Line("The Lamp", 14), *BODY]], [Bookmark("The Lamp", 0)])
    assert [piece.header_path for piece in pieces(data, pdf={"structure": False})] == [()]


def test_a_page_line_that_reads_as_markdown_is_not_a_heading() -> None:
    data = styled_pdf([[Line("Signals", 14), Line("# of rockets fired at each wreck"), *BODY]],
                      [Bookmark("Signals", 0)])
    found = pieces(data)
    assert [piece.header_path for piece in found] == [("Signals",)]
    assert "\\# of rockets fired" in found[0].text


def test_chunks_never_cross_a_section() -> None:
    long_body = [Line(f"Entry {n}: the relief boat brought oil, wicks and letters to the rock station.")
                 for n in range(30)]
    sections = ["Stores", "Signals", "Relief"]
    page = [line for title in sections for line in (Line(title, 14), *long_body)]
    found = pieces(styled_pdf([page]), chunking={"chunk_size": 600, "chunk_overlap": 100})
    assert len(found) > len(sections)
    for piece in found:
        headings = [line for line in piece.text.split("\n") if line.startswith("#")]
        assert headings in ([], [f"# {piece.header_path[-1]}"]), piece.text
        assert len(piece.text) <= 600
    assert [piece.header_path for piece in found] == sorted(
        (piece.header_path for piece in found), key=lambda path: sections.index(path[0]))


def test_a_ruled_table_reads_as_a_markdown_table() -> None:
    rows = [["Station", "Keeper", "Oil (gallons)"], ["Bell Rock", "Stevenson", "120"], ["Skerryvore", "Alan", "95"]]
    data = ruled_table_pdf([Line("Stores", 14), BODY[0]], rows, [BODY[1]])
    found = pieces(data)
    assert [piece.header_path for piece in found] == [("Stores",)]
    assert ("| Station | Keeper | Oil (gallons) |\n| --- | --- | --- |\n| Bell Rock | Stevenson | 120 |\n"
            "| Skerryvore | Alan | 95 |") in found[0].text
    assert "Bell Rock Stevenson" not in found[0].text  # the table's flattened words are gone
    assert found[0].text.index(BODY[0].text) < found[0].text.index("| Station") < found[0].text.index(BODY[1].text)


def test_finding_tables_stops_at_its_time_budget_with_a_warning() -> None:
    rows = [["Station", "Keeper"], ["Bell Rock", "Stevenson"]]
    config = load_config(pdf={"table_max_seconds": 1e-9})  # spent before the first page is looked at
    doc = load_bytes(ruled_table_pdf([Line("Stores", 14)], rows, [BODY[0]]), "keeper.pdf", config, source="keeper.pdf")
    assert "| ---" not in doc.pages[0].text and "Bell Rock" in doc.pages[0].text
    assert any("pdf.table_max_seconds" in warning for warning in doc.warnings)


def test_a_one_column_frame_is_not_a_table() -> None:
    data = ruled_table_pdf([Line("Listing", 14)], [["#include <lamp.h>"], ["int main(void) { return 0; }"]], [BODY[0]])
    text = pieces(data)[0].text
    assert "| ---" not in text and "int main(void)" in text


@pytest.mark.parametrize("loop", [False, True])
def test_a_hostile_outline_is_read_within_its_bounds(loop: bool) -> None:
    data = deep_outline_pdf(5000, loop=loop)  # 5000 bookmarks each nested in the one before (pypdf's own walk fails)
    found = pieces(data, pdf={"max_outline_entries": 4, "max_outline_depth": 3})
    assert [piece.header_path for piece in found] == [("Level 1", "Level 2", "Level 3")]
    assert pieces(data)[0].header_path == tuple(f"Level {n}" for n in range(1, 7))  # Markdown's six levels


@pytest.mark.slow  # real data beside the repo
def test_real_outline_pdf_gives_every_chunk_after_the_contents_a_section(shared_data: Path) -> None:
    data = (shared_data / "pdfs" / "pdflatex-outline.pdf").read_bytes()
    found = pieces(data)
    assert all(piece.header_path for piece in found if piece.page and piece.page > 1)
    assert ("1 Foo",) in {piece.header_path for piece in found}

