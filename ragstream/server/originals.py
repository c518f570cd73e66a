"""A document's original file, as ingested, for the document viewer (``GET /api/documents/{id}/file``).

An upload's stored copy, or the file a CLI ingest, sync or watch read (its source path), served only while its bytes
still have the checksum the live version was ingested with: a file that moved, changed or was replaced (by a link
elsewhere, a FIFO) is not served, and the viewer shows the document's text instead. Only PDFs are served inline
(the viewer draws them with pdf.js); every other type goes as an attachment of ``application/octet-stream``, so no
HTML or SVG of a user's ever runs as a page of this origin. Every answer carries ``nosniff`` and a CSP that lets
nothing load or run.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from pathlib import Path, PurePath
from urllib.parse import quote

from fastapi.responses import Response

from ragstream.api_runtime import open_document
from ragstream.api_writes import stored_upload
from ragstream.errors import DocumentNotFoundError, RagstreamError
from ragstream.models import DocumentRecord
from ragstream.server.state import ServerState

PDF_MIME = "application/pdf"
DOWNLOAD_MIME = "application/octet-stream"
FILE_HEADERS = {
    "X-Content-Type-Options": "nosniff",
    "Content-Security-Policy": "default-src 'none'; frame-ancestors 'none'; sandbox",
    "Cross-Origin-Resource-Policy": "same-origin",
    "Cache-Control": "private, no-store",
}
"""Headers of every original served: never sniffed, nothing in it loads or runs, not embeddable, not cached."""


class OriginalUnavailableError(DocumentNotFoundError):
    """The caller may read the document, but its original file is not there as it was ingested (moved, changed or
    deleted since, or the document never had one: MCP text, an older upload): 404, and the viewer shows the text."""

    code = "original_unavailable"


@dataclass(frozen=True)
class Original:
    """A document's original bytes, checked against its checksum, and the name to give them."""

    data: bytes
    filename: str
    inline: bool


def original_path(state: ServerState, record: DocumentRecord) -> Path | None:
    """Where ``record``'s original file should be: its stored upload, else its source when that is a local path
    (a CLI ingest, sync or watch); None for a source that is no file (MCP text, ``upload://`` without a stored copy)."""
    stored = stored_upload(record)
    if stored is not None:
        return state.uploads.root / stored
    if "://" in record.source or not os.path.isabs(record.source):
        return None
    return Path(record.source)


def read_original(state: ServerState, record: DocumentRecord) -> Original:
    """``record``'s original file, read whole (at most ``limits.max_file_bytes``) and checked against its checksum;
    raises :class:`OriginalUnavailableError` when it is not there as ingested."""
    path = original_path(state, record)
    if path is None:
        raise OriginalUnavailableError(f"document {record.document_id} has no original file (its text came "
                                       "without one)")
    limit = state.rs.config.limits.max_file_bytes
    try:
        handle, _ = open_document(path, follow="always")  # a regular file (no FIFO waited on, no device)
        with handle:
            data = handle.read(limit + 1)
    except (OSError, RagstreamError):
        raise OriginalUnavailableError(f"the original file of document {record.document_id} is no longer where it "
                                       "was ingested from") from None
    if hashlib.sha256(data).hexdigest() != record.checksum:
        raise OriginalUnavailableError(f"the original file of document {record.document_id} changed since it was "
                                       "ingested; reingest it to view it") from None
    name = record.metadata.get("filename")
    filename = name if isinstance(name, str) and name else PurePath(path).name
    return Original(data=data, filename=filename, inline=record.mime == PDF_MIME)


def original_response(original: Original) -> Response:
    """The original as its HTTP answer: a PDF inline, anything else an attachment of octet-stream."""
    disposition = "inline" if original.inline else "attachment"
    headers = {**FILE_HEADERS,
               "Content-Disposition": f"{disposition}; filename*=UTF-8''{quote(original.filename, safe='')}"}
    return Response(original.data, media_type=PDF_MIME if original.inline else DOWNLOAD_MIME, headers=headers)
