"""One uploaded file -> stored, sniffed, parsed, de-duplicated and ingested.

A failure of one file is reported in its result and never stops the others. The stored copy is
kept only for a file that became (or replaced) a live document. An upload belongs to the user who
sent it (or is shared, when an admin asks): its document id comes from the owner's upload folder
and the file name, so one user's upload never replaces another's, and duplicate detection only
looks at the documents the uploader may see.
"""

from __future__ import annotations

import logging
from typing import BinaryIO

from ragstream import metrics
from ragstream.documents.loaders import default_document_id, load_bytes
from ragstream.errors import (
    CorruptDocumentError,
    DocumentError,
    DocumentNotFoundError,
    InsufficientStorageError,
    RagstreamError,
)
from ragstream.models import (
    COLLECTION_HOME_FOLDER,
    UPLOAD_PATH_KEY,
    DocumentRecord,
    IngestReport,
    LoadedDocument,
    public_metadata,
)
from ragstream.server.errors import InternalError
from ragstream.server.schemas import ErrorDetail, UploadedFile
from ragstream.server.state import ServerState
from ragstream.server.uploads import StoredUpload, user_folder

logger = logging.getLogger("ragstream.server")

UPLOAD_SOURCE_SCHEME = "upload://"
LEGACY_PRIVATE_KEYS = ("upload_path", "user_id")
"""Metadata keys uploads of earlier versions stored in the open; never shown over HTTP."""


def upload_folder(owner: str | None, collection: str | None = None) -> str:
    """The folder of an upload (and of its document id): its owner's, or, for one into a collection, the
    collection's (one collection's upload never replaces another's document)."""
    return user_folder(owner) if collection is None else COLLECTION_HOME_FOLDER.format(collection_id=collection)


def store_upload(state: ServerState, source: BinaryIO, filename: str, owner: str | None,
                 collection: str | None = None) -> UploadedFile:
    """Store one file uploaded for ``owner``: ``pending`` (stored, to ingest) or ``failed`` (nothing kept)."""
    try:
        stored = state.uploads.save(source, upload_folder(owner, collection), filename)
    except (DocumentError, InsufficientStorageError) as error:
        metrics.record_failed_file()
        return _failed(filename, error)
    return UploadedFile(filename=filename, status="pending", sha256=stored.sha256, size_bytes=stored.size_bytes,
                        stored_as=stored.relative)


def ingest_stored(state: ServerState, pending: UploadedFile, user: str, owner: str | None,
                  collection: str | None = None) -> UploadedFile:
    """Load and ingest a stored upload (``pending``) of ``user``'s for ``owner``; its outcome, never an
    exception: whatever reading or ingesting the file raises fails this file alone (a reader's unexpected error as
    ``corrupt_document``, an unexpected error after reading as ``internal_error``), and its stored copy goes unless
    a live document holds it."""
    assert pending.stored_as is not None and pending.sha256 is not None and pending.size_bytes is not None
    stored = StoredUpload(path=state.uploads.root / pending.stored_as, relative=pending.stored_as,
                          size_bytes=pending.size_bytes, sha256=pending.sha256)
    result = pending.model_copy(update={"status": "failed"})
    document_id = default_document_id(f"{UPLOAD_SOURCE_SCHEME}{upload_folder(owner, collection)}/{pending.filename}")
    try:
        doc = _load(state, stored, pending.filename, upload_folder(owner, collection), owner, collection)
    except Exception as error:  # a reader's bug or a hostile file: this file fails, the batch goes on
        return _refused(state, result, stored, document_id, _unreadable(pending.filename, error))
    try:
        return _ingest(state, doc, stored, result, user)
    except Exception as error:  # raised before an ingest job could count it
        return _refused(state, result, stored, document_id, _unexpected(pending.filename, error))


def _unreadable(filename: str, error: Exception) -> RagstreamError:
    """The typed error of a file whose reading raised ``error``: itself when typed, else ``corrupt_document``."""
    if isinstance(error, RagstreamError):
        return error
    logger.error("%s: reading the upload raised %s", filename, type(error).__name__, exc_info=error)
    return CorruptDocumentError(f"{filename}: the file cannot be read ({type(error).__name__}); it is damaged or "
                                "built in a way ragstream does not read")


def _unexpected(filename: str, error: Exception) -> RagstreamError:
    """The typed error of a file whose ingest raised ``error`` after it was read: itself when typed, else an
    internal error (a bug of ours, in the server log)."""
    if isinstance(error, RagstreamError):
        return error
    logger.error("%s: ingesting the upload raised %s", filename, type(error).__name__, exc_info=error)
    return InternalError(f"{filename}: the file could not be ingested because of an internal error; see the "
                         "server log")


def _refused(state: ServerState, result: UploadedFile, stored: StoredUpload, document_id: str,
             error: RagstreamError) -> UploadedFile:
    """``result`` failed with ``error``: counted, and its stored copy removed unless the live document holds it."""
    metrics.record_failed_file()
    if _live_upload(state, document_id) != stored.relative:
        state.uploads.remove(stored.relative)
    return result.model_copy(update={"error": ErrorDetail(**error.to_dict()), "stored_as": None})


def already_ingested(state: ServerState, pending: UploadedFile, user: str, owner: str | None,
                     collection: str | None = None) -> UploadedFile | None:
    """The outcome of a stored upload that a worker which then died had ingested already (a job taken over):
    ``ingested`` when the live document of its name holds this very stored file, ``duplicate`` when the file is
    gone and a document ``user`` may see has its content; None when it still has to be ingested."""
    assert pending.stored_as is not None and pending.sha256 is not None
    document_id = default_document_id(f"{UPLOAD_SOURCE_SCHEME}{upload_folder(owner, collection)}/{pending.filename}")
    try:
        record: DocumentRecord | None = state.rs.document(document_id)
    except DocumentNotFoundError:
        record = None
    if record is not None and stored_upload(record) == pending.stored_as:
        return pending.model_copy(update={"status": "ingested", "document_id": document_id,
                                          "chunks": record.chunk_count})
    if (state.uploads.root / pending.stored_as).exists():
        return None
    same = [r.document_id for r in state.rs.duplicates(pending.sha256, user=user)]
    if not same:
        return None
    return pending.model_copy(update={"status": "duplicate", "document_id": same[0], "duplicate_of": same,
                                      "stored_as": None})


def _load(state: ServerState, stored: StoredUpload, filename: str, folder: str, owner: str | None,
          collection: str | None = None) -> LoadedDocument:
    try:
        data = stored.path.read_bytes()
    except OSError as error:
        raise DocumentError(f"{filename}: the stored upload cannot be read: {error.strerror or error}") from None
    metadata = {"filename": filename, UPLOAD_PATH_KEY: stored.relative}
    doc = load_bytes(data, filename, state.rs.config, source=f"{UPLOAD_SOURCE_SCHEME}{filename}",
                     document_id=default_document_id(f"{UPLOAD_SOURCE_SCHEME}{folder}/{filename}"), metadata=metadata)
    return doc.model_copy(update={"owner": owner, "collections": (collection,) if collection else ()})


def _ingest(state: ServerState, doc: LoadedDocument, stored: StoredUpload, result: UploadedFile,
            user: str) -> UploadedFile:
    with state.documents.hold(doc.document_id):
        same = [r.document_id for r in state.rs.duplicates(stored.sha256, user=user)]
        result = result.model_copy(update={"document_id": doc.document_id, "duplicate_of": same})
        if same and state.config.dedupe_uploads:
            state.uploads.remove(stored.relative)
            return result.model_copy(update={"status": "duplicate", "document_id": same[0], "stored_as": None})
        previous = _live_upload(state, doc.document_id)
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
    return result.model_copy(update={"status": "ingested", "chunks": report.chunks_written,
                                     "warnings": list(report.warnings)})


def _live_upload(state: ServerState, document_id: str) -> str | None:
    """The stored file of the live document ``document_id`` (the one an upload replaces), if any."""
    try:
        return stored_upload(state.rs.document(document_id))
    except RagstreamError:
        return None


def stored_upload(record: DocumentRecord) -> str | None:
    """Where a document's uploaded file is stored, relative to the upload directory (None: not an upload)."""
    path = record.metadata.get(UPLOAD_PATH_KEY) or record.metadata.get(LEGACY_PRIVATE_KEYS[0])
    return path if isinstance(path, str) else None


def public_record(record: DocumentRecord) -> DocumentRecord:
    """The record as HTTP clients see it: no private metadata (where the upload is stored)."""
    metadata = public_metadata(record.metadata)
    if record.source.startswith(UPLOAD_SOURCE_SCHEME):
        metadata = {key: value for key, value in metadata.items() if key not in LEGACY_PRIVATE_KEYS}
    return record.model_copy(update={"metadata": metadata})


def _failed(filename: str, error: RagstreamError) -> UploadedFile:
    return UploadedFile(filename=filename, status="failed", error=ErrorDetail(**error.to_dict()))
