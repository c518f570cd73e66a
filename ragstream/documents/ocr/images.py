"""Images (PNG, JPEG, TIFF) read by OCR; each frame of a multi-page TIFF is a page."""

from __future__ import annotations

import io
import warnings

from PIL import Image, UnidentifiedImageError

from ragstream.config import OcrConfig
from ragstream.documents.ocr.budget import OcrBudget
from ragstream.documents.ocr.engine import recognise
from ragstream.errors import CorruptDocumentError, DocumentTooLargeError
from ragstream.models import Page

_OCR_MODES = ("RGB", "L")


def ocr_image(data: bytes, name: str, config: OcrConfig) -> tuple[list[Page], tuple[str, ...]]:
    """The image's text, one page per frame (numbered when there are several), and warnings for frames left unread.

    The size is checked from the header before any pixel is decoded (``ocr.max_image_pixels``).
    """
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", Image.DecompressionBombWarning)
            image = Image.open(io.BytesIO(data))
            frames = getattr(image, "n_frames", 1)
            budget = OcrBudget(config, name)
            pages: list[Page] = []
            for index in budget.pages(range(1, frames + 1)):
                image.seek(index - 1)
                width, height = image.size
                if width * height > config.max_image_pixels:
                    raise DocumentTooLargeError(f"{name}: the image has {width}x{height} pixels, more than "
                                                f"ocr.max_image_pixels ({config.max_image_pixels})")
                frame = image.convert("L") if image.mode not in _OCR_MODES else image.copy()
                text = recognise(frame, config.min_confidence).text
                if text.strip():
                    pages.append(Page(number=index if frames > 1 else None, text=text, ocr=True))
    except DocumentTooLargeError:
        raise
    except (Image.DecompressionBombError, Image.DecompressionBombWarning) as exc:
        # PIL's own bound on the header's size (about 89 million pixels to warn, twice that to refuse), checked as
        # the image is opened: past the default ocr.max_image_pixels too, so it is the same refusal.
        raise DocumentTooLargeError(f"{name}: the image is too large to decode ({exc}); ocr.max_image_pixels is "
                                    f"{config.max_image_pixels}") from exc
    except (UnidentifiedImageError, OSError, ValueError, SyntaxError) as exc:  # PIL: SyntaxError for malformed headers
        raise CorruptDocumentError(f"{name}: cannot decode the image: {exc}") from exc
    return pages, budget.warnings()


