"""The MIME types ragstream reads, and which of them the loaders turn into Markdown-flavoured text."""

from __future__ import annotations

PDF = "application/pdf"
HTML = "text/html"
MARKDOWN = "text/markdown"
PLAIN = "text/plain"
CSV = "text/csv"
TSV = "text/tab-separated-values"
DOCX = "application/vnd.openxmlformats-officedocument.wordprocessingml.document"
PPTX = "application/vnd.openxmlformats-officedocument.presentationml.presentation"
XLSX = "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"
ODT = "application/vnd.oasis.opendocument.text"
ODP = "application/vnd.oasis.opendocument.presentation"
ODS = "application/vnd.oasis.opendocument.spreadsheet"
EPUB = "application/epub+zip"
PNG = "image/png"
JPEG = "image/jpeg"
TIFF = "image/tiff"

IMAGES = frozenset({PNG, JPEG, TIFF})
OFFICE = frozenset({DOCX, PPTX, XLSX, ODT, ODP, ODS})
TABULAR = frozenset({CSV, TSV})
STRUCTURED = frozenset({MARKDOWN, HTML, EPUB, PDF, *OFFICE, *TABULAR})
"""Loaded as Markdown-flavoured text (``#`` headings, Markdown tables): the ``auto`` chunking strategy cuts
them by heading and repeats a long table's header row in each of its chunks."""
SECTIONS_SPAN_PAGES = frozenset({PDF})
"""Paged formats whose sections run on across pages: a page's chunks stand under the headings of the pages before
(a slide, an EPUB chapter or a sheet starts afresh)."""
