"""One uploaded file -> stored, sniffed, parsed, de-duplicated and ingested (the HTTP upload's write path;
the request itself is read in server/documents.py).

A failure of one file is reported in its result and never stops the others. The stored copy is
kept only for a file that became (or replaced) a live document. An upload belongs to the user who
sent it (or is shared, when an admin asks): its document id comes from the owner's upload folder
and the file name, so one user's upload never replaces another's, and duplicate detection only
looks at the documents the uploader may see. Every file lands at a :class:`WriteTarget` checked for the
uploader (:meth:`WriteService.upload_target`) before any file is stored.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import BinaryIO

from ragstream import metrics
from ragstream.documents.loaders import default_document_id, load_bytes
from ragstream.errors import (
    CorruptDocumentError,
    DocumentError,
    DocumentNotFoundError,
    InsufficientStorageError,
    InternalError,
    RagstreamError,
)
from ragstream.models import (
    COLLECTION_HOME_FOLDER,
    UPLOAD_PATH_KEY,
    DocumentRecord,
    ErrorDetail,
    IngestReport,
    LoadedDocument,
    UploadedFile,
    public_metadata,
)
from ragstream.writes.service import WriteService, WriteTarget
from ragstream.writes.upload_store import StoredUpload, UploadStore, user_folder

logger = logging.getLogger("ragstream.server")

UPLOAD_SOURCE_SCHEME = "upload://"
LEGACY_PRIVATE_KEYS = ("upload_path", "user_id")
"""Metadata keys uploads of earlier versions stored in the open; never shown over HTTP."""


def upload_folder(owner: str | None, collection: str | None = None) -> str:
    """The folder of an upload (and of its document id): its owner's, or, for one into a collection, the
    collection's (one collection's upload never replaces another's document)."""
    return user_folder(owner) if collection is None else COLLECTION_HOME_FOLDER.format(collection_id=collection)


class DocumentLocks:
    """One lock per document id, held while a request replaces or deletes that document (so its stored
    upload file is swapped exactly once); writes to different documents never wait for each other."""

    def __init__(self) -> None:
        self._guard = threading.Lock()
        self._locks: dict[str, tuple[threading.Lock, int]] = {}

    @contextmanager
    def hold(self, document_id: str) -> Iterator[None]:
        """Hold ``document_id``'s lock for the block."""
        with self._guard:
            lock, users = self._locks.get(document_id, (threading.Lock(), 0))
            self._locks[document_id] = (lock, users + 1)
        try:
            with lock:
                yield
        finally:
            with self._guard:
                lock, users = self._locks[document_id]
                if users == 1:
                    del self._locks[document_id]
                else:
                    self._locks[document_id] = (lock, users - 1)


FindDocument = Callable[[str], DocumentRecord]
"""The live document of an id, whoever owns it; raises DocumentNotFoundError (the facade's ``document``)."""
Duplicates = Callable[[str, str | None], list[DocumentRecord]]
"""The live documents a user may see whose source file had this sha256 (the facade's ``duplicates``)."""


class UploadIntake:
    """Stores uploaded files and ingests them at their write target, one file at a time."""

    def __init__(self, writes: WriteService, uploads: UploadStore, documents: DocumentLocks, *, dedupe: bool,
                 find_document: FindDocument, duplicates: Duplicates) -> None:
        self._writes = writes
        self.uploads = uploads
        self.documents = documents
        self._dedupe = dedupe
        self._find_document = find_document
        self._duplicates = duplicates

    def store(self, source: BinaryIO, filename: str, target: WriteTarget) -> UploadedFile:
        """Store one file uploaded to ``target``: ``pending`` (stored, to ingest) or ``failed`` (nothing kept)."""
        try:
            stored = self.uploads.save(source, upload_folder(target.owner, target.collection_id), filename)
        except (DocumentError, InsufficientStorageError) as error:
            metrics.record_failed_file()
            return _failed(filename, error)
        return UploadedFile(filename=filename, status="pending", sha256=stored.sha256, size_bytes=stored.size_bytes,
                            stored_as=stored.relative)

    def ingest_stored(self, pending: UploadedFile, target: WriteTarget) -> UploadedFile:
        """Load and ingest a stored upload (``pending``) at ``target``; its outcome, never an exception: whatever
        reading or ingesting the file raises fails this file alone (a reader's unexpected error as
        ``corrupt_document``, an unexpected error after reading as ``internal_error``), and its stored copy goes
        unless a live document holds it."""
        assert pending.stored_as is not None and pending.sha256 is not None and pending.size_bytes is not None
        stored = StoredUpload(path=self.uploads.root / pending.stored_as, relative=pending.stored_as,
                              size_bytes=pending.size_bytes, sha256=pending.sha256)
        result = pending.model_copy(update={"status": "failed"})
        folder = upload_folder(target.owner, target.collection_id)
        document_id = default_document_id(f"{UPLOAD_SOURCE_SCHEME}{folder}/{pending.filename}")
        try:
            doc = self._load(stored, pending.filename, folder)
        except Exception as error:  # a reader's bug or a hostile file: this file fails, the batch goes on
            return self._refused(result, stored, document_id, _unreadable(pending.filename, error))
        try:
            return self._ingest(doc, stored, result, target)
        except Exception as error:  # raised before an ingest job could count it
            return self._refused(result, stored, document_id, _unexpected(pending.filename, error))

    def already_ingested(self, pending: UploadedFile, target: WriteTarget) -> UploadedFile | None:
        """The outcome of a stored upload that a worker which then died had ingested already (a job taken over):
        ``ingested`` when the live document of its name holds this very stored file, ``duplicate`` when the file is
        gone and a document the uploader may see has its content; None when it still has to be ingested."""
        assert pending.stored_as is not None and pending.sha256 is not None
        folder = upload_folder(target.owner, target.collection_id)
        document_id = default_document_id(f"{UPLOAD_SOURCE_SCHEME}{folder}/{pending.filename}")
        try:
            record: DocumentRecord | None = self._find_document(document_id)
        except DocumentNotFoundError:
            record = None
        if record is not None and stored_upload(record) == pending.stored_as:
            return pending.model_copy(update={"status": "ingested", "document_id": document_id,
                                              "chunks": record.chunk_count})
        if (self.uploads.root / pending.stored_as).exists():
            return None
        same = [r.document_id for r in self._duplicates(pending.sha256, target.writer.user)]
        if not same:
            return None
        return pending.model_copy(update={"status": "duplicate", "document_id": same[0], "duplicate_of": same,
                                          "stored_as": None})

    def _refused(self, result: UploadedFile, stored: StoredUpload, document_id: str,
                 error: RagstreamError) -> UploadedFile:
        """``result`` failed with ``error``: counted, and its stored copy removed unless the live document holds it."""
        metrics.record_failed_file()
        if self._live_upload(document_id) != stored.relative:
            self.uploads.remove(stored.relative)
        return result.model_copy(update={"error": ErrorDetail(**error.to_dict()), "stored_as": None})

    def _load(self, stored: StoredUpload, filename: str, folder: str) -> LoadedDocument:
        try:
            data = stored.path.read_bytes()
        except OSError as error:
            raise DocumentError(f"{filename}: the stored upload cannot be read: {error.strerror or error}") from None
        metadata = {"filename": filename, UPLOAD_PATH_KEY: stored.relative}
        return load_bytes(data, filename, self._writes.config, source=f"{UPLOAD_SOURCE_SCHEME}{filename}",
                          document_id=default_document_id(f"{UPLOAD_SOURCE_SCHEME}{folder}/{filename}"),
                          metadata=metadata)

    def _ingest(self, doc: LoadedDocument, stored: StoredUpload, result: UploadedFile,
                target: WriteTarget) -> UploadedFile:
        with self.documents.hold(doc.document_id):
            same = [r.document_id for r in self._duplicates(stored.sha256, target.writer.user)]
            result = result.model_copy(update={"document_id": doc.document_id, "duplicate_of": same})
            if same and self._dedupe:
                self.uploads.remove(stored.relative)
                return result.model_copy(update={"status": "duplicate", "document_id": same[0], "stored_as": None})
            previous = self._live_upload(doc.document_id)
            report = self._writes.ingest_documents(target, [doc])
            return self._outcome(report, stored, previous, result)

    def _outcome(self, report: IngestReport, stored: StoredUpload, previous: str | None,
                 result: UploadedFile) -> UploadedFile:
        if report.failures:
            failure = report.failures[0]
            self.uploads.remove(stored.relative)
            error = ErrorDetail(code=failure.code, type=failure.error_type, message=failure.message)
            return result.model_copy(update={"error": error, "stored_as": None})
        if report.documents_skipped:
            self.uploads.remove(stored.relative)
            return result.model_copy(update={"status": "unchanged", "stored_as": previous})
        if previous and previous != stored.relative:
            self.uploads.remove(previous)
        return result.model_copy(update={"status": "ingested", "chunks": report.chunks_written,
                                         "warnings": list(report.warnings)})

    def _live_upload(self, document_id: str) -> str | None:
        """The stored file of the live document ``document_id`` (the one an upload replaces), if any."""
        try:
            return stored_upload(self._find_document(document_id))
        except RagstreamError:
            return None


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
