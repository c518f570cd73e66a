"""Load a file (or uploaded bytes) into a :class:`LoadedDocument` (seeds 003, 004)."""

from __future__ import annotations

import hashlib
from pathlib import Path, PurePath
from typing import Any
from uuid import NAMESPACE_URL, uuid5

from ragstream.config import RagstreamConfig
from ragstream.documents import sniff
from ragstream.documents.html_text import html_to_text
from ragstream.documents.markdown_text import first_h1, split_front_matter
from ragstream.documents.pdf_text import extract_pdf
from ragstream.errors import DocumentError, DocumentTooLargeError, EmptyDocumentError, FileTooLargeError
from ragstream.models import LoadedDocument, Page


def default_document_id(source: str) -> str:
    """The stable id of the document at ``source``: a UUID5 of ``"ragstream:" + source``."""
    return str(uuid5(NAMESPACE_URL, "ragstream:" + source))


def load_file(
    path: Path,
    config: RagstreamConfig,
    *,
    document_id: str | None = None,
    metadata: dict[str, Any] | None = None,
) -> LoadedDocument:
    """Load the file at ``path``; its source is the resolved absolute path.

    The size limit is checked on the file's size before anything is read.
    Raises a :class:`DocumentError` subclass for any file that cannot be loaded.
    """
    path = Path(path)
    limit = config.limits.max_file_bytes
    try:
        size = path.stat().st_size
        if size > limit:
            raise _too_large(path.name, size, limit)
        with path.open("rb") as handle:
            data = handle.read(limit + 1)
    except OSError as exc:
        raise DocumentError(f"{path}: cannot read file: {exc.strerror or exc}") from exc
    return load_bytes(
        data, path.name, config, source=str(path.resolve()), document_id=document_id, metadata=metadata
    )


def load_bytes(
    data: bytes,
    filename: str,
    config: RagstreamConfig,
    *,
    source: str,
    document_id: str | None = None,
    metadata: dict[str, Any] | None = None,
) -> LoadedDocument:
    """Load uploaded ``data``; the type is sniffed from the content, ``filename`` names it.

    ``metadata`` (user-given) wins over metadata found in the file (Markdown front matter).
    """
    limit = config.limits.max_file_bytes
    if len(data) > limit:
        raise _too_large(filename, len(data), limit)
    mime = sniff.sniff_mime(data, filename)
    stem = PurePath(filename).stem or filename
    found: dict[str, Any] = {}
    if mime == sniff.PDF:
        pdf = extract_pdf(data, filename, title_size_ratio=config.ingest.pdf_title_size_ratio,
                          max_pages=config.limits.max_pdf_pages, max_chars=config.limits.max_document_chars)
        pages, title = pdf.pages, pdf.title
    else:
        text, title, found = _read_text(data, mime)
        if len(text) > config.limits.max_document_chars:
            raise DocumentTooLargeError(f"{filename}: {len(text)} characters of text exceed the limit of "
                                        f"{config.limits.max_document_chars} (limits.max_document_chars)")
        if not text.strip():
            raise EmptyDocumentError(f"{filename}: the file has no text")
        pages = (Page(number=None, text=text),)
    return LoadedDocument(
        document_id=document_id or default_document_id(source),
        source=source,
        title=title or stem,
        mime=mime,
        checksum=hashlib.sha256(data).hexdigest(),
        size_bytes=len(data),
        pages=pages,
        metadata={**found, **(metadata or {})},
    )


def _read_text(data: bytes, mime: str) -> tuple[str, str | None, dict[str, Any]]:
    """Decode a text format; return its text, title (if the content has one) and found metadata."""
    text = data.decode("utf-8-sig").replace("\r\n", "\n").replace("\r", "\n")
    if mime == sniff.HTML:
        page = html_to_text(text)
        return page.text, page.title, {}
    if mime == sniff.MARKDOWN:
        body, front_matter = split_front_matter(text)
        title = front_matter.get("title")
        return body, str(title) if title is not None else first_h1(body), front_matter
    return text, None, {}


def _too_large(name: str, size: int, limit: int) -> FileTooLargeError:
    return FileTooLargeError(f"{name}: {size} bytes exceeds the limit of {limit} bytes")
