"""Decide a file's type from its bytes, not its name (seed 004: MIME sniffing)."""

from __future__ import annotations

import re
from pathlib import PurePath

import puremagic

from ragstream.errors import UnsupportedFileTypeError

PDF = "application/pdf"
HTML = "text/html"
MARKDOWN = "text/markdown"
PLAIN = "text/plain"

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
    """Return the MIME type of ``data``: PDF, HTML, Markdown or plain text.

    The content decides; ``filename`` only separates Markdown from plain text (and lets an
    ``.html`` fragment without ``<html>`` count as HTML). Anything that is not PDF and not
    UTF-8 text raises :class:`UnsupportedFileTypeError` naming the detected type, and so does
    text that is not a document: SVG (by content or name), scripts (by name or a ``#!`` line),
    stylesheets and images by name.
    """
    if data.lstrip().startswith(_PDF_MAGIC):
        return PDF
    text = _decode_text(data)
    if text is None:
        if _PDF_MAGIC in data[:_PDF_HEADER_WINDOW]:
            return PDF
        raise _unsupported(filename, _describe_binary(data))
    head = text[:_TEXT_SNIFF_CHARS]
    suffix = PurePath(filename).suffix.lower()
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
        f"{filename}: detected {detected}; only PDF, HTML, Markdown and UTF-8 text documents are supported"
    )
