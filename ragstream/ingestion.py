"""Files -> documents -> chunks -> vectors -> store, one atomic document version at a time.

Crash safety: before touching the vector store, an intent row names the generations an
operation may leave behind. New points are written under a fresh generation and flushed; one
catalog transaction then makes that generation live; the old generation's points are deleted;
the intent is cleared. :meth:`Ingestor.recover` replays unfinished intents on start-up, so after
a crash at any point each document is at its old version or its new one, never a mix.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Iterable, Iterator, Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import numpy as np

from ragstream.config import RagstreamConfig
from ragstream.documents.chunk_builder import build_chunks
from ragstream.documents.chunkers import chunk_document
from ragstream.documents.loaders import load_file
from ragstream.errors import DocumentError, DocumentNotFoundError, EmbeddingFailureError, EmptyDocumentError
from ragstream.models import Chunk, FileFailure, IngestReport, LoadedDocument
from ragstream.providers.embedders.base import Embedder
from ragstream.store.base import VectorStore
from ragstream.store.catalog import Catalog
from ragstream.store.visibility import Visibility

ProgressCallback = Callable[[str, str], None]
"""Called as ``progress(outcome, source)`` after each document: processed, skipped or failed."""


class Ingestor:
    """Ingest, delete and reindex documents."""

    def __init__(
        self,
        config: RagstreamConfig,
        catalog: Catalog,
        store: VectorStore,
        embedder: Callable[[], Embedder],
        visibility: Visibility,
        on_change: Callable[[], None] = lambda: None,
    ) -> None:
        self._config = config
        self._catalog = catalog
        self._store = store
        self._embedder = embedder
        self._visibility = visibility
        self._on_change = on_change

    # -- public operations ---------------------------------------------------------------------

    def ingest_paths(
        self, paths: Iterable[str | Path], *, metadata: dict[str, Any] | None = None, progress: ProgressCallback | None = None
    ) -> IngestReport:
        """Ingest files and folders (recursively); each bad file is reported and skipped."""
        report = _new_report()
        started = time.perf_counter()
        for path in expand_paths(paths):
            try:
                doc = load_file(path, self._config, metadata=metadata)
            except (DocumentError, OSError) as error:
                _fail(report, str(path), error, progress)
                continue
            self._ingest_one(doc, report, force=False, progress=progress)
        return self._finish(report, started)

    def ingest_documents(
        self, docs: Iterable[LoadedDocument], *, force: bool = False, progress: ProgressCallback | None = None
    ) -> IngestReport:
        """Ingest already-loaded documents (upsert by document_id, unchanged ones skipped)."""
        report = _new_report()
        started = time.perf_counter()
        for doc in docs:
            self._ingest_one(doc, report, force=force, progress=progress)
        return self._finish(report, started)

    def delete(self, document_id: str) -> None:
        """Remove a document and purge every one of its chunks."""
        record = self._catalog.get(document_id)
        if record is None:
            raise DocumentNotFoundError(f"no document with id {document_id!r}")
        intent = self._catalog.add_intent(document_id, None, record.generation)
        self._visibility.hide(record.generation)
        self._catalog.remove_document(document_id)
        self._store.delete_generation(document_id, record.generation)
        self._store.flush()
        self._catalog.clear_intent(intent)
        self._visibility.show(record.generation)
        self._on_change()

    def reindex(self, *, progress: ProgressCallback | None = None) -> IngestReport:
        """Re-chunk and re-embed every document from its stored text under the current settings."""
        docs = (self._catalog.stored_document(record.document_id) for record in self._catalog.list())
        return self.ingest_documents((doc for doc in docs if doc is not None), force=True, progress=progress)

    def stale_documents(self) -> list[str]:
        """Documents indexed under other chunking or embedding settings (they need a reindex)."""
        fingerprint = self._config.index_fingerprint()
        return [record.document_id for record in self._catalog.list() if record.fingerprint != fingerprint]

    def recover(self) -> int:
        """Finish or roll back operations a crash interrupted; returns how many were repaired."""
        intents = self._catalog.intents()
        live = self._catalog.live_generations()
        for intent_id, document_id, new_generation, old_generation in intents:
            for generation in (new_generation, old_generation):
                if generation is not None and live.get(document_id) != generation:
                    self._store.delete_generation(document_id, generation)
            self._store.flush()
            self._catalog.clear_intent(intent_id)
        if intents:
            self._on_change()
        return len(intents)

    # -- one document --------------------------------------------------------------------------

    def _ingest_one(self, doc: LoadedDocument, report: IngestReport, *, force: bool, progress: ProgressCallback | None) -> None:
        existing = self._catalog.get(doc.document_id)
        fingerprint = self._config.index_fingerprint()
        if not force and existing and existing.checksum == doc.checksum and existing.fingerprint == fingerprint:
            report.documents_skipped += 1
            report.document_ids.append(doc.document_id)
            if progress:
                progress("skipped", doc.source)
            return
        duplicates = [r.source for r in self._catalog.find_by_checksum(doc.checksum) if r.document_id != doc.document_id]
        if duplicates:
            report.warnings.append(f"{doc.source}: same content as {', '.join(duplicates)}")
        try:
            self._write_version(doc, existing.generation if existing else None, fingerprint, report)
        except (DocumentError, EmbeddingFailureError) as error:
            _fail(report, doc.source, error, progress)
            return
        report.documents_processed += 1
        report.document_ids.append(doc.document_id)
        if progress:
            progress("processed", doc.source)

    def _write_version(self, doc: LoadedDocument, old_generation: int | None, fingerprint: str, report: IngestReport) -> None:
        embedder = self._embedder()
        pieces = chunk_document(doc, self._config.chunking, embedder.count_tokens)
        if not pieces:
            raise EmptyDocumentError(f"{doc.source}: no text left after chunking")
        generation = self._catalog.next_generation()
        ingested_at = datetime.now(timezone.utc).isoformat(timespec="seconds")
        chunks = build_chunks(doc, pieces, generation=generation, created_at=ingested_at)
        vectors = self._embed(embedder, chunks, report)

        intent = self._catalog.add_intent(doc.document_id, generation, old_generation)
        self._visibility.hide(generation)
        self._store.upsert(chunks, vectors, generation)
        self._store.flush()
        self._catalog.commit_document(doc, generation=generation, chunk_count=len(chunks), fingerprint=fingerprint, ingested_at=ingested_at)
        self._visibility.switch(show=generation, hide=old_generation)
        if old_generation is not None:
            self._store.delete_generation(doc.document_id, old_generation)
            self._store.flush()
        self._catalog.clear_intent(intent)
        self._visibility.show(old_generation)
        report.chunks_written += len(chunks)

    def _embed(self, embedder: Embedder, chunks: Sequence[Chunk], report: IngestReport) -> np.ndarray:
        hashes = [chunk.metadata.content_hash for chunk in chunks]
        cached = self._catalog.cached_vectors(embedder.model_id, hashes)
        missing = [i for i, content_hash in enumerate(hashes) if content_hash not in cached]
        report.embedding_cache_hits += len(chunks) - len(missing)
        if missing:
            started = time.perf_counter()
            fresh = embedder.embed_documents([chunks[i].text for i in missing])
            report.embedding_seconds += time.perf_counter() - started
            report.embedding_count += len(missing)
            new_items = {hashes[i]: vector for i, vector in zip(missing, fresh, strict=True)}
            self._catalog.cache_vectors(embedder.model_id, new_items.items())
            cached.update(new_items)
        return np.vstack([cached[content_hash] for content_hash in hashes])

    def _finish(self, report: IngestReport, started: float) -> IngestReport:
        if report.documents_processed:
            self._store.maybe_optimize()
            self._on_change()
        report.duration_seconds = time.perf_counter() - started
        return report


def expand_paths(paths: Iterable[str | Path]) -> Iterator[Path]:
    """Files as given, folders walked recursively in sorted order, hidden entries skipped."""
    for raw in paths:
        path = Path(raw)
        if path.is_dir():
            for child in sorted(path.rglob("*")):
                relative = child.relative_to(path).parts
                if child.is_file() and not any(part.startswith(".") for part in relative):
                    yield child
        else:
            yield path


def _new_report() -> IngestReport:
    return IngestReport(job_id=str(uuid.uuid4()))


def _fail(report: IngestReport, source: str, error: Exception, progress: ProgressCallback | None) -> None:
    code = getattr(error, "code", "error")
    message = getattr(error, "message", str(error))
    report.failures.append(FileFailure(source=source, error_type=type(error).__name__, code=code, message=message))
    report.documents_failed += 1
    if progress:
        progress("failed", source)
