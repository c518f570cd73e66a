"""Pick the reader for a sniffed MIME type and run it: every format's text as pages of (Markdown-flavoured) text.

Readers import their libraries on first use, so loading a Markdown file never imports python-docx or the OCR models.
Each reader gets the document's :class:`~ragstream.documents.bounds.ReadBounds` (or the limits it needs) and stops at
the first element, level, row or character past them.
"""

from __future__ import annotations

from typing import Any

from ragstream.config import RagstreamConfig
from ragstream.documents import mimes
from ragstream.documents.bounds import ReadBounds
from ragstream.documents.html_text import html_to_text
from ragstream.documents.markdown_text import first_h1, split_front_matter
from ragstream.documents.ocr import ocr_installed, require_ocr
from ragstream.documents.office.text import Extracted
from ragstream.documents.pdf_text import extract_pdf
from ragstream.errors import EmptyDocumentError
from ragstream.models import Page


def extract(data: bytes, name: str, mime: str, config: RagstreamConfig) -> tuple[Extracted, dict[str, Any]]:
    """The document's pages, title and warnings, and metadata found in the file (Markdown front matter)."""
    limits = config.limits
    if mime == mimes.PDF:
        return _pdf(data, name, config), {}
    if mime in mimes.IMAGES:
        require_ocr(name, f"an image ({mime})", enabled=config.ocr.enabled)
        from ragstream.documents.ocr.images import ocr_image

        pages, warnings = ocr_image(data, name, config.ocr)
        return Extracted(pages=tuple(pages), warnings=warnings), {}
    if mime == mimes.DOCX:
        from ragstream.documents.office.docx import read_docx

        return read_docx(data, ReadBounds(name, limits)), {}
    if mime == mimes.PPTX:
        from ragstream.documents.office.pptx import read_pptx

        return read_pptx(data, ReadBounds(name, limits, seconds=limits.max_read_seconds)), {}
    if mime == mimes.XLSX:
        from ragstream.documents.office.xlsx import read_xlsx

        return read_xlsx(data, name, max_rows=limits.max_table_rows, max_columns=limits.max_table_columns,
                         hidden_sheets=config.ingest.read_hidden_sheets, max_chars=limits.max_document_chars), {}
    if mime in mimes.TABULAR:
        from ragstream.documents.office.delimited import read_delimited

        return read_delimited(data, name, mime, max_rows=limits.max_table_rows, max_columns=limits.max_table_columns,
                              max_chars=limits.max_document_chars), {}
    if mime == mimes.EPUB:
        from ragstream.documents.office.epub import read_epub

        return read_epub(data, ReadBounds(name, limits, seconds=limits.max_read_seconds)), {}
    if mime in (mimes.ODT, mimes.ODP, mimes.ODS):
        from ragstream.documents.office.odf import read_odf

        return read_odf(data, ReadBounds(name, limits), mime, max_rows=limits.max_table_rows,
                        max_columns=limits.max_table_columns, hidden_sheets=config.ingest.read_hidden_sheets), {}
    return _text(data, name, mime, config)


def _pdf(data: bytes, name: str, config: RagstreamConfig) -> Extracted:
    """The PDF's text layer, and its pages without one read by OCR (when the ocr extra is installed)."""
    ocr = config.ocr.enabled and ocr_installed()
    pdf = extract_pdf(data, name, title_size_ratio=config.ingest.pdf_title_size_ratio,
                      max_pages=config.limits.max_pdf_pages, max_chars=config.limits.max_document_chars,
                      allow_blank=True, structure=config.pdf)
    if not pdf.blank:
        return Extracted(pages=pdf.pages, title=pdf.title, warnings=pdf.warnings)
    if not ocr:
        if not pdf.pages:
            require_ocr(name, f"a PDF without a text layer ({len(pdf.blank)} scanned page(s))", enabled=config.ocr.enabled)
        unread = (f"{name}: {len(pdf.blank)} page(s) without a text layer were not read: OCR is "
                  f"{'not installed' if config.ocr.enabled else 'turned off (ocr.enabled)'}",)
        return Extracted(pages=pdf.pages, title=pdf.title, warnings=(*pdf.warnings, *unread))
    from ragstream.documents.ocr.pdf_pages import ocr_pdf_pages

    scanned, warnings = ocr_pdf_pages(data, pdf.blank, name, config.ocr)
    pages = tuple(sorted((*pdf.pages, *scanned), key=lambda page: page.number or 0))
    title = pdf.title or (_first_line(scanned[0].text) if scanned and not pdf.pages else None)
    if not pages:
        raise EmptyDocumentError(f"{name}: the PDF has no text layer and OCR found no text in it")
    return Extracted(pages=pages, title=title, warnings=(*pdf.warnings, *warnings))


def _text(data: bytes, name: str, mime: str, config: RagstreamConfig) -> tuple[Extracted, dict[str, Any]]:
    """A text format: its text, title (if the content has one) and found metadata."""
    text = data.decode("utf-8-sig").replace("\r\n", "\n").replace("\r", "\n")
    title: str | None = None
    found: dict[str, Any] = {}
    if mime == mimes.HTML:
        page = html_to_text(text, ReadBounds(name, config.limits, seconds=config.limits.max_read_seconds))
        text, title = page.text, page.title
    elif mime == mimes.MARKDOWN:
        text, found = split_front_matter(text)
        front_title = found.get("title")
        title = str(front_title) if front_title is not None else first_h1(text)
    return Extracted(pages=(Page(number=None, text=text),), title=title), found


def _first_line(text: str) -> str | None:
    line = text.strip().split("\n", 1)[0].strip()
    return line or None
