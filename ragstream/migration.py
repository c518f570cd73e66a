"""Copy an index to another backend without re-embedding (``ragstream migrate --to URL``).

What is copied: every live document version (its catalog record, its stored text, its chunks
with their stored dense vectors, under its own generation number), the embedding cache and the
conversations. BM25 vectors are recomputed by the target store from the chunk text (the same
tokenizer in every backend). Nothing is embedded.

Resumable: documents are written to the target in batches under the target's own write-intent
protocol (docs/consistency.md): intents first, then the points, then one catalog transaction makes
the batch live. A copy killed at any moment leaves each document either committed in the target or
rolled back by the target's recovery when it is opened again; a second run skips every document
the target already holds whole at the source's generation (and rewrites one whose points are
missing). The target carries a ``migration_in_progress``
setting (1 until a verification passes, then 0), so a target made by a migration is told apart from
an unrelated, non-empty one (refused); migrating again into an earlier copy brings it up to date.

Verified: at the end, counts and SHA-256 checksums of the documents (records and stored text), the
chunks (ids, text, metadata), the embedding cache and the conversations are computed on both sides
and must be equal; dense vectors are compared after L2 normalisation (backends may store them
normalised) within ``store.migrate.vector_tolerance``.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ragstream.config import MigrateConfig, RagstreamConfig
from ragstream.errors import RagstreamError
from ragstream.models import Chunk, DocumentRecord
from ragstream.store.base import VectorStore
from ragstream.store.catalog_base import Catalog, DocumentRegistry, DocumentVersion, FeedbackRow, TurnRow

MigrationProgress = Callable[[str, int, int], None]
"""Called as ``progress(stage, done, total)`` while copying (stage: documents, embeddings, conversations)."""

IN_PROGRESS = "migration_in_progress"
"""Target setting: 1 while a migration into it has not verified, 0 once one has (absent: not a migration target)."""


class MigrationError(RagstreamError):
    """The migration cannot start or continue (bad target URL, target not empty, same index)."""

    code = "migration_error"


@dataclass(frozen=True)
class Check:
    """One verified part of the index: counts and checksums on both sides."""

    name: str
    source_count: int
    target_count: int
    source_checksum: str
    target_checksum: str

    @property
    def ok(self) -> bool:
        """Whether both sides agree."""
        return self.source_count == self.target_count and self.source_checksum == self.target_checksum


@dataclass
class MigrationReport:
    """What a migration copied, and its verification."""

    target: str
    documents_copied: int = 0
    documents_already_there: int = 0
    documents_removed: int = 0
    chunks_copied: int = 0
    embeddings_copied: int = 0
    turns_copied: int = 0
    feedback_copied: int = 0
    checks: list[Check] = field(default_factory=list)
    vectors_compared: int = 0
    max_vector_difference: float = 0.0
    vector_tolerance: float = 0.0

    @property
    def ok(self) -> bool:
        """Whether every check passed (the copy is complete and equal)."""
        return bool(self.checks) and all(check.ok for check in self.checks) \
            and self.max_vector_difference <= self.vector_tolerance


@dataclass(frozen=True)
class Side:
    """One index: its catalog (every role of it is copied) and vector store."""

    catalog: Catalog
    store: VectorStore


def target_config(config: RagstreamConfig, to: str, *, data_dir: Path | None, collection: str | None,
                  dimensions: int) -> RagstreamConfig:
    """The config that opens the migration target named by ``to``.

    ``to`` is a folder (the embedded qdrant_edge backend, catalog and store in it), ``qdrant:FOLDER``
    (the qdrant backend in qdrant-client's local mode, catalog beside it), ``http(s)://host:6333``
    (a Qdrant server; its SQLite catalog goes to ``data_dir``, which is then required) or
    ``postgresql://...`` (the postgres backend). ``collection`` names the Qdrant collection.
    """
    store = config.store.model_dump()
    store["migrate"] = config.store.migrate.model_dump()
    if collection:
        store["qdrant"] = {**store["qdrant"], "collection": collection}
    if to.startswith(("postgresql://", "postgres://")):
        store.update(backend="postgres", url=to)
        target_dir = data_dir or Path(config.data_dir)  # the postgres backend keeps nothing of the index there
    elif to.startswith(("http://", "https://")):
        if data_dir is None:
            raise MigrationError(f"a Qdrant server target keeps its catalog in a data directory: give one for {to}")
        store.update(backend="qdrant", url=to)
        target_dir = data_dir
    elif to.startswith("qdrant:"):
        target_dir = Path(to.removeprefix("qdrant:")).expanduser()
        store.update(backend="qdrant", url=str(target_dir / "qdrant"))
    else:
        target_dir = Path(to).expanduser()
        store.update(backend="qdrant_edge", url=None)
    if store["backend"] == config.store.backend and store.get("url") == config.store.url \
            and target_dir.resolve() == Path(config.data_dir).resolve():
        raise MigrationError(f"{to} is the index being migrated")
    embedding = {**config.embedding.model_dump(), "dimensions": dimensions}
    return config.model_copy(update={
        "data_dir": target_dir,
        "store": type(config.store).model_validate(store),
        "embedding": type(config.embedding).model_validate(embedding),
    })


class Migration:
    """Copies the live versions of ``source`` into ``target`` and verifies the copy."""

    def __init__(self, source: Side, target: Side, config: MigrateConfig, *, vector_size: int,
                 progress: MigrationProgress | None = None) -> None:
        self._source = source
        self._target = target
        self._config = config
        self._vector_size = vector_size
        self._progress = progress or (lambda stage, done, total: None)

    def run(self, records: Sequence[DocumentRecord], max_generation: int, report: MigrationReport) -> MigrationReport:
        """Copy ``records`` (the source's live documents at one snapshot whose generations are at most
        ``max_generation``), the embedding cache and the conversations; then verify."""
        self._prepare(records, max_generation, report)
        self._copy_collections()
        self._copy_documents(records, report)
        self._copy_roots()
        report.embeddings_copied = self._copy_embeddings()
        report.turns_copied = self._copy_turns()
        report.feedback_copied = self._copy_feedback()
        self.verify(records, report)
        if report.ok:
            self._target.catalog.settings.set_setting(IN_PROGRESS, 0)
        return report

    # -- copying ---------------------------------------------------------------------------------

    def _prepare(self, records: Sequence[DocumentRecord], max_generation: int, report: MigrationReport) -> None:
        """Refuse an unrelated non-empty target; mark it in progress; drop documents the source lost."""
        target = self._target.catalog
        present = target.documents.list()
        if present and target.settings.setting(IN_PROGRESS) is None:
            raise MigrationError(f"the target {report.target} already holds {len(present)} documents "
                                 "and was not made by ragstream migrate; use an empty target")
        target.settings.set_setting(IN_PROGRESS, 1)
        target.settings.set_setting("vector_size", self._vector_size)
        target.versions.raise_generation(max_generation)
        wanted = {record.document_id for record in records}
        for record in present:
            if record.document_id not in wanted:  # deleted from the source since an interrupted run
                [intent] = target.versions.add_intents([(record.document_id, None, record.generation)])
                target.documents.remove_document(record.document_id)
                self._target.store.delete_generation(record.document_id, record.generation)
                self._target.store.flush()
                target.versions.clear_intents([intent])
                report.documents_removed += 1

    def _copy_roots(self) -> None:
        """The synced roots' registry (their documents carry their root already) and the collection each one's
        documents join; a watcher's lease stays behind."""
        for root in self._source.catalog.roots.roots():
            self._target.catalog.roots.record_sync(root.root, root.last_sync_at or "", root.last_summary)
            self._target.catalog.collections.set_root_collection(
                root.root, self._source.catalog.collections.root_collection(root.root))

    def _copy_collections(self) -> None:
        """The collections under their own ids (the documents' memberships come with the documents)."""
        target = self._target.catalog.collections
        for collection in self._source.catalog.collections.list():
            if target.get(collection.collection_id) is None:
                target.create(collection)
            else:
                target.update(collection)

    def _copy_documents(self, records: Sequence[DocumentRecord], report: MigrationReport) -> None:
        batch: list[tuple[DocumentRecord, int | None, list[tuple[Chunk, np.ndarray]]]] = []
        chunks = reported = 0
        for done, record in enumerate(records, start=1):
            existing = self._target.catalog.documents.get(record.document_id)
            if existing is not None and existing.generation == record.generation and self._target.store.count(
                    {"document_id": record.document_id, "generation": record.generation}) == record.chunk_count:
                report.documents_already_there += 1
            else:
                points = self._source.store.points_of(record.document_id, record.generation)
                if len(points) != record.chunk_count:
                    raise MigrationError(f"the source store holds {len(points)} of the {record.chunk_count} chunks of "
                                         f"{record.source} (generation {record.generation}); reindex it first")
                batch.append((record, existing.generation if existing else None, points))
                chunks += len(points)
            if batch and (chunks >= self._config.batch_chunks or done == len(records)):
                self._write_batch(batch, report)
                batch, chunks = [], 0
                self._progress("documents", done, len(records))
                reported = done
        if reported != len(records) or not records:
            self._progress("documents", len(records), len(records))

    def _write_batch(self, batch: list[tuple[DocumentRecord, int | None, list[tuple[Chunk, np.ndarray]]]],
                     report: MigrationReport) -> None:
        """The ingest write protocol with the source's generations: intents, points, one switch, old points gone."""
        catalog, store = self._target.catalog, self._target.store
        intents = catalog.versions.add_intents([(record.document_id, record.generation, old) for record, old, _ in batch])
        versions = []
        for record, _, points in batch:
            store.upsert([chunk for chunk, _ in points], np.stack([vector for _, vector in points]), record.generation)
            doc = self._source.catalog.documents.stored_document(record.document_id)
            if doc is None:
                raise MigrationError(f"{record.source} was deleted from the source during the migration")
            versions.append(DocumentVersion(doc.model_copy(update={"collections": tuple(record.collections)}), record.generation,
                                            record.chunk_count, record.fingerprint, record.ingested_at,
                                            record.first_ingested_at))
        store.flush()
        catalog.documents.commit_documents(versions)
        stale = [(record.document_id, old) for record, old, _ in batch if old is not None and old != record.generation]
        for document_id, old in stale:
            store.delete_generation(document_id, old)
        if stale:
            store.flush()
        catalog.versions.clear_intents(intents)
        report.documents_copied += len(batch)
        report.chunks_copied += sum(len(points) for _, _, points in batch)

    def _copy_embeddings(self) -> int:
        def write(page: list[Any]) -> None:
            by_model: dict[str, list[tuple[str, np.ndarray]]] = {}
            for model_id, content_hash, vector in page:
                by_model.setdefault(model_id, []).append((content_hash, vector))
            for model_id, items in by_model.items():
                self._target.catalog.cache.cache_vectors(model_id, items)

        return self._copy_pages("embeddings", self._source.catalog.migration.embedding_rows,
                                lambda row: (row[0], row[1]), write)

    def _copy_turns(self) -> int:
        return self._copy_pages("conversations", self._source.catalog.migration.turn_rows, _turn_key,
                                self._target.catalog.migration.import_turns)

    def _copy_feedback(self) -> int:
        """Every answer given, with its rating, citation opens and the collections it drew on (docs/feedback.md)."""
        return self._copy_pages("feedback", self._source.catalog.feedback.feedback_rows, _turn_key,
                                self._target.catalog.feedback.import_feedback)

    def _copy_pages(self, label: str, read: Callable[[Any, int], list[Any]], key: Callable[[Any], Any],
                    write: Callable[[list[Any]], None]) -> int:
        """Copy ``read``'s rows page by page (in ``key`` order) into ``write``, reporting progress as ``label``."""
        copied = 0
        for page in _pages(read, self._config.page_rows, key=key):
            write(page)
            copied += len(page)
            self._progress(label, copied, 0)
        return copied

    # -- verifying -------------------------------------------------------------------------------

    def verify(self, records: Sequence[DocumentRecord], report: MigrationReport) -> None:
        """Compare both sides: counts and checksums of every part, vectors within the tolerance."""
        source, target = self._source, self._target
        target_records = target.catalog.documents.list()
        report.checks = [
            _check("documents", _documents_digest(source.catalog.documents, records),
                   _documents_digest(target.catalog.documents, target_records)),
            _check("chunks", *self._chunks_digests(records, target_records, report)),
            _check("embedding cache", _rows_digest(source.catalog.migration.embedding_rows, self._config.page_rows),
                   _rows_digest(target.catalog.migration.embedding_rows, self._config.page_rows)),
            _check("conversation turns", _rows_digest(source.catalog.migration.turn_rows, self._config.page_rows, _turn_key),
                   _rows_digest(target.catalog.migration.turn_rows, self._config.page_rows, _turn_key)),
            _check("answer feedback", _rows_digest(source.catalog.feedback.feedback_rows, self._config.page_rows, _turn_key),
                   _rows_digest(target.catalog.feedback.feedback_rows, self._config.page_rows, _turn_key)),
        ]
        report.vector_tolerance = self._config.vector_tolerance

    def _chunks_digests(self, records: Sequence[DocumentRecord], target_records: Sequence[DocumentRecord],
                        report: MigrationReport) -> tuple[tuple[int, str], tuple[int, str]]:
        """Digests of the chunks of each side's live versions; vectors compared pairwise on the way."""
        source_digest, target_digest = hashlib.sha256(), hashlib.sha256()
        source_count = target_count = 0
        target_generations = {record.document_id: record.generation for record in target_records}
        for record in sorted(records, key=lambda record: record.document_id):
            ours = self._source.store.points_of(record.document_id, record.generation)
            generation = target_generations.get(record.document_id)
            theirs = self._target.store.points_of(record.document_id, generation) if generation is not None else []
            source_count += _digest_points(source_digest, ours)
            target_count += _digest_points(target_digest, theirs)
            for (_, vector), (_, copied) in zip(ours, theirs, strict=False):
                report.vectors_compared += 1
                difference = float(np.max(np.abs(_unit(vector) - _unit(copied)))) if vector.shape == copied.shape else np.inf
                report.max_vector_difference = max(report.max_vector_difference, difference)
        return (source_count, source_digest.hexdigest()), (target_count, target_digest.hexdigest())


def _pages(read: Callable[[Any, int], list[Any]], size: int, key: Callable[[Any], Any]) -> Iterator[list[Any]]:
    after = None
    while True:
        page = read(after, size)
        if not page:
            return
        yield page
        after = key(page[-1])


def _check(name: str, source: tuple[int, str], target: tuple[int, str]) -> Check:
    return Check(name, source[0], target[0], source[1], target[1])


def _documents_digest(documents: DocumentRegistry, records: Sequence[DocumentRecord]) -> tuple[int, str]:
    digest = hashlib.sha256()
    for record in sorted(records, key=lambda record: record.document_id):
        doc = documents.stored_document(record.document_id)
        stored = doc.model_dump(mode="json") if doc is not None else None
        digest.update(_canonical({"record": record.model_dump(mode="json"), "stored": stored}))
    return len(records), digest.hexdigest()


def _digest_points(digest: Any, points: Sequence[tuple[Chunk, np.ndarray]]) -> int:
    for chunk, _ in points:
        digest.update(_canonical(chunk.model_dump(mode="json")))
    return len(points)


def _turn_key(row: TurnRow | FeedbackRow) -> str:
    return row.message_id


def _embedding_key(row: tuple[str, str, np.ndarray]) -> tuple[str, str]:
    return row[0], row[1]


def _rows_digest(read: Callable[[Any, int], list[Any]], size: int,
                 key: Callable[[Any], Any] = _embedding_key) -> tuple[int, str]:
    digest = hashlib.sha256()
    count = 0
    for page in _pages(read, size, key=key):
        for row in page:
            digest.update(_canonical([item.tobytes().hex() if isinstance(item, np.ndarray) else item for item in row]))
        count += len(page)
    return count, digest.hexdigest()


def _canonical(value: Any) -> bytes:
    return json.dumps(value, sort_keys=True, separators=(",", ":")).encode() + b"\n"


def _unit(vector: np.ndarray) -> np.ndarray:
    vector = np.asarray(vector, dtype=np.float64)
    norm = np.linalg.norm(vector)
    return vector / norm if norm else vector
