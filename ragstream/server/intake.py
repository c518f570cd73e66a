"""One uploaded file -> stored, sniffed, parsed, de-duplicated and ingested (seed 004).

A failure of one file is reported in its result and never stops the others. The stored copy is
kept only for a file that became (or replaced) a live document.
"""

from __future__ import annotations

from typing import BinaryIO

from ragstream import metrics
from ragstream.documents.loaders import load_bytes
from ragstream.errors import DocumentError, InsufficientStorageError, RagstreamError
from ragstream.models import IngestReport, LoadedDocument
from ragstream.server.schemas import ErrorDetail, UploadedFile
from ragstream.server.state import ServerState
from ragstream.server.uploads import StoredUpload

UPLOAD_SOURCE_SCHEME = "upload://"
UPLOAD_PATH_KEY = "upload_path"
"""Document metadata key holding the stored file's path relative to the upload directory."""


def ingest_upload(state: ServerState, source: BinaryIO, filename: str, user_id: str) -> UploadedFile:
    """Store, load and ingest one uploaded file; its outcome, never an exception for bad input."""
    pending = store_upload(state, source, filename, user_id)
    return ingest_stored(state, pending, user_id) if pending.status == "pending" else pending


def store_upload(state: ServerState, source: BinaryIO, filename: str, user_id: str) -> UploadedFile:
    """Store one uploaded file: ``pending`` (stored, to ingest) or ``failed`` (nothing kept)."""
    try:
        stored = state.uploads.save(source, user_id, filename)
    except (DocumentError, InsufficientStorageError) as error:
        metrics.record_failed_file()
        return _failed(filename, error)
    return UploadedFile(filename=filename, status="pending", sha256=stored.sha256, size_bytes=stored.size_bytes,
                        stored_as=stored.relative)


def ingest_stored(state: ServerState, pending: UploadedFile, user_id: str) -> UploadedFile:
    """Load and ingest a stored upload (``pending``); its outcome, never an exception for bad input."""
    assert pending.stored_as is not None and pending.sha256 is not None and pending.size_bytes is not None
    stored = StoredUpload(path=state.uploads.root / pending.stored_as, relative=pending.stored_as,
                          size_bytes=pending.size_bytes, sha256=pending.sha256)
    result = pending.model_copy(update={"status": "failed"})
    try:
        doc = _load(state, stored, pending.filename, user_id)
        return _ingest(state, doc, stored, result)
    except RagstreamError as error:  # raised before an ingest job could count it
        metrics.record_failed_file()
        state.uploads.remove(stored.relative)
        return result.model_copy(update={"error": ErrorDetail(**error.to_dict()), "stored_as": None})


def _load(state: ServerState, stored: StoredUpload, filename: str, user_id: str) -> LoadedDocument:
    try:
        data = stored.path.read_bytes()
    except OSError as error:
        raise DocumentError(f"{filename}: the stored upload cannot be read: {error.strerror or error}") from None
    metadata = {"filename": filename, "user_id": user_id, UPLOAD_PATH_KEY: stored.relative}
    return load_bytes(data, filename, state.rs.config, source=f"{UPLOAD_SOURCE_SCHEME}{user_id}/{filename}",
                      metadata=metadata)


def _ingest(state: ServerState, doc: LoadedDocument, stored: StoredUpload, result: UploadedFile) -> UploadedFile:
    with state.documents.hold(doc.document_id):
        same = [r.document_id for r in state.rs.catalog.find_by_checksum(stored.sha256)]
        result = result.model_copy(update={"document_id": doc.document_id, "duplicate_of": same})
        if same and state.config.dedupe_uploads:
            state.uploads.remove(stored.relative)
            return result.model_copy(update={"status": "duplicate", "document_id": same[0], "stored_as": None})
        previous = _previous_upload(state, doc.document_id)
        report = state.rs.ingest_documents([doc])
        return _outcome(state, report, stored, previous, result)


def _outcome(state: ServerState, report: IngestReport, stored: StoredUpload, previous: str | None,
             result: UploadedFile) -> UploadedFile:
    if report.failures:
        failure = report.failures[0]
        state.uploads.remove(stored.relative)
        error = ErrorDetail(code=failure.code, type=failure.error_type, message=failure.message)
        return result.model_copy(update={"error": error, "stored_as": None})
    if report.documents_skipped:
        state.uploads.remove(stored.relative)
        return result.model_copy(update={"status": "unchanged", "stored_as": previous})
    if previous and previous != stored.relative:
        state.uploads.remove(previous)
    return result.model_copy(update={"status": "ingested", "chunks": report.chunks_written})


def _previous_upload(state: ServerState, document_id: str) -> str | None:
    """The stored file of the document this upload replaces, if any."""
    try:
        return state.rs.document(document_id).metadata.get(UPLOAD_PATH_KEY)
    except RagstreamError:
        return None


def _failed(filename: str, error: RagstreamError) -> UploadedFile:
    return UploadedFile(filename=filename, status="failed", error=ErrorDetail(**error.to_dict()))
