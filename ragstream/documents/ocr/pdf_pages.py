"""OCR of the PDF pages that have no text layer: pypdfium2 renders each at ``ocr.render_dpi``."""

from __future__ import annotations

from collections.abc import Sequence

import pypdfium2

from ragstream.config import OcrConfig
from ragstream.documents.ocr.budget import OcrBudget
from ragstream.documents.ocr.engine import recognise
from ragstream.errors import CorruptDocumentError
from ragstream.models import Page

_POINTS_PER_INCH = 72


def ocr_pdf_pages(data: bytes, numbers: Sequence[int], name: str, config: OcrConfig) -> tuple[list[Page], tuple[str, ...]]:
    """The pages ``numbers`` (1-based) read by OCR, marked ``ocr``, and warnings for pages left unread.

    A page whose rendering would pass ``ocr.max_image_pixels`` is left unread with a warning.
    """
    budget = OcrBudget(config, name)
    scale = config.render_dpi / _POINTS_PER_INCH
    pages: list[Page] = []
    too_big: list[int] = []
    try:
        document = pypdfium2.PdfDocument(data)
    except pypdfium2.PdfiumError as exc:
        raise CorruptDocumentError(f"{name}: PDFium cannot open the PDF to OCR it: {exc}") from exc
    try:
        for number in budget.pages(numbers):
            page = document[number - 1]
            try:
                width, height = page.get_size()
                if width * scale * height * scale > config.max_image_pixels:
                    too_big.append(number)
                    continue
                image = page.render(scale=scale, grayscale=True).to_pil()
            finally:
                page.close()
            text = recognise(image, config.min_confidence).text
            if text.strip():
                pages.append(Page(number=number, text=text, ocr=True))
    finally:
        document.close()
    warnings = budget.warnings()
    if too_big:
        warnings += (f"{name}: {len(too_big)} scanned page(s) are larger than ocr.max_image_pixels at "
                     f"{config.render_dpi} dpi and were not read",)
    return pages, warnings
