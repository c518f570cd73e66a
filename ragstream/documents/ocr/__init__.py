"""OCR of scanned PDF pages and images with the PP-OCRv4 ONNX models that rapidocr-onnxruntime ships.

The models come inside the ``rapidocr-onnxruntime`` wheel (the ``ocr`` extra), nothing is downloaded;
pypdfium2 renders PDF pages. Without the extra, :func:`require_ocr` raises
:class:`~ragstream.errors.OcrUnavailableError` naming it.
"""

from __future__ import annotations

import importlib.util

from ragstream.errors import OcrUnavailableError

OCR_EXTRA = "ragstream[ocr]"
_MODULES = ("rapidocr_onnxruntime", "pypdfium2", "PIL")


def ocr_installed() -> bool:
    """True when the ``ocr`` extra's packages can be imported."""
    try:
        return all(importlib.util.find_spec(module) is not None for module in _MODULES)
    except (ImportError, ValueError):  # a module set to None in sys.modules, or without a spec
        return False


def require_ocr(name: str, what: str, *, enabled: bool) -> None:
    """Raise :class:`OcrUnavailableError` (naming the extra) unless OCR is enabled and installed."""
    if not enabled:
        raise OcrUnavailableError(f"{name}: {what} needs OCR, which is turned off (ocr.enabled = false)")
    if not ocr_installed():
        raise OcrUnavailableError(f"{name}: {what} needs OCR; install it with: pip install '{OCR_EXTRA}'")
