"""Search the store in dense, BM25 or hybrid mode, with filters, threshold and fallback."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping, Sequence

import numpy as np

from ragstream import metrics
from ragstream.config import RetrievalConfig
from ragstream.errors import EmbeddingFailureError, InvalidQueryError, check_unicode
from ragstream.models import Chunk, SearchHit, SearchMode, SearchResult
from ragstream.providers.embedders.base import Embedder
from ragstream.retrieval.fusion import fuse
from ragstream.store.base import Filters, RankedId, Snapshot, VectorStore, visible_to
from ragstream.store.snapshots import Snapshots


class Searcher:
    """Runs one search over the document versions committed at one catalog snapshot."""

    def __init__(
        self,
        store: VectorStore,
        embedder: Callable[[], Embedder],
        config: RetrievalConfig,
        snapshots: Snapshots,
        max_query_chars: int,
    ) -> None:
        self._store = store
        self._embedder = embedder
        self._config = config
        self._snapshots = snapshots
        self._max_query_chars = max_query_chars

    def search(
        self,
        query: str,
        *,
        mode: SearchMode | None = None,
        top_k: int | None = None,
        filters: Filters | None = None,
        score_threshold: float | None = None,
        query_vector: np.ndarray | None = None,
        snapshot: Snapshot | None = None,
        user: str | None = None,
        collections: Sequence[str] | None = None,
    ) -> SearchResult:
        """Rank chunks for ``query`` among the versions committed at ``snapshot`` (by default, a
        snapshot taken now and held for this search) of the documents ``user`` may see: their own
        and the shared ones (every document when None) and, with ``collections`` (ids), in one of
        those collections, filtered in the store (dense and BM25 alike) like any metadata.

        In dense and hybrid mode an unavailable embedder degrades the search to BM25; the
        result's ``mode`` and ``fallback_reason`` say so. ``score_threshold`` applies to the
        score of the mode that ran (cosine, BM25, RRF, or alpha-blended 0..1; a hybrid hit's score
        fuses the scores pooled over its neighbours or document, ``retrieval.fusion_level``).
        """
        validate_query(query, self._max_query_chars)
        filters = visible_to(filters, user, collections)
        if snapshot is None:
            with self._snapshots.open() as fresh:
                return self._search(query, mode, top_k, filters, score_threshold, query_vector, fresh)
        return self._search(query, mode, top_k, filters, score_threshold, query_vector, snapshot)

    def _search(self, query: str, mode: SearchMode | None, top_k: int | None, filters: Filters | None,
                score_threshold: float | None, query_vector: np.ndarray | None, snapshot: Snapshot) -> SearchResult:
        requested: SearchMode = mode or self._config.mode
        limit = top_k or self._config.top_k
        threshold = score_threshold if score_threshold is not None else self._config.score_threshold
        latencies: dict[str, float] = {}
        counts: dict[str, int] = {}  # candidates per retriever, before fusion, threshold and cut
        started = time.perf_counter()

        ran, fallback_reason = requested, None
        if requested != "bm25" and query_vector is None:
            try:
                query_vector = _timed(latencies, "embed", lambda: self._embedder().embed_queries([query])[0])
            except EmbeddingFailureError as error:
                ran, fallback_reason = "bm25", f"embedder unavailable, BM25 only: {error.message}"

        if ran == "hybrid" and query_vector is not None:
            hits = self._hybrid(query, query_vector, limit, threshold, filters, snapshot, latencies, counts)
        else:
            found: list[tuple[Chunk, float]] = []
            if ran == "dense" and query_vector is not None:
                vector = query_vector
                found = _timed(latencies, "dense", lambda: self._store.search_dense(vector, limit, filters, snapshot))
            elif ran in ("bm25", "hybrid"):
                found = _timed(latencies, "bm25", lambda: self._store.search_bm25(query, limit, filters, snapshot))
            counts["dense" if ran == "dense" else "bm25"] = len(found)
            hits = [_hit(chunk, score, dense=score if ran == "dense" else None, bm25=score if ran != "dense" else None)
                    for chunk, score in found]
            if threshold is not None:
                hits = [hit for hit in hits if hit.score >= threshold]
        for rank, hit in enumerate(hits, start=1):
            hit.rank = rank
        latencies["total"] = (time.perf_counter() - started) * 1000
        result = SearchResult(query=query, mode=ran, requested_mode=requested, fallback_reason=fallback_reason,
                              hits=hits, latencies_ms=latencies, num_candidates=counts)
        metrics.record_search(result)
        return result

    def _hybrid(self, query: str, vector: np.ndarray, limit: int, threshold: float | None, filters: Filters | None,
                snapshot: Snapshot, latencies: dict[str, float], counts: dict[str, int]) -> list[SearchHit]:
        """Both rankings at ``retrieval.candidates`` depth as ids and scores (their sizes go to ``counts``), fused,
        cut to ``limit``; only the chunks kept are read from the store."""
        candidates = max(limit, self._config.candidates)
        dense = _timed(latencies, "dense", lambda: self._store.rank_dense(vector, candidates, filters, snapshot))
        bm25 = _timed(latencies, "bm25", lambda: self._store.rank_bm25(query, candidates, filters, snapshot))
        counts["dense"], counts["bm25"] = len(dense), len(bm25)
        dense_scores = {hit.chunk_id: hit.score for hit in dense}
        bm25_scores = {hit.chunk_id: hit.score for hit in bm25}
        fused = _timed(latencies, "fusion", lambda: fuse_rankings(dense_scores, bm25_scores, dense + bm25, self._config))
        if threshold is not None:
            fused = [(cid, score) for cid, score in fused if score >= threshold]
        fused = fused[:limit]
        chunks = _timed(latencies, "fetch", lambda: self._store.fetch([cid for cid, _ in fused]))
        return [_hit(chunks[cid], score, dense=dense_scores.get(cid), bm25=bm25_scores.get(cid))
                for cid, score in fused if cid in chunks]


def fuse_rankings(dense: Mapping[str, float], bm25: Mapping[str, float], places: Iterable[RankedId],
                  config: RetrievalConfig) -> list[tuple[str, float]]:
    """Chunk ids with fused scores, best first: ``config``'s fusion of the two retrievers' scores, with each
    chunk's document and position taken from ``places`` (the rankings' hits)."""
    document_of: dict[str, str] = {}
    position_of: dict[str, int] = {}
    for hit in places:
        document_of[hit.chunk_id], position_of[hit.chunk_id] = hit.document_id, hit.chunk_index
    return fuse(dense, bm25, document_of, position_of, method=config.fusion, level=config.fusion_level,
                window=config.fusion_window, alpha=config.alpha, rrf_k=config.rrf_k,
                weights=(config.dense_weight, config.bm25_weight), normalisation=config.normalisation,
                dbsf_width=config.dbsf_width)


def validate_query(query: object, max_chars: int) -> str:
    """The query, or InvalidQueryError when it is not a non-empty string of at most ``max_chars``."""
    if not isinstance(query, str) or not query.strip():
        raise InvalidQueryError("query is empty")
    if len(query) > max_chars:
        raise InvalidQueryError(f"query is {len(query)} characters; the limit is {max_chars}")
    return check_unicode(query, "the query")


def _hit(chunk: Chunk, score: float, *, dense: float | None, bm25: float | None) -> SearchHit:
    return SearchHit(chunk=chunk, score=score, rank=0, dense_score=dense, bm25_score=bm25)


def _timed(latencies: dict[str, float], stage: str, fn: Callable):
    started = time.perf_counter()
    value = fn()
    latencies[stage] = (time.perf_counter() - started) * 1000
    return value
