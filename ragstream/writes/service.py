"""The one write path: every surface's ingest (the CLI, HTTP uploads, MCP, sync and watch) goes through
:class:`WriteService`, which checks the writer's right to write where they write before any file is read
(docs/collections.md, "Who may change a document").

A write is aimed first (:meth:`WriteService.target`: the documents' owner and the collection they join,
checked for the writer), then done against that :class:`WriteTarget`; a background job resumes a target
checked when it was submitted.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ragstream.collection_service import CollectionService
from ragstream.errors import PermissionDeniedError
from ragstream.ingestion import Ingestor, ProgressCallback
from ragstream.models import DEFAULT_COLLECTION_ID, IngestReport, LoadedDocument, Writer

if TYPE_CHECKING:
    from ragstream.config import RagstreamConfig
    from ragstream.sync.report import SyncReport
    from ragstream.sync.syncer import Syncer
    from ragstream.sync.watcher import ReportCallback, Watcher


@dataclass(frozen=True)
class WriteTarget:
    """Where a write lands, checked for its ``writer``: the documents' ``owner`` (None: shared, or the collection
    decides who reads them) and the id of the collection they join (None: the default one)."""

    writer: Writer
    owner: str | None
    collection_id: str | None


class WriteService:
    """Ingest files, bytes and documents, sync and watch folders: each for a writer, checked."""

    def __init__(self, config: RagstreamConfig, collections: CollectionService, ingestor: Ingestor,
                 syncer: Callable[[], Syncer]) -> None:
        self.config = config
        self._collections = collections
        self._ingestor = ingestor
        self._syncer = syncer

    # -- aiming a write ------------------------------------------------------------------------

    def target(self, writer: Writer, *, owner: str | None = None, collection: str | None = None) -> WriteTarget:
        """Where ``writer``'s documents of ``owner`` (None: shared) in the collection named ``collection`` land.
        A user (not the local admin, not an admin key) writes only their own documents, or documents into a
        collection they edit; CollectionNotFoundError for a collection they may not read, PermissionDeniedError
        for one they only read, for a shared write, or for another user's documents."""
        if not writer.unrestricted:
            if owner is not None and owner != writer.user:
                raise PermissionDeniedError("a user may only write their own documents")
            if owner is None and collection is None:
                raise PermissionDeniedError("only an admin may write shared documents")
        return WriteTarget(writer, owner, self._collections.for_writing(collection, writer.user, writer.admin))

    def upload_owner(self, writer: Writer, *, shared: bool) -> str | None:
        """The owner of ``writer``'s upload (None: shared); PermissionDeniedError for a shared one of a user's
        (checked before the request's body is read)."""
        if shared and not writer.admin:
            raise PermissionDeniedError("only an admin key may upload shared documents (shared=true)")
        return None if shared else writer.user

    def upload_target(self, writer: Writer, owner: str | None, collection: str | None) -> WriteTarget:
        """Where an upload of ``owner``'s (from :meth:`upload_owner`) lands: into the collection named (one
        ``writer`` may edit), whose readers then read it; naming the default collection is naming none."""
        collection_id = self._collections.for_writing(collection, writer.user, writer.admin)
        if collection_id == DEFAULT_COLLECTION_ID:  # what an upload naming none joins: the caller's own, as before
            collection_id = None
        return WriteTarget(writer, None if collection_id else owner, collection_id)

    @staticmethod
    def local(writer: Writer, what: str) -> None:
        """Refuse a user's ``what`` (files of this machine, a sync, a watch): the local admin's or an admin's alone."""
        if not writer.unrestricted:
            raise PermissionDeniedError(f"only an admin may {what}")

    # -- writing -------------------------------------------------------------------------------

    def ingest_paths(self, target: WriteTarget, paths: Iterable[str | Path], *, metadata: dict[str, Any] | None = None,
                     progress: ProgressCallback | None = None) -> IngestReport:
        """Ingest files and folders of this machine (the local admin's or an admin's) at ``target``; the documents
        found unchanged join its collection too."""
        self.local(target.writer, "ingest files of the server's machine")
        report = self._ingestor.ingest_paths(paths, metadata=metadata, owner=target.owner, progress=progress,
                                             collection=target.collection_id)
        self._collections.include(target.collection_id, report.document_ids)
        return report

    def ingest_bytes(self, target: WriteTarget, data: bytes, filename: str, *, source: str,
                     metadata: dict[str, Any] | None = None) -> IngestReport:
        """Ingest one file given as bytes (its type sniffed from the content) at ``target``: its id from ``source``
        and the owner, so the same ``source`` and owner replace the earlier document (another owner's never)."""
        from ragstream.documents.loaders import default_document_id, load_bytes  # the parsers load only when used

        owner = target.owner
        document_id = default_document_id(source if owner is None else f"{source}#owner={owner}")
        doc = load_bytes(data, filename, self.config, source=source, document_id=document_id, metadata=metadata)
        report = self.ingest_documents(target, [doc])
        self._collections.include(target.collection_id, report.document_ids)
        return report

    def ingest_documents(self, target: WriteTarget, docs: Iterable[LoadedDocument], *,
                         progress: ProgressCallback | None = None) -> IngestReport:
        """Ingest documents built in memory at ``target`` (its owner and collection on each)."""
        collections = (target.collection_id,) if target.collection_id else ()
        return self._ingestor.ingest_documents(
            (doc.model_copy(update={"owner": target.owner, "collections": collections}) for doc in docs),
            progress=progress)

    def ingest_built(self, writer: Writer, docs: Iterable[LoadedDocument], *,
                     progress: ProgressCallback | None = None) -> IngestReport:
        """Ingest documents built in memory as they are (each names its owner and collections: the local admin's
        or an admin's)."""
        self.local(writer, "write documents that name their own owner")
        return self._ingestor.ingest_documents(docs, progress=progress)

    def sync(self, writer: Writer, paths: list[str | Path], *, changed: Iterable[str | Path] | None = None,
             progress: ProgressCallback | None = None, collection: str | None = None) -> SyncReport:
        """Make the index match folders (the local admin's or an admin's: their documents are shared); with
        ``collection``, the roots' documents join it."""
        self.local(writer, "sync folders (their documents are shared)")
        self._collections.remember_roots(paths, collection)
        report = self._syncer().sync(paths, changed=changed, progress=progress)
        self._collections.remember_roots(paths, collection)  # documents found unchanged join it too
        return report

    def forget_root(self, writer: Writer, path: str | Path) -> SyncReport:
        """Remove every document of a synced root and unregister it (the local admin's or an admin's)."""
        self.local(writer, "forget a synced root")
        return self._syncer().forget(path)

    def watcher(self, writer: Writer, paths: list[str | Path], *, on_report: ReportCallback | None = None,
                collection: str | None = None) -> Watcher:
        """A watcher keeping ``paths`` in step with the index (the local admin's or an admin's)."""
        from ragstream.sync.watcher import Watcher

        self.local(writer, "watch folders (their documents are shared)")
        self._collections.remember_roots(paths, collection)
        return Watcher(paths, self._syncer(), self.config.sync, ignore_files=self.config.ingest.ignore_files,
                       on_report=on_report)
