"""Small files that fail inside a reader (a deeply nested OpenDocument text, a truncated .docx) and ones whose
reading is much more work than their size says (a .docx that unpacks to megabytes, a scanned PDF or a TIFF of
many pages for OCR): what the upload tests send beside good files."""

from __future__ import annotations

import io

from PIL import Image
from pypdf import PdfWriter

from support import hostile_files
from support.office_files import handbook_docx, replace_entry
from support.pdf_files import lines_pdf


def nested_odt(depth: int = 5000) -> bytes:
    """A ~1 KB .odt whose one paragraph nests ``depth`` spans (a RecursionError in a recursive reader)."""
    return hostile_files.deep_odt(depth, "span")


def deflate64_odt() -> bytes:
    """An .odt whose ``content.xml`` says it is compressed with deflate64 (method 9), which Python's zipfile does not
    read (NotImplementedError)."""
    return hostile_files.odd_entry(hostile_files.odt(b"<text:p>Compressed with deflate64</text:p>"), "content.xml",
                                   "deflate64")


def truncated_docx() -> bytes:
    """A .docx cut in the middle of its central directory."""
    data = handbook_docx()
    return data[: len(data) - 40]


def inflating_docx(paragraph_bytes: int) -> bytes:
    """A small .docx whose ``word/document.xml`` unpacks to more than ``paragraph_bytes`` bytes of repeated text."""
    text = "the same words again " * (paragraph_bytes // 21 + 1)
    xml = ('<?xml version="1.0" encoding="UTF-8" standalone="yes"?><w:document '
           'xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"><w:body><w:p><w:r><w:t>'
           f"{text}</w:t></w:r></w:p></w:body></w:document>")
    return replace_entry(handbook_docx(), "word/document.xml", xml.encode())


def blank_pdf(pages: int) -> bytes:
    """A PDF of ``pages`` blank pages: no fonts, no text layer (what a scan looks like to the reader)."""
    writer = PdfWriter()
    for _ in range(pages):
        writer.add_blank_page(200, 200)
    out = io.BytesIO()
    writer.write(out)
    return out.getvalue()


def text_pdf(pages: int) -> bytes:
    """A PDF of ``pages`` pages, each with a line of text in Helvetica."""
    return lines_pdf([[f"Page {number} of the lighthouse keepers log"] for number in range(1, pages + 1)],
                     width=300, height=200, top=100)


def blank_png(width: int, height: int) -> bytes:
    """A white PNG of ``width`` x ``height`` pixels."""
    out = io.BytesIO()
    Image.new("L", (width, height), 255).save(out, "PNG")
    return out.getvalue()


def blank_tiff(frames: int) -> bytes:
    """A multi-page TIFF of ``frames`` small white frames (each a page for OCR)."""
    out = io.BytesIO()
    pages = [Image.new("L", (64, 64), 255) for _ in range(frames)]
    pages[0].save(out, "TIFF", save_all=True, append_images=pages[1:])
    return out.getvalue()
