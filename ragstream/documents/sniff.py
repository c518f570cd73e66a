"""Decide a file's type from its bytes, not its name (docs/formats.md)."""

from __future__ import annotations

import re
from pathlib import PurePath

import puremagic

from ragstream.documents import mimes
from ragstream.documents.mimes import CSV, HTML, MARKDOWN, PDF, PLAIN, TSV
from ragstream.documents.office import archive, ole
from ragstream.errors import UnsupportedFileTypeError

__all__ = ["CSV", "HTML", "MARKDOWN", "PDF", "PLAIN", "TSV", "sniff_mime"]

_PDF_MAGIC = b"%PDF-"
# PDF readers accept a little junk before the header; so do we, for content that is not text.
_PDF_HEADER_WINDOW = 1024
# How much of a text file is inspected for HTML or Markdown markers.
_TEXT_SNIFF_CHARS = 4096
_UTF8_BOM = b"\xef\xbb\xbf"
# Binary signatures that happen to be valid UTF-8 without NUL bytes in their first bytes.
_BINARY_MAGICS: dict[bytes, str] = {
    b"\x89PNG\r\n\x1a\n": "PNG image",
    b"PK\x03\x04": "ZIP archive",
    b"\x7fELF": "ELF executable",
    b"GIF87a": "GIF image",
    b"GIF89a": "GIF image",
    b"\xff\xd8\xff": "JPEG image",
    b"\x1f\x8b": "gzip archive",
}
# Text formats that are not documents: their text would be code or drawing instructions, not prose.
_NOT_DOCUMENT_SUFFIXES: dict[str, str] = {
    **dict.fromkeys((".svg", ".svgz"), "SVG image"),
    **dict.fromkeys((".js", ".mjs", ".cjs", ".jsx", ".ts", ".mts", ".cts", ".tsx", ".vue", ".svelte",
                     ".py", ".pyw", ".rb", ".pl", ".php", ".lua", ".sh", ".bash", ".zsh", ".fish",
                     ".ps1", ".bat", ".cmd"), "script"),
    **dict.fromkeys((".css", ".scss", ".sass", ".less", ".styl"), "stylesheet"),
    **dict.fromkeys((".png", ".jpg", ".jpeg", ".gif", ".webp", ".bmp", ".ico", ".tif", ".tiff", ".avif", ".heic"),
                    "image"),
}
# Images read by OCR, by their signature (TIFF in either byte order).
_IMAGE_MAGICS: dict[bytes, str] = {
    b"\x89PNG\r\n\x1a\n": mimes.PNG,
    b"\xff\xd8\xff": mimes.JPEG,
    b"II*\x00": mimes.TIFF,
    b"MM\x00*": mimes.TIFF,
}
_DELIMITED_SUFFIXES = {".csv": CSV, ".tsv": TSV, ".tab": TSV}
_UTF16_BOMS = (b"\xff\xfe", b"\xfe\xff")
_MARKDOWN_SUFFIXES = frozenset({".md", ".markdown"})
_HTML_SUFFIXES = frozenset({".html", ".htm"})
_PLAIN_SUFFIXES = frozenset({".txt"})

_HTML_START = re.compile(r"\A\s*(?:<!--.*?-->\s*)*(?:<!doctype\s+html|<html[\s>])", re.IGNORECASE | re.DOTALL)
_ANY_TAG = re.compile(r"<[a-zA-Z][^>]*>")
# An SVG document: optional XML declaration, comments, processing instructions and doctype, then <svg.
_SVG_START = re.compile(
    r"\A\s*(?:<\?xml[^>]*\?>\s*)?(?:(?:<!--.*?-->|<\?.*?\?>|<!doctype\s+svg[^>]*>)\s*)*<svg[\s>/]",
    re.IGNORECASE | re.DOTALL,
)
_SHEBANG = "#!"
_MARKDOWN_MARKER = re.compile(r"^(?: {0,3}#{1,6}[ \t]+\S|\s*(?:`{3,}|~{3,}))", re.MULTILINE)


def sniff_mime(data: bytes, filename: str) -> str:
    """Return the MIME type of ``data`` (one of :mod:`ragstream.documents.mimes`).

    The content decides. A zip is a document by what it holds: an OOXML package by the main part's
    content type (a .docx holding a workbook is a workbook), OpenDocument and EPUB by their
    ``mimetype`` entry. An OLE compound file is refused: ``encrypted_document`` for a password-
    protected Office file, else as a legacy format. PNG, JPEG and TIFF are images (read by OCR).
    ``filename`` only separates Markdown from plain text, marks a text file as CSV/TSV (which may
    be in any encoding) and lets an ``.html`` fragment without ``<html>`` count as HTML. Anything
    else that is not UTF-8 text raises :class:`UnsupportedFileTypeError` naming the detected type,
    and so does text that is not a document: SVG (by content or name), scripts (by name or a
    ``#!`` line), stylesheets and images by name. Call it after
    :func:`~ragstream.documents.office.archive.check_archive` for a zip.
    """
    if data.lstrip().startswith(_PDF_MAGIC):
        return PDF
    if archive.is_zip(data):
        return archive.package_kind(data, filename)
    if ole.is_ole(data):
        ole.refuse_ole(data, filename)
    image = next((mime for magic, mime in _IMAGE_MAGICS.items() if data.startswith(magic)), None)
    if image is not None:
        return image
    suffix = PurePath(filename).suffix.lower()
    if suffix in _DELIMITED_SUFFIXES and (b"\x00" not in data or data.startswith(_UTF16_BOMS)):
        return _DELIMITED_SUFFIXES[suffix]
    text = _decode_text(data)
    if text is None:
        if _PDF_MAGIC in data[:_PDF_HEADER_WINDOW]:
            return PDF
        raise _unsupported(filename, _describe_binary(data))
    head = text[:_TEXT_SNIFF_CHARS]
    not_document = _not_a_document(head, suffix)
    if not_document:
        raise _unsupported(filename, not_document)
    if _HTML_START.match(head) or (suffix in _HTML_SUFFIXES and _ANY_TAG.search(head)):
        return HTML
    if suffix in _MARKDOWN_SUFFIXES:
        return MARKDOWN
    if suffix not in _PLAIN_SUFFIXES and _MARKDOWN_MARKER.search(head):
        return MARKDOWN
    return PLAIN


def _not_a_document(head: str, suffix: str) -> str | None:
    """What a text that is not a document is (SVG image, script, stylesheet, image), or None."""
    if _SVG_START.match(head):
        return "SVG image"
    if head.lstrip("\ufeff").startswith(_SHEBANG):
        return "script"
    return _NOT_DOCUMENT_SUFFIXES.get(suffix)


def _decode_text(data: bytes) -> str | None:
    """The bytes as UTF-8 text (a BOM is allowed), or None when they are binary."""
    if any(data.startswith(magic) for magic in _BINARY_MAGICS):
        return None
    body = data[len(_UTF8_BOM):] if data.startswith(_UTF8_BOM) else data
    if b"\x00" in body:
        return None
    try:
        return body.decode("utf-8")
    except UnicodeDecodeError:
        return None


def _describe_binary(data: bytes) -> str:
    """A human name for binary content: our own signatures first, then puremagic's."""
    for magic, name in _BINARY_MAGICS.items():
        if data.startswith(magic):
            return name
    try:
        matches = puremagic.magic_string(data)
    except (puremagic.PureError, ValueError):
        return "binary data"
    best = matches[0] if matches else None
    if best is None:
        return "binary data"
    return best.name or best.mime_type or best.extension or "binary data"


def _unsupported(filename: str, detected: str) -> UnsupportedFileTypeError:
    return UnsupportedFileTypeError(
        f"{filename}: detected {detected}; ragstream reads PDF, Word, PowerPoint, Excel, OpenDocument, EPUB, "
        "CSV/TSV, HTML, Markdown and UTF-8 text documents (and PNG/JPEG/TIFF images with OCR)"
    )
