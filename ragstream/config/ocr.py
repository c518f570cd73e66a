"""``ocr``: reading scanned PDF pages and images (docs/formats.md)."""

from __future__ import annotations

from pydantic import Field

from ragstream.config.base import ConfigSection


class OcrConfig(ConfigSection):
    """Reading scanned PDF pages and images with the packaged PP-OCRv4 models (the ``ocr`` extra)."""

    enabled: bool = Field(
        True, description="OCR PDF pages that have no text layer, and images, when the ocr extra is installed; "
        "false: such pages are skipped and images refused.")
    min_confidence: float = Field(
        0.5, ge=0.0, le=1.0, description="Recognised text lines scoring below this (0-1) are dropped.")
    max_pages: int = Field(
        100, ge=1, description="Pages of one PDF read by OCR at most; the pages after them are left unread and the "
        "ingest report says how many (a warning).")
    max_seconds_per_document: float = Field(
        300.0, gt=0, description="Seconds of OCR per document at most; the pages not read by then are left unread "
        "with a warning. A page already started finishes, and the first page is always read.")
    render_dpi: int = Field(
        200, ge=50, le=600, description="Resolution (dots per inch) a scanned PDF page is rendered at for OCR (below "
        "200 the recognition model starts to run words together).")
    max_image_pixels: int = Field(
        40_000_000, ge=1, description="Images (or rendered pages) with more pixels are refused (document_too_large) "
        "before they are decoded.")
