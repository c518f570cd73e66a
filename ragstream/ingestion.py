"""Files -> documents -> chunks -> vectors -> store, each document version switched atomically.

Documents are prepared one by one (load, validate, chunk) and written in batches of about
``ingest.write_batch_chunks`` chunks, so the embedder sees full batches and the store flushes
once per batch instead of once per document.

Crash safety: before touching the vector store, intent rows name the generations a batch may
leave behind (allocated in the same transaction). New points are written under fresh generations
and flushed; one catalog transaction then makes those generations live; the old generations'
points are deleted (once no reader snapshot taken before the switch is open) and the intents
cleared. :meth:`Ingestor.recover` replays unfinished intents on start-up, so after a crash at any
point each document is at its old version or its new one, never a mix. docs/consistency.md tells
how readers see only committed versions meanwhile.
"""

from __future__ import annotations

import logging
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

from ragstream import metrics
from ragstream.config import RagstreamConfig
from ragstream.documents.chunk_builder import build_chunks, missing_metadata_warnings, relinked_chunk
from ragstream.documents.chunkers import chunk_document
from ragstream.documents.required_metadata import check_required_metadata
from ragstream.documents.selection import select_files
from ragstream.errors import (
    CollectionNotFoundError,
    DocumentError,
    DocumentNotFoundError,
    DocumentTooLargeError,
    EmbeddingFailureError,
    EmptyDocumentError,
    InsufficientStorageError,
    RagstreamError,
)
from ragstream.models import Chunk, DocumentRecord, FileFailure, IngestReport, LoadedDocument, TextPiece
from ragstream.providers.embedders.cached import CachedEmbedder
from ragstream.store.base import VectorStore
from ragstream.store.catalog_base import DocumentRegistry, DocumentVersion, Versions
from ragstream.store.disk import ensure_free_space
from ragstream.store.snapshots import Retired, Snapshots

logger = logging.getLogger("ragstream.ingest")
TEXT_COPIES = 3
"""Copies of a chunk's text a write keeps on disk: store payload, catalog page text, write-ahead log."""
MAX_UTF8_BYTES = 4
CHUNK_OVERHEAD_BYTES = 1024
"""Payload fields, ids and index entries of one chunk, generously."""

ProgressCallback = Callable[[str, str], None]
"""Called as ``progress(outcome, source)`` after each document: processed, skipped or failed."""


@dataclass
class _Pending:
    """A document chunked and waiting in the write batch."""

    doc: LoadedDocument
    pieces: list[TextPiece]
    old_generation: int | None
    from_store: bool = False
    """Re-embedding the catalog's stored text (reindex): yields to a version another writer committed meanwhile."""


@dataclass
class _Move:
    """A renamed file's document, waiting in a relink batch with the points it keeps."""

    index: int
    old: DocumentRecord
    doc: LoadedDocument
    points: list[tuple[Chunk, np.ndarray]]


class Ingestor:
    """Ingest, delete and reindex documents."""

    def __init__(
        self,
        config: RagstreamConfig,
        documents: DocumentRegistry,
        versions: Versions,
        store: VectorStore,
        embedder: Callable[[], CachedEmbedder],
        snapshots: Snapshots,
        on_change: Callable[[], None] = lambda: None,
        before_write: Callable[[], None] = lambda: None,
        joined: Callable[[LoadedDocument, DocumentRecord | None], LoadedDocument] = lambda doc, record: doc,
        commit_lock: AbstractContextManager[Any] | None = None,
    ) -> None:
        """``before_write`` runs before every write, before any file is read or embedded: it raises to refuse the
        write (an index on a full disk) or makes the index writable again. ``joined(doc, live record)`` names every
        collection a new version belongs to, under the commit lock (docs/collections.md). ``commit_lock`` is the
        catalog's (one writer at a time among every process sharing it; default: a lock of this process)."""
        self._config = config
        self._documents = documents
        self._versions = versions
        self._store = store
        self._embedder = embedder
        self._snapshots = snapshots
        self._on_change = on_change
        self._before_write = before_write
        self._joined = joined
        self._data_dir = Path(config.data_dir)
        self.commit_lock: AbstractContextManager[Any] = commit_lock if commit_lock is not None else threading.RLock()
        """Serialises the short write phase of every operation (a batch's switch, a delete, recovery), across
        processes when the catalog is shared (PostgreSQL)."""

    # -- public operations ---------------------------------------------------------------------

    def ingest_paths(
        self, paths: Iterable[str | Path], *, metadata: dict[str, Any] | None = None, owner: str | None = None,
        progress: ProgressCallback | None = None, root: str | None = None, collection: str | None = None,
    ) -> IngestReport:
        """Ingest files and folders (recursively, by ``ingest.include``/``exclude`` and ignore files); each bad file
        is reported and skipped. The documents belong to ``owner`` (None: shared) and, when given, to the synced
        ``root`` (None: they keep the root they have), inside which every file must then lie when it is read
        (``ingest.follow_symlinks``), as a file taken from a folder must lie inside that folder; with ``collection``
        (an id), they join it."""
        self._before_write()
        report = _new_report()
        selection = select_files(paths, self._config.ingest)
        report.skipped_files = selection.skipped
        within = [(path, root or selection.within.get(path)) for path in selection.files]
        docs = self._load_all(within, metadata, owner, report, progress, root, collection)
        report = self._run(docs, report, force=False, progress=progress)
        if self._config.ingest.reindex_stale:
            _merge(report, self.reindex_stale(progress=progress))
        return report

    def ingest_documents(
        self, docs: Iterable[LoadedDocument], *, force: bool = False, progress: ProgressCallback | None = None
    ) -> IngestReport:
        """Ingest already-loaded documents (upsert by document_id, unchanged ones skipped)."""
        self._before_write()
        return self._run(docs, _new_report(), force=force, progress=progress)

    def delete(self, document_id: str) -> DocumentRecord:
        """Remove a document and purge every one of its chunks; the record it had."""
        self._before_write()
        with self.commit_lock:
            record = self._documents.get(document_id)
            if record is None:
                raise DocumentNotFoundError(f"no document with id {document_id!r}")
            [intent] = self._versions.add_intents([(document_id, None, record.generation)])
            sequence = self._documents.remove_document(document_id)
        self._on_change()
        self._snapshots.retire(sequence, [Retired(document_id, record.generation, intent)])
        return record

    def delete_many(self, records: Sequence[DocumentRecord]) -> list[DocumentRecord]:
        """Remove the documents of ``records`` that are still at the version named there, and purge their
        chunks, in one switch (one commit sequence, one store flush); the records removed."""
        self._before_write()
        with self.commit_lock:
            live = self._documents.live_generations()
            gone = [record for record in records if live.get(record.document_id) == record.generation]
            if not gone:
                return []
            intents = self._versions.add_intents([(record.document_id, None, record.generation) for record in gone])
            sequence = self._documents.commit_documents([], removed=[record.document_id for record in gone])
        self._on_change()
        self._snapshots.retire(sequence, [Retired(record.document_id, record.generation, intent)
                                          for record, intent in zip(gone, intents, strict=True)])
        return gone

    def relink(self, moves: Sequence[tuple[DocumentRecord, LoadedDocument]]) -> list[int | None]:
        """Move the live version of each ``old`` document to its ``doc`` (the same file content at a new source,
        under its own id) without re-embedding: the new versions' points carry the old versions' texts and vectors,
        and one catalog switch per batch of about ``ingest.write_batch_chunks`` chunks makes the new ids live and
        removes the old ones. Per move, the chunks moved, or None when ``old`` changed meanwhile or ``doc``'s id is
        already taken (the caller ingests the file instead)."""
        self._before_write()
        moved: dict[int, int] = {}
        batch: list[_Move] = []
        for index, (old, doc) in enumerate(moves):
            points = self._store.points_of(old.document_id, old.generation)
            if not points or len(points) != old.chunk_count:
                continue
            batch.append(_Move(index, old, self._joined(doc, old), points))
            if sum(len(move.points) for move in batch) >= self._config.ingest.write_batch_chunks:
                moved.update(self._relink_batch(batch))
                batch = []
        if batch:
            moved.update(self._relink_batch(batch))
        return [moved.get(index) for index in range(len(moves))]

    def _relink_batch(self, batch: list[_Move]) -> dict[int, int]:
        vectors = [np.stack([vector for _, vector in move.points]).astype(np.float32) for move in batch]
        texts = [chunk.text for move in batch for chunk, _ in move.points]
        ensure_free_space([self._data_dir], _write_bytes(texts) + sum(v.nbytes for v in vectors),
                          self._config.limits.min_free_disk_bytes)
        with self.commit_lock:
            live = self._documents.live_generations()
            kept = [(move, rows) for move, rows in zip(batch, vectors, strict=True)
                    if live.get(move.old.document_id) == move.old.generation and move.doc.document_id not in live]
            if not kept:
                return {}
            removals = self._versions.add_intents([(move.old.document_id, None, move.old.generation) for move, _ in kept])
            generations, intents = self._versions.begin_versions([(move.doc.document_id, None) for move, _ in kept])
            moved_at = datetime.now(UTC).isoformat(timespec="seconds")
            try:
                for (move, rows), generation in zip(kept, generations, strict=True):
                    chunks = [relinked_chunk(chunk, move.doc, generation=generation, created_at=moved_at)
                              for chunk, _ in move.points]
                    self._store.upsert(chunks, rows, generation)
                self._store.flush()
                sequence = self._documents.commit_documents(
                    [DocumentVersion(move.doc, generation, len(move.points), move.old.fingerprint, moved_at,
                                     move.old.first_ingested_at) for (move, _), generation in zip(kept, generations, strict=True)],
                    removed=[move.old.document_id for move, _ in kept])
            except InsufficientStorageError:
                self._roll_back([(move.doc.document_id, generation) for (move, _), generation in zip(kept, generations, strict=True)],
                                [*intents, *removals])
                raise
        self._on_change()
        self._snapshots.retire(sequence, [
            *(Retired(move.doc.document_id, None, intent) for (move, _), intent in zip(kept, intents, strict=True)),
            *(Retired(move.old.document_id, move.old.generation, removal) for (move, _), removal in zip(kept, removals, strict=True))])
        return {move.index: len(move.points) for move, _ in kept}

    def reindex(self, *, progress: ProgressCallback | None = None) -> IngestReport:
        """Re-chunk and re-embed every document from its stored text under the current settings."""
        from ragstream.documents.markdown_text import refresh_title  # the parsers load only when needed

        docs = (self._documents.stored_document(record.document_id) for record in self._documents.list())
        return self.ingest_documents((refresh_title(doc) for doc in docs if doc is not None), force=True, progress=progress)

    def reindex_stale(self, *, progress: ProgressCallback | None = None) -> IngestReport:
        """Re-chunk and re-embed, from their stored text, only the documents indexed under other chunking or
        embedding settings (``ingest.reindex_stale``); ``reindexed`` names them."""
        from ragstream.documents.markdown_text import refresh_title  # the parsers load only when needed

        stale = self.stale_documents()
        if not stale:
            return _new_report()
        docs = (self._documents.stored_document(document_id) for document_id in stale)
        report = self.ingest_documents((refresh_title(doc) for doc in docs if doc is not None), force=True,
                                       progress=progress)
        report.reindexed = [document_id for document_id in stale if document_id not in report.errors]
        return report

    def stale_documents(self) -> list[str]:
        """Documents indexed under other chunking or embedding settings (they need a reindex)."""
        current = self._config.index_fingerprints()
        return [record.document_id for record in self._documents.list() if record.fingerprint not in current]

    def recover(self) -> int:
        """Finish or roll back operations a crash interrupted; returns how many were repaired."""
        with self.commit_lock:
            intents = self._versions.intents()
            live = self._documents.live_generations()
            for _, document_id, new_generation, old_generation in intents:
                for generation in (new_generation, old_generation):
                    if generation is not None and live.get(document_id) != generation:
                        self._store.delete_generation(document_id, generation)
            if intents:
                self._store.flush()
                self._versions.clear_intents([intent[0] for intent in intents])
                self._on_change()
        return len(intents)

    # -- the job -------------------------------------------------------------------------------

    def _load_all(
        self, paths: list[tuple[Path, str | None]], metadata: dict[str, Any] | None, owner: str | None, report: IngestReport,
        progress: ProgressCallback | None, root: str | None = None, collection: str | None = None,
    ) -> Iterator[LoadedDocument]:
        """Load each file of ``paths`` (with the resolved folder it must lie inside when read, or None)."""
        from ragstream.documents.loaders import load_file  # the parsers load only when files are ingested

        given = {key: value for key, value in (("owner", owner), ("root", root),
                                               ("collections", collection and (collection,))) if value is not None}
        for path, within in paths:
            try:
                doc = load_file(path, self._config, metadata=metadata, root=within)
                yield doc.model_copy(update=given) if given else doc
            except (DocumentError, OSError) as error:
                _fail(report, str(path), error, progress)

    def _run(self, docs: Iterable[LoadedDocument], report: IngestReport, *, force: bool, progress: ProgressCallback | None) -> IngestReport:
        started = time.perf_counter()
        fingerprint = self._config.index_fingerprint()
        batch: list[_Pending] = []
        for doc in docs:
            if any(pending.doc.document_id == doc.document_id for pending in batch):
                self._write_batch(batch, fingerprint, report, progress)
                batch = []
            pending = self._prepare(doc, fingerprint, report, force=force, progress=progress)
            if pending is None:
                continue
            batch.append(pending)
            if sum(len(p.pieces) for p in batch) >= self._config.ingest.write_batch_chunks:
                self._write_batch(batch, fingerprint, report, progress)
                batch = []
        if batch:
            self._write_batch(batch, fingerprint, report, progress)
        if report.documents_processed:
            self._store.maybe_optimize()
            self._on_change()
        report.duration_seconds = time.perf_counter() - started
        metrics.record_ingest(report)
        return report

    def _prepare(
        self, doc: LoadedDocument, fingerprint: str, report: IngestReport, *, force: bool, progress: ProgressCallback | None
    ) -> _Pending | None:
        """Skip an unchanged document, or validate and chunk it; None when skipped or failed."""
        existing = self._documents.get(doc.document_id)
        if (not force and existing and existing.checksum == doc.checksum and self._current(existing.fingerprint, fingerprint)
                and existing.owner == doc.owner):
            report.documents_skipped += 1
            report.document_ids.append(doc.document_id)
            if doc.root is not None and existing.root != doc.root:  # unchanged, now kept in step with a synced root
                self._documents.set_root([doc.document_id], doc.root)
            if progress:
                progress("skipped", doc.source)
            return None
        report.warnings.extend(doc.warnings)
        duplicates = [r.source for r in self._documents.find_by_checksum(doc.checksum) if r.document_id != doc.document_id]
        if duplicates:
            report.warnings.append(f"{doc.source}: same content as {', '.join(duplicates)}")
        try:
            check_required_metadata(doc, self._config.ingest.required_metadata)
            pieces = chunk_document(doc, self._config.chunking, self._embedder().count_tokens)
            if not pieces:
                raise EmptyDocumentError(f"{doc.source}: no text left after chunking")
            if len(pieces) > self._config.limits.max_chunks_per_document:
                raise DocumentTooLargeError(f"{doc.source}: {len(pieces)} chunks exceed the limit of "
                                            f"{self._config.limits.max_chunks_per_document} (limits.max_chunks_per_document)")
        except (DocumentError, EmbeddingFailureError) as error:
            _fail(report, doc.source, error, progress)
            return None
        report.warnings.extend(missing_metadata_warnings(doc, pieces, self._config.answer.citations))
        return _Pending(doc=doc, pieces=pieces, old_generation=existing.generation if existing else None, from_store=force)

    def _write_batch(self, batch: list[_Pending], fingerprint: str, report: IngestReport, progress: ProgressCallback | None) -> None:
        """Embed a batch in one go (outside the commit lock), then switch every document in it to its new
        version under the commit lock, which is held only for the bounded write of one batch."""
        texts = [piece.text for pending in batch for piece in pending.pieces]
        minimum = self._config.limits.min_free_disk_bytes
        ensure_free_space([self._data_dir], _write_bytes(texts), minimum)
        try:
            vectors = self._embed(texts, report)
        except EmbeddingFailureError as error:
            if len(batch) == 1:
                _fail(report, batch[0].doc.source, error, progress)
            else:  # isolate the document the embedder rejects
                for pending in batch:
                    self._write_batch([pending], fingerprint, report, progress)
            return
        ensure_free_space([self._data_dir], _write_bytes(texts) + vectors.nbytes, minimum)
        with self.commit_lock:
            kept = self._still_current(batch, fingerprint, report, progress)
            try:
                if kept:
                    self._commit(kept, vectors, fingerprint, report, progress)
            except CollectionNotFoundError as error:  # deleted meanwhile: nothing of the batch was kept
                for pending, _ in kept:
                    _fail(report, pending.doc.source, error, progress)

    def _still_current(self, batch: list[_Pending], fingerprint: str, report: IngestReport,
                       progress: ProgressCallback | None) -> list[tuple[_Pending, slice]]:
        """The batch's documents with their vectors' slice, re-checked against the live catalog under the lock:
        a document another writer changed meanwhile keeps that writer's version when this run re-embeds stored
        text (reindex) or when that version is this very file (another process ingested it meanwhile: skipped as
        unchanged), else this version replaces it (last writer wins)."""
        live = self._documents.live_generations()
        kept: list[tuple[_Pending, slice]] = []
        offset = 0
        for pending in batch:
            rows = slice(offset, offset + len(pending.pieces))
            offset += len(pending.pieces)
            current = live.get(pending.doc.document_id)
            if current != pending.old_generation:
                if pending.from_store or (current is not None and self._same_version(pending.doc, fingerprint)):
                    report.documents_skipped += 1
                    if progress:
                        progress("skipped", pending.doc.source)
                    continue
                pending.old_generation = current
            kept.append((pending, rows))
        return kept

    def _same_version(self, doc: LoadedDocument, fingerprint: str) -> bool:
        """The live version of ``doc``'s id is this very content, indexed with these settings, for the same owner."""
        live = self._documents.get(doc.document_id)
        return (live is not None and live.checksum == doc.checksum and self._current(live.fingerprint, fingerprint)
                and live.owner == doc.owner)

    def _current(self, recorded: str, fingerprint: str) -> bool:
        """A document recorded under ``recorded`` is current under this run's ``fingerprint``: the same, or one the
        config counts as equal (torch and the packaged ONNX export of one model: ``index_fingerprints``)."""
        return recorded == fingerprint or recorded in self._config.index_fingerprints()

    def _commit(self, kept: list[tuple[_Pending, slice]], vectors: np.ndarray, fingerprint: str,
                report: IngestReport, progress: ProgressCallback | None) -> None:
        batch = [pending for pending, _ in kept]
        for pending in batch:  # its chunks carry the collections its document is in now (this lock orders the changes)
            pending.doc = self._joined(pending.doc, self._documents.get(pending.doc.document_id))
        generations, intents = self._versions.begin_versions([(p.doc.document_id, p.old_generation) for p in batch])
        ingested_at = datetime.now(UTC).isoformat(timespec="seconds")
        try:
            for (pending, rows), generation in zip(kept, generations, strict=True):
                chunks = build_chunks(pending.doc, pending.pieces, generation=generation, created_at=ingested_at)
                self._store.upsert(chunks, vectors[rows], generation)
            self._store.flush()
            versions = [DocumentVersion(pending.doc, generation, len(pending.pieces), fingerprint, ingested_at)
                        for pending, generation in zip(batch, generations, strict=True)]
            sequence = self._documents.commit_documents(versions)
        except (InsufficientStorageError, CollectionNotFoundError):
            self._roll_back([(p.doc.document_id, g) for p, g in zip(batch, generations, strict=True)], intents)
            raise
        self._on_change()
        self._snapshots.retire(sequence, [Retired(p.doc.document_id, p.old_generation, intent)
                                          for p, intent in zip(batch, intents, strict=True)])

        for pending in batch:
            report.documents_processed += 1
            report.chunks_written += len(pending.pieces)
            report.document_ids.append(pending.doc.document_id)
            if progress:
                progress("processed", pending.doc.source)

    def _roll_back(self, written: list[tuple[str, int]], intents: list[int]) -> None:
        """Remove what a failed commit wrote ((document_id, generation) pairs), now if the disk allows it;
        otherwise its intents stay for recovery."""
        try:
            for document_id, generation in written:
                self._store.delete_generation(document_id, generation)
            self._store.flush()
            self._versions.clear_intents(intents)
        except (RagstreamError, OSError):
            logger.warning("could not roll back a failed write now; recovery finishes it at the next start")

    def _embed(self, texts: Sequence[str], report: IngestReport) -> np.ndarray:
        """Vectors for ``texts``: from the cache by content hash, the rest from the model."""
        vectors, stats = self._embedder().embed_documents_with_stats(texts)
        report.embedding_cache_hits += stats.hits
        report.embedding_count += stats.embedded
        report.embedding_seconds += stats.model_seconds
        return vectors


def _write_bytes(texts: Sequence[str]) -> int:
    """What writing these chunks adds on disk besides their vectors, roughly (UTF-8 is up to 4 bytes a
    character; the text is kept in the store payload, the catalog and its write-ahead log)."""
    return sum(len(text) for text in texts) * TEXT_COPIES * MAX_UTF8_BYTES + len(texts) * CHUNK_OVERHEAD_BYTES


def _merge(report: IngestReport, stale: IngestReport) -> None:
    """Fold the re-embedding of stale documents into the ingest's report."""
    report.reindexed = stale.reindexed
    report.documents_processed += stale.documents_processed
    report.document_ids.extend(stale.document_ids)
    report.documents_failed += stale.documents_failed
    report.failures.extend(stale.failures)
    report.warnings.extend(stale.warnings)
    report.chunks_written += stale.chunks_written
    report.embedding_count += stale.embedding_count
    report.embedding_cache_hits += stale.embedding_cache_hits
    report.embedding_seconds += stale.embedding_seconds


def _new_report() -> IngestReport:
    return IngestReport(job_id=str(uuid.uuid4()))


def _fail(report: IngestReport, source: str, error: Exception, progress: ProgressCallback | None) -> None:
    code = getattr(error, "code", "error")
    message = getattr(error, "message", str(error))
    report.failures.append(FileFailure(source=source, error_type=type(error).__name__, code=code, message=message))
    report.documents_failed += 1
    if progress:
        progress("failed", source)
