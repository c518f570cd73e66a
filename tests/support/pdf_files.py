"""Text PDFs written with pypdf: pages of lines in Helvetica (a standard font, not embedded), as a word processor
exports a short manual. The viewer tests cite a passage on a page past the first and find it on the drawn page."""

from __future__ import annotations

import io
from collections.abc import Sequence

from pypdf import PdfWriter
from pypdf.generic import DecodedStreamObject, DictionaryObject, NameObject

PAGE_WIDTH, PAGE_HEIGHT = 612, 792  # US Letter, in points
MARGIN = 64
BODY_SIZE, TITLE_SIZE = 11, 20
LEADING = 15


def _escaped(text: str) -> bytes:
    """``text`` as a PDF string literal's body (Latin-1; backslash and parentheses escaped)."""
    return text.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)").encode("latin-1")


def lines_pdf(pages: Sequence[Sequence[str]], *, title: str | None = None, width: int = PAGE_WIDTH,
              height: int = PAGE_HEIGHT, top: int | None = None) -> bytes:
    """A PDF of ``pages``, each a list of lines set in 11 pt Helvetica from the top margin (``top`` points from the
    bottom, or ``height - MARGIN``), the first page under ``title`` in 20 pt when given."""
    writer = PdfWriter()
    font = writer._add_object(DictionaryObject({
        NameObject("/Type"): NameObject("/Font"), NameObject("/Subtype"): NameObject("/Type1"),
        NameObject("/BaseFont"): NameObject("/Helvetica")}))
    start = height - MARGIN if top is None else top
    for number, lines in enumerate(pages):
        page = writer.add_blank_page(width, height)
        page[NameObject("/Resources")] = DictionaryObject({NameObject("/Font"): DictionaryObject({NameObject("/F1"): font})})
        ops = []
        y = start
        if title and number == 0:
            ops.append(b"BT /F1 %d Tf %d %d Td (%s) Tj ET" % (TITLE_SIZE, MARGIN, y, _escaped(title)))
            y -= 2 * LEADING
        if lines:
            body = b" T* ".join(b"(%s) Tj" % _escaped(line) for line in lines)
            ops.append(b"BT /F1 %d Tf %d TL %d %d Td %s ET" % (BODY_SIZE, LEADING, MARGIN, y, body))
        content = DecodedStreamObject()
        content.set_data(b"\n".join(ops))
        page[NameObject("/Contents")] = writer._add_object(content)
    out = io.BytesIO()
    writer.write(out)
    return out.getvalue()
