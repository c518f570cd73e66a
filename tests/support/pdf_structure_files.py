"""PDFs with a text layer made with pypdf: lines in given fonts and sizes, an outline (bookmarks), hostile outlines.

Each page is a list of :class:`Line`; they are drawn from the top down, one below the other, in the standard
Helvetica fonts (no embedding needed: pypdf extracts their text by the standard encoding).
"""

from __future__ import annotations

import io
from collections.abc import Sequence
from dataclasses import dataclass

from pypdf import PdfWriter
from pypdf.generic import ArrayObject, DecodedStreamObject, DictionaryObject, Fit, NameObject, TextStringObject

PAGE_WIDTH, PAGE_HEIGHT, MARGIN = 600, 800, 50


@dataclass(frozen=True)
class Line:
    """A line of text, its size in points and whether it is bold."""

    text: str
    size: float = 10
    bold: bool = False


@dataclass(frozen=True)
class Bookmark:
    """An outline entry: its title, the 0-based page it points at, its level (1 = top) and the top it points at."""

    title: str
    page: int
    level: int = 1
    top: float | None = None


def styled_pdf(pages: list[list[Line]], outline: Sequence[Bookmark] = ()) -> bytes:
    """A PDF of ``pages`` (their lines drawn top down) with ``outline`` as its bookmarks."""
    writer = PdfWriter()
    fonts = DictionaryObject({
        NameObject("/F1"): writer._add_object(_font("Helvetica")),
        NameObject("/F2"): writer._add_object(_font("Helvetica-Bold")),
    })
    for lines in pages:
        page = writer.add_blank_page(PAGE_WIDTH, PAGE_HEIGHT)
        page[NameObject("/Resources")] = DictionaryObject({NameObject("/Font"): fonts})
        content = DecodedStreamObject()
        content.set_data(_content(lines))
        page[NameObject("/Contents")] = writer._add_object(content)
    parents: dict[int, object] = {}
    for mark in outline:
        fit = Fit.xyz(top=mark.top) if mark.top is not None else Fit.fit()
        item = writer.add_outline_item(title=mark.title, page_number=mark.page, parent=parents.get(mark.level - 1), fit=fit)
        parents[mark.level] = item
    out = io.BytesIO()
    writer.write(out)
    return out.getvalue()


def ruled_table_pdf(before: list[Line], rows: list[list[str]], after: list[Line]) -> bytes:
    """A one-page PDF: ``before`` lines, then ``rows`` as a table whose cells are boxed by drawn lines (the grid
    pdfplumber finds), then ``after`` lines."""
    writer = PdfWriter()
    page = writer.add_blank_page(PAGE_WIDTH, PAGE_HEIGHT)
    page[NameObject("/Resources")] = DictionaryObject(
        {NameObject("/Font"): DictionaryObject({NameObject("/F1"): writer._add_object(_font("Helvetica")),
                                                NameObject("/F2"): writer._add_object(_font("Helvetica-Bold"))})})
    column, height = 150, 20
    top = line_tops(before)[-1] - 2 * height if before else PAGE_HEIGHT - MARGIN
    parts = [_content(before).decode("cp1252")]
    for row_index, row in enumerate(rows):
        y = top - row_index * height
        for column_index, text in enumerate(row):
            x = MARGIN + column_index * column
            parts.append(f"{x} {y - height} {column} {height} re S")
            parts.append(f"BT /F1 10 Tf {x + 5} {y - height + 6} Td ({text}) Tj ET")
    below = top - len(rows) * height - 2 * height
    for line in after:
        below -= line.size * 1.5
        parts.append(f"BT /{'F2' if line.bold else 'F1'} {line.size} Tf {MARGIN} {below:.1f} Td ({line.text}) Tj ET")
    content = DecodedStreamObject()
    content.set_data("\n".join(parts).encode("cp1252"))
    page[NameObject("/Contents")] = writer._add_object(content)
    out = io.BytesIO()
    writer.write(out)
    return out.getvalue()


def line_tops(lines: list[Line]) -> list[float]:
    """The baseline of each of ``lines`` as :func:`styled_pdf` draws them."""
    tops, y = [], PAGE_HEIGHT - MARGIN
    for line in lines:
        y -= line.size * 1.5
        tops.append(y)
    return tops


def deep_outline_pdf(entries: int, *, loop: bool = False) -> bytes:
    """A one-page PDF whose outline nests ``entries`` bookmarks each inside the one before (a chain as deep as it is
    long); with ``loop`` the deepest entry's ``/First`` and ``/Next`` lead back to the top entry."""
    writer = PdfWriter()
    page = writer.add_blank_page(PAGE_WIDTH, PAGE_HEIGHT)
    page[NameObject("/Resources")] = DictionaryObject(
        {NameObject("/Font"): DictionaryObject({NameObject("/F1"): writer._add_object(_font("Helvetica"))})})
    content = DecodedStreamObject()
    content.set_data(_content([Line("Level 1"), Line("Some text under the bookmarks.")]))
    page[NameObject("/Contents")] = writer._add_object(content)
    outlines = DictionaryObject({NameObject("/Type"): NameObject("/Outlines")})
    outlines_ref = writer._add_object(outlines)
    destination = ArrayObject([page.indirect_reference, NameObject("/Fit")])
    items = [writer._add_object(DictionaryObject({NameObject("/Title"): TextStringObject(f"Level {level}"),
                                                  NameObject("/Dest"): destination}))
             for level in range(1, entries + 1)]
    for above, item in zip([outlines_ref, *items], items, strict=False):  # written by hand: pypdf's writer recurses
        above.get_object()[NameObject("/First")] = item
        above.get_object()[NameObject("/Last")] = item
        item.get_object()[NameObject("/Parent")] = above
    if loop:
        items[-1].get_object()[NameObject("/First")] = items[0]
        items[-1].get_object()[NameObject("/Next")] = items[0]
    writer._root_object[NameObject("/Outlines")] = outlines_ref
    out = io.BytesIO()
    writer.write(out)
    return out.getvalue()


def _font(name: str) -> DictionaryObject:
    return DictionaryObject({NameObject("/Type"): NameObject("/Font"), NameObject("/Subtype"): NameObject("/Type1"),
                             NameObject("/BaseFont"): NameObject(f"/{name}"),
                             NameObject("/Encoding"): NameObject("/WinAnsiEncoding")})


def _content(lines: list[Line]) -> bytes:
    parts = []
    for line, y in zip(lines, line_tops(lines), strict=True):
        text = line.text.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)")
        parts.append(f"BT /{'F2' if line.bold else 'F1'} {line.size} Tf {MARGIN} {y:.1f} Td ({text}) Tj ET")
    return "\n".join(parts).encode("cp1252")
