"""The embedded default store: Qdrant Edge, in process, persistent in the data directory.

One shard holds a named dense vector (cosine) and a BM25 sparse vector whose IDF the engine
applies at query time. Payload indexes cover the metadata filters. Two traps of qdrant-edge 0.9:
booleans never match ``MatchValue(True)``, so flags are stored as 0/1 integers; and the HNSW index
is built only by an explicit ``optimize()``, which :meth:`QdrantEdgeStore.maybe_optimize` runs
once the shard holds ``store.optimize_min_points`` points (exact search is fast below that) and
``store.optimize_min_new_points`` were added since the last build. ``optimize()`` holds the GIL for
the whole build, so it runs in a child process on a copy of the shard (``hnsw_build.py``): readers
keep searching the live shard, writers wait, and the built copy is loaded beside it and swapped in
by replacing one handle (readers never wait for a load).
"""

from __future__ import annotations

import io
import logging
import subprocess
import tempfile
import threading
from collections.abc import Mapping, Sequence
from itertools import islice
from pathlib import Path
from typing import Any

import numpy as np
import qdrant_edge as qe

from ragstream.config import StoreConfig
from ragstream.errors import InsufficientStorageError, VectorDBUnavailableError, VectorDBWriteError
from ragstream.models import COLLECTIONS_FIELD, DEFAULT_COLLECTION_ID, OWNER_FIELD, SHARED_OWNER, Chunk
from ragstream.store import hnsw_build
from ragstream.store.base import RANKING_FIELDS, Filters, RankedId, Snapshot
from ragstream.store.disk import free_bytes, unallocated_bytes
from ragstream.store.payload import FLAG_FIELDS, filter_value, from_payload, payload_key, to_payload

DENSE = "dense"
SPARSE = "bm25"
KEYWORD_INDEXES = ("document_id", "source", "title", "section", "chapter", "header_path", "mime", OWNER_FIELD,
                   COLLECTIONS_FIELD)
INTEGER_INDEXES = ("generation", "page", "chunk_index", *FLAG_FIELDS)
_UPSERT_BATCH = 256
_COPY_BLOCK_BYTES = 1024 * 1024
_RANKING_PAYLOAD = qe.PayloadSelector.Include(RANKING_FIELDS)
logger = logging.getLogger("ragstream.store")


class QdrantEdgeStore:
    """:class:`~ragstream.store.base.VectorStore` over a Qdrant Edge shard at ``path``."""

    def __init__(self, path: Path, dimensions: int, config: StoreConfig, *, read_only: bool = False,
                 folder: Path | None = None) -> None:
        """Open (or create) the shard at ``path``. ``read_only``: Qdrant Edge writes to its files while it
        loads (a full disk makes that a SIGBUS), so the shard is loaded from a sparse scratch copy in
        ``store.read_only_copy_dir`` instead, and every write raises InsufficientStorageError. ``folder``: open
        this built copy beside ``path`` (not committed yet: :mod:`edge_process` loads it in a second process)
        instead of the folder in use, recovering nothing."""
        self._config = config
        self.read_only = read_only
        self._lock = threading.RLock()
        """Guards the shard handle: every read and write holds it for one call."""
        self._write_lock = threading.RLock()
        """Serialises writers; an index build holds it (not ``_lock``) for its duration, so reads go on."""
        self._scratch: tempfile.TemporaryDirectory[str] | None = None
        self._origin = path
        """Where the shard lives (a read-only store searches a copy of it)."""
        if folder is None and not read_only:
            hnsw_build.recover(path)
        folder = folder or hnsw_build.active_path(path)
        if read_only and not (folder / "edge_config.json").exists():
            raise InsufficientStorageError("cannot create a new index: the disk is full (limits.min_free_disk_bytes)")
        if read_only:
            self._scratch = tempfile.TemporaryDirectory(prefix="ragstream-read-only-", dir=config.read_only_copy_dir)
            path = folder = _sparse_copy(folder, Path(self._scratch.name) / path.name)
            logger.warning("disk full: the vector store is searched from a read-only copy; writes fail until there is room")
        self._path = path
        """The shard's name: the pointer, the build state and built folders sit beside it."""
        self._folder = folder
        """The shard folder in use: ``path`` itself until an index build swaps in ``path.hnsw-<n>``."""
        self._bm25 = qe.Bm25(
            qe.Bm25Config(k=config.bm25_k1, b=config.bm25_b, avg_len=config.bm25_avg_len, language=config.bm25_language)
        )
        self._edge_config = edge_config = qe.EdgeConfig(
            vectors={DENSE: qe.EdgeVectorParams(size=dimensions, distance=qe.Distance.Cosine)},
            sparse_vectors={SPARSE: qe.EdgeSparseVectorParams(modifier=qe.Modifier.Idf)},
            hnsw_config=qe.HnswIndexConfig(m=config.edge_hnsw_m, ef_construct=config.edge_hnsw_ef_construct,
                                           full_scan_threshold=config.edge_hnsw_full_scan_kb,
                                           max_indexing_threads=config.edge_indexing_threads),
        )
        try:
            if (folder / "edge_config.json").exists() or any(folder.glob("segments*")):
                self._shard = qe.EdgeShard.load(str(folder), edge_config)
                self._add_owner_index()
                self._add_collections_index()
                self._add_flag_indexes()
            else:
                folder.mkdir(parents=True, exist_ok=True)
                self._shard = qe.EdgeShard.create(str(folder), edge_config)
                self._create_indexes()
        except Exception as error:
            if "WouldBlock" in str(error):
                raise VectorDBUnavailableError(
                    f"the index at {folder} is open in another ragstream process (a running server?); "
                    "stop it or use that process's HTTP API"
                ) from error
            raise VectorDBUnavailableError(f"cannot open Qdrant Edge shard at {folder}: {error}") from error
        self._newest_generation = self._stored_newest_generation()
        self._places: dict[str, tuple[str, int]] = {}
        """Chunk id -> (document_id, chunk_index), oldest first: a ranking reads only ids and scores."""
        self._places_lock = threading.Lock()

    def _stored_newest_generation(self) -> int:
        """The highest generation any stored point carries (0 for an empty shard)."""
        order = qe.OrderBy("generation", direction=qe.Direction.Desc)
        records, _ = self._shard.scroll(qe.ScrollRequest(limit=1, order_by=order, with_payload=True))
        return int((records[0].payload or {}).get("generation", 0)) if records else 0

    def _add_owner_index(self) -> None:
        """Shards written before documents had owners: index ``owner`` and mark every point shared,
        as the catalog's migration marks their documents (once; a crash midway repeats it)."""
        if OWNER_FIELD in self._shard.info().payload_schema:
            return
        self._shard.update(qe.UpdateOperation.set_payload_by_filter(
            qe.Filter(must=[qe.IsEmptyCondition(OWNER_FIELD)]), {OWNER_FIELD: SHARED_OWNER}))
        self._shard.update(qe.UpdateOperation.create_field_index(OWNER_FIELD, qe.PayloadSchemaType.Keyword))
        self._shard.flush()

    def _add_collections_index(self) -> None:
        """Shards written before collections: index ``collections`` and put every point in the default collection,
        as the catalog's migration puts their documents (once; a crash midway repeats it). Nothing is re-embedded."""
        if COLLECTIONS_FIELD in self._shard.info().payload_schema:
            return
        self._shard.update(qe.UpdateOperation.set_payload_by_filter(
            qe.Filter(must=[qe.IsEmptyCondition(COLLECTIONS_FIELD)]), {COLLECTIONS_FIELD: [DEFAULT_COLLECTION_ID]}))
        self._shard.update(qe.UpdateOperation.create_field_index(COLLECTIONS_FIELD, qe.PayloadSchemaType.Keyword))
        self._shard.flush()

    def _add_flag_indexes(self) -> None:
        """Shards written before a flag existed (``ocr``): index it. Their points lack it until a reindex rewrites them
        (the text pipeline version changed with it, so those documents show as stale)."""
        schema = self._shard.info().payload_schema
        missing = [field for field in FLAG_FIELDS if field not in schema]
        for field in missing:
            self._shard.update(qe.UpdateOperation.create_field_index(field, qe.PayloadSchemaType.Integer))
        if missing:
            self._shard.flush()

    def _create_indexes(self) -> None:
        for field in KEYWORD_INDEXES:
            self._shard.update(qe.UpdateOperation.create_field_index(field, qe.PayloadSchemaType.Keyword))
        for field in INTEGER_INDEXES:
            self._shard.update(qe.UpdateOperation.create_field_index(field, qe.PayloadSchemaType.Integer))

    # -- writes ------------------------------------------------------------------------------

    def _check_writable(self) -> None:
        if self._scratch is not None:
            raise InsufficientStorageError("the index was opened read-only (the disk was full); it opens for writing "
                                           "again once the disk has room")

    def reopen_writable(self, min_free_bytes: int) -> None:
        """Opened read-only (a full disk): load the shard itself for writing and drop the scratch copy, once the
        disk has :func:`room_to_load` plus ``min_free_bytes`` free (else InsufficientStorageError: loading into a
        full disk is a SIGBUS). Readers keep searching the copy while the shard loads, then the handle is swapped
        (the data is the same: nothing was written meanwhile). VectorDBUnavailableError when it does not load."""
        with self._write_lock:
            if self._scratch is None:
                return
            needed = room_to_load(self._origin) + min_free_bytes
            free = free_bytes(self._origin)
            if free < needed:
                raise InsufficientStorageError(
                    f"the index stays read-only: {free} bytes are free and opening its vector store for writing "
                    f"needs {needed} (what loading it may allocate plus limits.min_free_disk_bytes)")
            hnsw_build.recover(self._origin)
            folder = hnsw_build.active_path(self._origin)
            try:
                fresh = self._load(folder)
            except RuntimeError as error:
                raise VectorDBUnavailableError(f"cannot open the index for writing: {error}") from error
            with self._lock:
                old, scratch = self._shard, self._scratch
                self._shard, self._path, self._folder, self._scratch = fresh, self._origin, folder, None
                self.read_only = False
                self._add_owner_index()
                self._add_collections_index()
            old.close()
            scratch.cleanup()
            logger.warning("vector store open for writing again: the disk has room")

    def upsert(self, chunks: Sequence[Chunk], vectors: np.ndarray, generation: int) -> None:
        self._check_writable()
        points = [
            qe.Point(
                id=chunk.chunk_id,
                vector={DENSE: vector.tolist(), SPARSE: self._bm25.embed_document(chunk.text)},
                payload=to_payload(chunk, generation),
            )
            for chunk, vector in zip(chunks, vectors, strict=True)
        ]
        try:
            with self._write_lock, self._lock:
                self._newest_generation = max(self._newest_generation, generation)
                for start in range(0, len(points), _UPSERT_BATCH):
                    self._shard.update(qe.UpdateOperation.upsert_points(points[start : start + _UPSERT_BATCH]))
        except Exception as error:
            raise VectorDBWriteError(f"Qdrant Edge upsert failed: {error}") from error

    def delete_generation(self, document_id: str, generation: int) -> None:
        self._check_writable()
        condition = qe.Filter(must=[_match("document_id", document_id), _match("generation", generation)])
        try:
            with self._write_lock, self._lock:
                self._shard.update(qe.UpdateOperation.delete_points_by_filter(condition))
        except Exception as error:
            raise VectorDBWriteError(f"Qdrant Edge delete failed: {error}") from error

    def set_collections(self, document_id: str, collections: Sequence[str]) -> None:
        self._check_writable()
        condition = qe.Filter(must=[_match("document_id", document_id)])
        try:
            with self._write_lock, self._lock:
                self._shard.update(qe.UpdateOperation.set_payload_by_filter(condition, {COLLECTIONS_FIELD: list(collections)}))
        except Exception as error:
            raise VectorDBWriteError(f"Qdrant Edge payload update failed: {error}") from error

    def flush(self) -> None:
        with self._write_lock, self._lock:
            self._shard.flush()

    def prepare_build(self) -> tuple[str, str, int] | None:
        """When the policy says so, build the HNSW index of a copy (in a child process, readers unblocked) and place
        it beside the shard: (the built folder, the folder in use, the points indexed); None when there is
        nothing to build or the build failed (searches stay exact). Writers are held off meanwhile."""
        with self._write_lock:
            with self._lock:
                points = int(self._shard.info().points_count)
                if points < self._config.optimize_min_points or \
                        points - hnsw_build.last_build_points(self._path) < self._config.optimize_min_new_points:
                    return None
                self._shard.flush()
            try:
                built, _ = hnsw_build.build_copy(self._path, self._folder, self._config.optimize_timeout_seconds)
                folder = hnsw_build.place(self._path, built)
            except (OSError, RuntimeError, subprocess.TimeoutExpired) as error:
                logger.warning("HNSW build skipped; searches stay exact: %s", error)
                hnsw_build.recover(self._path)
                return None
            return str(folder), str(self._folder), points

    def maybe_optimize(self) -> bool:
        """Build the HNSW index (in a child process, readers unblocked) when the policy says so, and swap it in."""
        if self.read_only:
            return False
        with self._write_lock:
            prepared = self.prepare_build()
            if prepared is None:
                return False
            folder, points = Path(prepared[0]), prepared[2]
            try:
                fresh = self._load(folder)  # readers still search the old shard meanwhile
            except RuntimeError as error:
                logger.warning("HNSW build skipped; searches stay exact: %s", error)
                hnsw_build.recover(self._path)
                return False
            try:
                hnsw_build.commit(self._path, folder)
            except OSError as error:
                logger.warning("HNSW build not swapped in; searches stay exact: %s", error)
                fresh.close()
                hnsw_build.recover(self._path)
                return False
            with self._lock:  # the only pause readers see: one handle swap
                old, old_folder = self._shard, self._folder
                self._shard, self._folder = fresh, folder
            old.close()
            hnsw_build.discard(old_folder)
            try:
                hnsw_build.record_build(self._path, points)
            except OSError as error:
                logger.warning("could not record the HNSW build (the next one may come early): %s", error)
            return True

    def _load(self, folder: Path) -> Any:
        """The shard at ``folder``; its load failing is a ``RuntimeError``."""
        try:
            return qe.EdgeShard.load(str(folder), self._edge_config)
        except Exception as error:  # qdrant-edge raises its own exception types
            raise RuntimeError(f"cannot load the built shard at {folder}: {error}") from error

    # -- reads -------------------------------------------------------------------------------

    def search_dense(self, vector: np.ndarray, limit: int, filters: Filters | None,
                     snapshot: Snapshot) -> list[tuple[Chunk, float]]:
        return self._query(_dense_query(vector), limit, filters, snapshot)

    def search_bm25(self, text: str, limit: int, filters: Filters | None,
                    snapshot: Snapshot) -> list[tuple[Chunk, float]]:
        query = self._bm25_query(text)
        return self._query(query, limit, filters, snapshot) if query is not None else []

    def rank_dense(self, vector: np.ndarray, limit: int, filters: Filters | None,
                   snapshot: Snapshot) -> list[RankedId]:
        return self._ranked(self._points(_dense_query(vector), limit, filters, snapshot, False))

    def rank_bm25(self, text: str, limit: int, filters: Filters | None, snapshot: Snapshot) -> list[RankedId]:
        query = self._bm25_query(text)
        return self._ranked(self._points(query, limit, filters, snapshot, False)) if query is not None else []

    def _bm25_query(self, text: str) -> qe.Query | None:
        """The BM25 query of ``text``; None when no term of it is indexed (stopwords only)."""
        sparse = self._bm25.embed_query(text)
        return qe.Query.Nearest(sparse, using=SPARSE) if sparse.indices else None

    def _ranked(self, points: list[Any]) -> list[RankedId]:
        """Ids and scores with each chunk's place, from the place cache or read for the ids it lacks."""
        ids = [str(point.id) for point in points]
        places = self._places
        known = {chunk_id: places.get(chunk_id) for chunk_id in ids}  # read once: other threads evict
        found: dict[str, tuple[str, int]] = {}
        missing: list[Any] = [chunk_id for chunk_id, place in known.items() if place is None]  # point ids
        if missing:
            try:
                with self._lock:
                    records = self._shard.retrieve(missing, with_payload=_RANKING_PAYLOAD, with_vector=False)
            except Exception as error:
                raise VectorDBUnavailableError(f"Qdrant Edge retrieve failed: {error}") from error
            found = {str(record.id): (record.payload["document_id"], int(record.payload["chunk_index"]))
                     for record in records if record.payload}
        ranked = []
        for chunk_id, point in zip(ids, points, strict=True):
            place = known[chunk_id] or found.get(chunk_id)
            if place is not None:  # None: deleted since the query (no reader of its version is left)
                ranked.append(RankedId(chunk_id, float(point.score), *place))
        if found and self._config.place_cache_entries:
            with self._places_lock:
                places.update(found)
                for oldest in list(islice(places, max(0, len(places) - self._config.place_cache_entries))):
                    del places[oldest]
        return ranked

    def fetch(self, chunk_ids: Sequence[str]) -> dict[str, Chunk]:
        if not chunk_ids:
            return {}
        try:
            with self._lock:
                records = self._shard.retrieve(list(chunk_ids), with_payload=True, with_vector=False)
        except Exception as error:
            raise VectorDBUnavailableError(f"Qdrant Edge retrieve failed: {error}") from error
        return {str(record.id): from_payload(str(record.id), record.payload or {}) for record in records}

    def _query(self, query: Any, limit: int, filters: Filters | None, snapshot: Snapshot) -> list[tuple[Chunk, float]]:
        points = self._points(query, limit, filters, snapshot, True)
        return [(from_payload(str(point.id), point.payload or {}), float(point.score)) for point in points]

    def _points(self, query: Any, limit: int, filters: Filters | None, snapshot: Snapshot,
                with_payload: bool | qe.PayloadSelector) -> list[Any]:
        try:
            with self._lock:  # no upsert between the newest-generation check and the query
                newer_stored = self._newest_generation > snapshot.max_generation
                condition = _build_filter(filters, snapshot, newer_stored=newer_stored)
                return list(self._shard.query(qe.QueryRequest(limit=limit, query=query, filter=condition,
                                                              with_payload=with_payload)))
        except Exception as error:
            raise VectorDBUnavailableError(f"Qdrant Edge query failed: {error}") from error

    def count(self, filters: Filters | None = None) -> int:
        with self._lock:
            return int(self._shard.count(qe.CountRequest(filter=_build_filter(filters, None, newer_stored=False), exact=True)))

    def chunks_of(self, document_id: str, generation: int) -> list[Chunk]:
        condition = qe.Filter(must=[_match("document_id", document_id), _match("generation", generation)])
        chunks: list[Chunk] = []
        offset = None
        with self._lock:
            while True:
                records, offset = self._shard.scroll(
                    qe.ScrollRequest(offset=offset, limit=_UPSERT_BATCH, filter=condition, with_payload=True)
                )
                chunks.extend(from_payload(str(record.id), record.payload or {}) for record in records)
                if offset is None:
                    break
        return sorted(chunks, key=lambda chunk: chunk.metadata.chunk_index)

    def points_of(self, document_id: str, generation: int) -> list[tuple[Chunk, np.ndarray]]:
        condition = qe.Filter(must=[_match("document_id", document_id), _match("generation", generation)])
        points: list[tuple[Chunk, np.ndarray]] = []
        offset = None
        with self._lock:
            while True:
                records, offset = self._shard.scroll(qe.ScrollRequest(
                    offset=offset, limit=_UPSERT_BATCH, filter=condition, with_payload=True, with_vector=True))
                points.extend((from_payload(str(record.id), record.payload or {}), _dense_of(record.vector))
                              for record in records)
                if offset is None:
                    break
        return sorted(points, key=lambda point: point[0].metadata.chunk_index)

    def info(self) -> Mapping[str, Any]:
        with self._lock:
            info = self._shard.info()
            return {"backend": "qdrant_edge", "points": info.points_count, "segments": info.segments_count,
                    "indexed_vectors": info.indexed_vectors_count}

    def close(self) -> None:
        with self._lock:
            self._shard.close()
            if self._scratch is not None:
                self._scratch.cleanup()


def room_to_load(path: Path) -> int:
    """Disk bytes loading the shard at ``path`` may take: Qdrant Edge fills holes of its preallocated, sparse
    files as it loads (a one-document shard's first load took 106 MB of its 244 MB of holes), so the holes are
    the bound."""
    return unallocated_bytes(hnsw_build.active_path(path))


def _dense_query(vector: np.ndarray) -> qe.Query:
    return qe.Query.Nearest(np.asarray(vector, dtype=np.float32).tolist(), using=DENSE)


def _sparse_copy(source: Path, target: Path) -> Path:
    """Copy the directory tree ``source`` to ``target``, skipping runs of zeros (Qdrant's preallocated,
    mostly empty files stay sparse, so the copy takes about what the shard really uses)."""
    for item in sorted(source.rglob("*")):
        destination = target / item.relative_to(source)
        if item.is_dir():
            destination.mkdir(parents=True, exist_ok=True)
            continue
        destination.parent.mkdir(parents=True, exist_ok=True)
        with item.open("rb") as reader, destination.open("wb") as writer:
            while block := reader.read(_COPY_BLOCK_BYTES):
                if block.count(0) == len(block):
                    writer.seek(len(block), io.SEEK_CUR)
                else:
                    writer.write(block)
            writer.truncate()
    return target


def _dense_of(vector: Any) -> np.ndarray:
    """The dense vector of a record read with its vectors."""
    if not isinstance(vector, dict) or DENSE not in vector:
        raise VectorDBUnavailableError(f"Qdrant Edge returned no {DENSE!r} vector")
    return np.asarray(vector[DENSE], dtype=np.float32)


def _match(key: str, value: Any) -> qe.FieldCondition:
    value = filter_value(value)
    if isinstance(value, list):
        return qe.FieldCondition(key=key, match=qe.MatchAny(value))
    return qe.FieldCondition(key=key, match=qe.MatchValue(value))


def _build_filter(filters: Filters | None, snapshot: Snapshot | None, *, newer_stored: bool) -> qe.Filter | None:
    """The metadata filters, plus (with a snapshot) the generations it sees: none of its ``uncommitted``
    ones and, when the shard holds newer ones (``newer_stored``), none above its ``max_generation``.

    Both conditions use the indexed ``generation``; when no write happened since the snapshot was
    taken they are empty and the query runs unfiltered, as fast as before.
    """
    must: list[Any] = [_match(payload_key(key), value) for key, value in (filters or {}).items()]
    must_not: list[Any] = []
    if snapshot is not None:
        if newer_stored:
            must.append(qe.FieldCondition(key="generation", range=qe.RangeFloat(lte=snapshot.max_generation)))
        if snapshot.uncommitted:
            must_not.append(_match("generation", sorted(snapshot.uncommitted)))
    if not must and not must_not:
        return None
    return qe.Filter(must=must or None, must_not=must_not or None)
