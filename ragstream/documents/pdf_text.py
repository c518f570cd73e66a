"""Text extraction from PDF bytes with pypdf, one page at a time (seed 004)."""

from __future__ import annotations

import io
from dataclasses import dataclass

from pypdf import PdfReader
from pypdf.errors import DependencyError

from ragstream.errors import CorruptDocumentError, EmptyDocumentError, EncryptedDocumentError
from ragstream.models import Page


@dataclass(frozen=True)
class PdfText:
    """The pages that have text (1-based numbers kept) and the metadata title, if any."""

    pages: tuple[Page, ...]
    title: str | None


def extract_pdf(data: bytes, name: str) -> PdfText:
    """Read every page's text; pages without text are skipped but keep their numbers.

    Raises :class:`EncryptedDocumentError` when an empty password does not open the file,
    :class:`CorruptDocumentError` when pypdf cannot parse it and :class:`EmptyDocumentError`
    when no page has text (e.g. a scan without a text layer).
    """
    reader = _open(data, name)
    try:
        pages = tuple(
            Page(number=number, text=text)
            for number, page in enumerate(reader.pages, start=1)
            if (text := (page.extract_text() or "").strip())
        )
        title = (reader.metadata.title or "").strip() if reader.metadata else ""
    # pypdf raises many exception types (KeyError, ValueError, zlib.error, ...) on damaged files.
    except Exception as exc:
        raise CorruptDocumentError(f"{name}: cannot read PDF: {exc}") from exc
    if not pages:
        raise EmptyDocumentError(f"{name}: the PDF has no extractable text (scanned images?)")
    return PdfText(pages=pages, title=title or None)


def _open(data: bytes, name: str) -> PdfReader:
    """Parse the PDF structure and unlock it with the empty password if it is encrypted."""
    try:
        reader = PdfReader(io.BytesIO(data))
    except Exception as exc:
        raise CorruptDocumentError(f"{name}: cannot parse PDF: {exc}") from exc
    if not reader.is_encrypted:
        return reader
    try:
        unlocked = reader.decrypt("")
    except DependencyError as exc:
        raise EncryptedDocumentError(f"{name}: encrypted PDF needs an extra package to open: {exc}") from exc
    except Exception as exc:
        raise CorruptDocumentError(f"{name}: cannot decrypt PDF: {exc}") from exc
    if not unlocked:
        raise EncryptedDocumentError(f"{name}: the PDF is password-protected")
    return reader
