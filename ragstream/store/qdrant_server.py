"""The ``qdrant`` store: a Qdrant server or cluster through ``qdrant-client`` (``pip install 'ragstream[qdrant]'``).

One collection holds a named dense vector (cosine) and a BM25 sparse vector with ``Modifier.IDF``,
so the server applies IDF over the whole collection at query time, as Qdrant Edge does in the
embedded store. The sparse vectors are computed in this process by the embedded store's own BM25
(``qdrant_edge.Bm25``: the same tokenizer, stopwords, stemmer, token hashing and ``k1``/``b``/average
length), so BM25 scores match the embedded store's exactly and no server-side inference model is
needed. Payloads are those of the embedded store (``ragstream.store.payload``), with payload indexes
on every filter field, on ``generation`` and on ``document_id``; user metadata fields get a payload
index the first time a chunk carries them.

``store.url`` is ``http(s)://host:6333`` for a server, or ``:memory:`` or a folder for
qdrant-client's local mode (pure Python, for tests and trials: payload indexes have no effect
there, so none are created, and every operation runs under one lock).

Fusion stays ragstream's own (``retrieval.fusion``): the default alpha fusion with neighbour pooling
has no server-side equivalent (docs/backends.md).
"""

from __future__ import annotations

import contextlib
import logging
import math
import threading
from collections.abc import Iterator, Mapping, Sequence
from importlib.metadata import version
from pathlib import Path
from typing import Any

import numpy as np
import qdrant_edge as qe

from ragstream.config import StoreConfig
from ragstream.errors import ConfigError, VectorDBUnavailableError, VectorDBWriteError
from ragstream.models import COLLECTIONS_FIELD, DEFAULT_COLLECTION_ID, Chunk
from ragstream.store.base import RANKING_FIELDS, Filters, RankedId, Snapshot
from ragstream.store.payload import filter_value, from_payload, payload_key, to_payload
from ragstream.store.qdrant_edge import DENSE, INTEGER_INDEXES, KEYWORD_INDEXES, SPARSE

try:
    from qdrant_client import QdrantClient, models
except ImportError as missing:  # the extra is not installed
    raise ConfigError("store.backend=qdrant needs qdrant-client: pip install 'ragstream[qdrant]'") from missing


logger = logging.getLogger("ragstream.store")


def is_local(url: str) -> bool:
    """Whether ``url`` names qdrant-client's local mode (``:memory:`` or a folder) rather than a server."""
    return not url.startswith(("http://", "https://"))


class QdrantServerStore:
    """:class:`~ragstream.store.base.VectorStore` over a collection of a Qdrant server (or local mode)."""

    read_only = False
    """A database server's disk is not this machine's: never opened read-only here."""

    def reopen_writable(self, min_free_bytes: int) -> None:
        """Nothing to do: never opened read-only."""

    def __init__(self, url: str, dimensions: int, config: StoreConfig) -> None:
        settings = config.qdrant
        self._config = config
        self._collection = settings.collection
        self._local = is_local(url)
        self._batch = settings.upsert_batch
        # Local mode is a plain Python object over SQLite: one caller at a time. A server takes concurrent requests.
        self._lock: contextlib.AbstractContextManager[Any] = threading.RLock() if self._local else contextlib.nullcontext()
        self._bm25 = qe.Bm25(
            qe.Bm25Config(k=config.bm25_k1, b=config.bm25_b, avg_len=config.bm25_avg_len, language=config.bm25_language)
        )
        try:
            if not self._local:
                # The client's own version check runs in a thread and only warns; ours runs on open (_check_version).
                self._client = QdrantClient(url=url, api_key=settings.api_key, timeout=math.ceil(settings.timeout_seconds),
                                            prefer_grpc=settings.prefer_grpc, check_compatibility=False)
            elif url == ":memory:":
                self._client = QdrantClient(location=":memory:")
            else:
                Path(url).mkdir(parents=True, exist_ok=True)
                self._client = QdrantClient(path=url)
            self._indexed = self._open_collection(dimensions)
            if not self._local:
                _check_version(self._client.info().version, url)
        except BaseException as error:
            if hasattr(self, "_client"):  # release a local folder's lock at once
                self._client.close()
            if isinstance(error, (ConfigError, VectorDBUnavailableError)) or not isinstance(error, Exception):
                raise
            if "already accessed by another instance" in str(error):
                raise VectorDBUnavailableError(
                    f"the Qdrant local store at {url} is open in another ragstream process (a running server?); "
                    "stop it or use that process's HTTP API"
                ) from error
            raise VectorDBUnavailableError(f"cannot open Qdrant collection {self._collection!r} at {url}: {error}") from error

    def _open_collection(self, dimensions: int) -> set[str]:
        """Create the collection (and its payload indexes) if needed; the payload fields indexed so far."""
        if not self._client.collection_exists(self._collection):
            self._client.create_collection(
                self._collection,
                vectors_config={DENSE: models.VectorParams(size=dimensions, distance=models.Distance.COSINE)},
                sparse_vectors_config={SPARSE: models.SparseVectorParams(modifier=models.Modifier.IDF)},
            )
            indexed: set[str] = set()
            self._create_indexes(indexed, {field: models.PayloadSchemaType.KEYWORD for field in KEYWORD_INDEXES}
                                 | {field: models.PayloadSchemaType.INTEGER for field in INTEGER_INDEXES})
            return indexed
        info = self._client.get_collection(self._collection)
        vectors = info.config.params.vectors
        dense = vectors.get(DENSE) if isinstance(vectors, dict) else None
        sparse = info.config.params.sparse_vectors or {}
        if dense is None or SPARSE not in sparse:
            raise ConfigError(f"Qdrant collection {self._collection!r} was not created by ragstream "
                              f"(it lacks the {DENSE!r} or {SPARSE!r} vector); choose another store.qdrant.collection")
        if dense.size != dimensions:
            raise ConfigError(f"Qdrant collection {self._collection!r} holds {dense.size}-dimensional vectors but the "
                              f"embedder gives {dimensions}; use another collection or the embedder it was built with")
        indexed = set(info.payload_schema or {})
        if COLLECTIONS_FIELD not in indexed:  # a collection from before collections: every point in the default one
            self._client.set_payload(self._collection, payload={COLLECTIONS_FIELD: [DEFAULT_COLLECTION_ID]}, wait=True,
                                     points=models.Filter(must=[models.IsEmptyCondition(
                                         is_empty=models.PayloadField(key=COLLECTIONS_FIELD))]))
            self._create_indexes(indexed, {COLLECTIONS_FIELD: models.PayloadSchemaType.KEYWORD})
        return indexed

    def _create_indexes(self, indexed: set[str], fields: Mapping[str, models.PayloadSchemaType]) -> None:
        for field, schema in fields.items():
            if field in indexed:
                continue
            if not self._local:  # local mode has no payload indexes (qdrant-client warns and ignores them)
                self._client.create_payload_index(self._collection, field, field_schema=schema, wait=True)
            indexed.add(field)

    # -- writes ------------------------------------------------------------------------------

    def upsert(self, chunks: Sequence[Chunk], vectors: np.ndarray, generation: int) -> None:
        points = []
        for chunk, vector in zip(chunks, vectors, strict=True):
            sparse = self._bm25.embed_document(chunk.text)
            points.append(models.PointStruct(
                id=chunk.chunk_id,
                vector={DENSE: np.asarray(vector, dtype=np.float32).tolist(),
                        SPARSE: models.SparseVector(indices=list(sparse.indices), values=list(sparse.values))},
                payload=to_payload(chunk, generation),
            ))
        try:
            with self._lock:
                self._create_indexes(self._indexed, _extra_indexes(chunks))
                for start in range(0, len(points), self._batch):
                    self._client.upsert(self._collection, points[start : start + self._batch], wait=True)
        except Exception as error:
            raise VectorDBWriteError(f"Qdrant upsert failed: {error}") from error

    def delete_generation(self, document_id: str, generation: int) -> None:
        selector = models.FilterSelector(filter=models.Filter(must=[_match("document_id", document_id),
                                                                    _match("generation", generation)]))
        try:
            with self._lock:
                self._client.delete(self._collection, points_selector=selector, wait=True)
        except Exception as error:
            raise VectorDBWriteError(f"Qdrant delete failed: {error}") from error

    def set_collections(self, document_id: str, collections: Sequence[str]) -> None:
        selector = models.Filter(must=[_match("document_id", document_id)])
        try:
            with self._lock:
                self._client.set_payload(self._collection, payload={COLLECTIONS_FIELD: list(collections)},
                                         points=selector, wait=True)
        except Exception as error:
            raise VectorDBWriteError(f"Qdrant payload update failed: {error}") from error

    def flush(self) -> None:
        """Nothing to do: every write waited for the server's write-ahead log (``wait=True``)."""

    def maybe_optimize(self) -> bool:
        """Nothing to do: the server builds its HNSW index itself (its ``indexing_threshold``)."""
        return False

    # -- reads -------------------------------------------------------------------------------

    def search_dense(self, vector: np.ndarray, limit: int, filters: Filters | None,
                     snapshot: Snapshot) -> list[tuple[Chunk, float]]:
        return self._query(_dense_query(vector), DENSE, limit, filters, snapshot)

    def search_bm25(self, text: str, limit: int, filters: Filters | None,
                    snapshot: Snapshot) -> list[tuple[Chunk, float]]:
        query = self._bm25_query(text)
        return self._query(query, SPARSE, limit, filters, snapshot) if query is not None else []

    def rank_dense(self, vector: np.ndarray, limit: int, filters: Filters | None,
                   snapshot: Snapshot) -> list[RankedId]:
        return _ranked(self._points(_dense_query(vector), DENSE, limit, filters, snapshot, RANKING_FIELDS))

    def rank_bm25(self, text: str, limit: int, filters: Filters | None, snapshot: Snapshot) -> list[RankedId]:
        query = self._bm25_query(text)
        return _ranked(self._points(query, SPARSE, limit, filters, snapshot, RANKING_FIELDS)) if query is not None else []

    def _bm25_query(self, text: str) -> models.SparseVector | None:
        """The BM25 query of ``text``; None when no term of it is indexed (stopwords only)."""
        sparse = self._bm25.embed_query(text)
        return models.SparseVector(indices=list(sparse.indices), values=list(sparse.values)) if sparse.indices else None

    def fetch(self, chunk_ids: Sequence[str]) -> dict[str, Chunk]:
        if not chunk_ids:
            return {}
        try:
            with self._lock:
                records = self._client.retrieve(self._collection, ids=list(chunk_ids), with_payload=True)
        except Exception as error:
            raise VectorDBUnavailableError(f"Qdrant retrieve failed: {error}") from error
        return {str(record.id): from_payload(str(record.id), record.payload or {}) for record in records}

    def _query(self, query: Any, using: str, limit: int, filters: Filters | None,
               snapshot: Snapshot) -> list[tuple[Chunk, float]]:
        points = self._points(query, using, limit, filters, snapshot, True)
        return [(from_payload(str(point.id), point.payload or {}), float(point.score)) for point in points]

    def _points(self, query: Any, using: str, limit: int, filters: Filters | None, snapshot: Snapshot,
                with_payload: bool | list[str]) -> list[Any]:
        try:
            with self._lock:
                response = self._client.query_points(self._collection, query=query, using=using, limit=limit,
                                                     query_filter=_build_filter(filters, snapshot),
                                                     with_payload=with_payload)
        except Exception as error:
            raise VectorDBUnavailableError(f"Qdrant query failed: {error}") from error
        return list(response.points)

    def count(self, filters: Filters | None = None) -> int:
        try:
            with self._lock:
                return int(self._client.count(self._collection, count_filter=_build_filter(filters, None), exact=True).count)
        except Exception as error:
            raise VectorDBUnavailableError(f"Qdrant count failed: {error}") from error

    def chunks_of(self, document_id: str, generation: int) -> list[Chunk]:
        return [chunk for chunk, _ in self._scan_version(document_id, generation, with_vector=False)]

    def points_of(self, document_id: str, generation: int) -> list[tuple[Chunk, np.ndarray]]:
        return self._scan_version(document_id, generation, with_vector=True)

    def _scan_version(self, document_id: str, generation: int, *, with_vector: bool) -> list[tuple[Chunk, np.ndarray]]:
        condition = models.Filter(must=[_match("document_id", document_id), _match("generation", generation)])
        empty = np.zeros(0, dtype=np.float32)
        points: list[tuple[Chunk, np.ndarray]] = []
        try:
            for record in self._scroll(condition, with_vector):
                vector = np.asarray(_dense(record.vector), dtype=np.float32) if with_vector else empty
                points.append((from_payload(str(record.id), record.payload or {}), vector))
        except Exception as error:
            raise VectorDBUnavailableError(f"Qdrant scroll failed: {error}") from error
        return sorted(points, key=lambda point: point[0].metadata.chunk_index)

    def _scroll(self, condition: models.Filter, with_vector: bool) -> Iterator[models.Record]:
        offset: Any = None
        while True:
            with self._lock:
                records, offset = self._client.scroll(self._collection, scroll_filter=condition, limit=self._batch,
                                                      offset=offset, with_payload=True,
                                                      with_vectors=[DENSE] if with_vector else False)
            yield from records
            if offset is None:
                return

    def info(self) -> Mapping[str, Any]:
        try:
            with self._lock:
                info = self._client.get_collection(self._collection)
        except Exception as error:
            raise VectorDBUnavailableError(f"Qdrant collection info failed: {error}") from error
        return {"backend": "qdrant", "collection": self._collection, "points": info.points_count or 0,
                "segments": info.segments_count, "indexed_vectors": info.indexed_vectors_count or 0}

    def close(self) -> None:
        with self._lock:
            self._client.close()
            # Dropped now, so the client's __del__ (which closes again) runs here, not at interpreter exit.
            del self._client


def _check_version(server: str, url: str) -> None:
    """Warn when the server's version is outside what this qdrant-client supports (same major, minor +-1)."""
    client = version("qdrant-client")
    try:
        (server_major, server_minor), (client_major, client_minor) = (
            tuple(int(part) for part in text.lstrip("v").split(".")[:2]) for text in (server, client))
    except ValueError:
        return
    if server_major != client_major or abs(server_minor - client_minor) > 1:
        logger.warning("the Qdrant server at %s runs %s, qdrant-client is %s: use a server within one minor version "
                       "of the client (docs/backends.md)", url, server, client)


def _dense_query(vector: np.ndarray) -> list[float]:
    return np.asarray(vector, dtype=np.float32).tolist()


def _dense(vector: Any) -> list[float]:
    if isinstance(vector, dict):
        return list(vector[DENSE])
    raise VectorDBUnavailableError(f"Qdrant returned no {DENSE!r} vector")


def _extra_indexes(chunks: Sequence[Chunk]) -> dict[str, models.PayloadSchemaType]:
    """Payload indexes for the user metadata fields of ``chunks`` (strings: keyword, integers: integer)."""
    fields: dict[str, models.PayloadSchemaType] = {}
    for chunk in chunks:
        for key, value in chunk.metadata.extra.items():
            if isinstance(value, bool):
                continue  # stored as JSON booleans, matched as 0/1 like the embedded store: no useful index
            if isinstance(value, str):
                fields.setdefault(payload_key(key), models.PayloadSchemaType.KEYWORD)
            elif isinstance(value, int):
                fields.setdefault(payload_key(key), models.PayloadSchemaType.INTEGER)
    return fields


def _match(key: str, value: Any) -> models.FieldCondition:
    value = filter_value(value)
    if isinstance(value, list):
        return models.FieldCondition(key=key, match=models.MatchAny(any=value))
    return models.FieldCondition(key=key, match=models.MatchValue(value=value))


def _ranked(points: list[Any]) -> list[RankedId]:
    return [RankedId(str(point.id), float(point.score), point.payload["document_id"], int(point.payload["chunk_index"]))
            for point in points]


def _build_filter(filters: Filters | None, snapshot: Snapshot | None) -> models.Filter | None:
    """The metadata filters, plus (with a snapshot) the generations it sees: at most its
    ``max_generation`` and none of its ``uncommitted`` ones (docs/consistency.md).

    Unlike the embedded store, the range condition is always added: other processes write to the
    same collection, so this one cannot know whether newer generations are stored.
    """
    must: list[Any] = [_match(payload_key(key), value) for key, value in (filters or {}).items()]
    must_not: list[Any] = []
    if snapshot is not None:
        must.append(models.FieldCondition(key="generation", range=models.Range(lte=snapshot.max_generation)))
        if snapshot.uncommitted:
            must_not.append(_match("generation", sorted(snapshot.uncommitted)))
    if not must and not must_not:
        return None
    return models.Filter(must=must or None, must_not=must_not or None)
