"""Load a file (or uploaded bytes) into a :class:`LoadedDocument`: its type sniffed from the content, its text and
pages read by the format's reader (docs/formats.md)."""

from __future__ import annotations

import hashlib
import logging
import os
from pathlib import Path, PurePath
from typing import Any
from uuid import NAMESPACE_URL, uuid5

from ragstream.config import RagstreamConfig
from ragstream.documents import sniff
from ragstream.documents.file_access import open_document
from ragstream.documents.office import archive
from ragstream.documents.office.text import Extracted
from ragstream.documents.readers import extract
from ragstream.errors import (
    CorruptDocumentError,
    DocumentError,
    DocumentTooLargeError,
    EmptyDocumentError,
    FileTooLargeError,
)
from ragstream.models import LoadedDocument

logger = logging.getLogger("ragstream.documents")


def default_document_id(source: str) -> str:
    """The stable id of the document at ``source``: a UUID5 of ``"ragstream:" + source``."""
    return str(uuid5(NAMESPACE_URL, "ragstream:" + source))


def load_file(
    path: Path,
    config: RagstreamConfig,
    *,
    document_id: str | None = None,
    metadata: dict[str, Any] | None = None,
    root: str | None = None,
) -> LoadedDocument:
    """Load the file at ``path``; its source is the resolved absolute path.

    ``root``: the resolved folder the file was taken from; the open checks the file is still inside it
    (``ingest.follow_symlinks``; None: a file named on its own, read wherever it leads). The size limit is
    checked on the file's size before anything is read.
    Raises a :class:`DocumentError` subclass for any file that cannot be loaded.
    """
    path = Path(path)
    limit = config.limits.max_file_bytes
    try:
        handle, source = open_document(path, root=root, follow=config.ingest.follow_symlinks)
        with handle:
            size = os.fstat(handle.fileno()).st_size
            if size > limit:
                raise _too_large(path.name, size, limit)
            data = handle.read(limit + 1)
    except OSError as exc:
        raise DocumentError(f"{path}: cannot read file: {exc.strerror or exc}") from exc
    return load_bytes(data, path.name, config, source=source, document_id=document_id, metadata=metadata)


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

    A zip (office documents, EPUB) passes the zip-bomb bound (``limits.max_archive_bytes``,
    ``limits.max_archive_entries``) before anything is sniffed or decompressed.
    ``metadata`` (user-given) wins over metadata found in the file (Markdown front matter).
    Whatever a reader raises becomes a :class:`DocumentError` of this file (see :func:`_read`).
    """
    limits = config.limits
    if len(data) > limits.max_file_bytes:
        raise _too_large(filename, len(data), limits.max_file_bytes)
    mime, (extracted, found) = _read(data, filename, config)
    if extracted.chars > limits.max_document_chars:
        raise DocumentTooLargeError(f"{filename}: {extracted.chars} characters of text exceed the limit of "
                                    f"{limits.max_document_chars} (limits.max_document_chars)")
    if not extracted.has_text:
        raise EmptyDocumentError(f"{filename}: the file has no text")
    stem = PurePath(filename).stem or filename
    return LoadedDocument(
        document_id=document_id or default_document_id(source),
        source=source,
        title=extracted.title or stem,
        mime=mime,
        checksum=hashlib.sha256(data).hexdigest(),
        size_bytes=len(data),
        pages=tuple(page for page in extracted.pages if page.text.strip()),
        metadata={**found, **(metadata or {})},
        warnings=extracted.warnings,
    )


def _read(data: bytes, filename: str, config: RagstreamConfig) -> tuple[str, tuple[Extracted, dict[str, Any]]]:
    """Sniff and read the file: the one place where a reader's failure becomes this file's typed error.

    A :class:`DocumentError` passes as it is. Anything else a reader or its library raises (a RecursionError, a
    zlib.error, a KeyError of a damaged part, a bug of ours) is logged at ERROR with its traceback, so it is seen and
    fixed, and becomes ``corrupt_document`` (``document_too_large`` for a RecursionError or MemoryError): one bad file
    never aborts a batch or fails a request with a 500.
    """
    limits = config.limits
    try:
        if archive.is_zip(data):
            archive.check_archive(data, filename, max_bytes=limits.max_archive_bytes,
                                  max_entries=limits.max_archive_entries)
        mime = sniff.sniff_mime(data, filename)
        return mime, extract(data, filename, mime, config)
    except DocumentError:
        raise
    except (RecursionError, MemoryError) as exc:
        logger.error("reading %s ran out of stack or memory", filename, exc_info=True)
        raise DocumentTooLargeError(f"{filename}: the file is too large or too deeply nested to read "
                                    f"({type(exc).__name__})") from exc
    except Exception as exc:
        logger.error("reading %s failed with an unexpected %s", filename, type(exc).__name__, exc_info=True)
        raise CorruptDocumentError(f"{filename}: cannot read the file: {type(exc).__name__}: {exc}") from exc


def _too_large(name: str, size: int, limit: int) -> FileTooLargeError:
    return FileTooLargeError(f"{name}: {size} bytes exceeds the limit of {limit} bytes")
