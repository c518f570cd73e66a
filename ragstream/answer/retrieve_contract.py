"""``retrieve(query, context_key) -> RAGContext``: the contract over the dense index.

Relevance is the dense cosine similarity between the query and chunk embeddings of the index's
embedder (all-MiniLM-L6-v2 by default), clipped to 0..1: vectors are L2-normalised, so cosine is
in -1..1 and anything at or below 0 is "unrelated". The search runs in dense mode so the order
*is* the relevance order. Without the query's embedding there is no relevance to judge (BM25 scores
are not calibrated): when the embedder is unavailable, retrieve raises :class:`EmbedderUnavailableError`
(HTTP 503 ``embedder_unavailable``) rather than answer "nothing relevant", and the search is not run.

Chunks below ``min_relevance`` are dropped, at most ``max_chunks`` kept; ``meets_threshold`` is
``avg_relevance >= min_relevance``. When nothing qualifies the chunks are empty and
``avg_relevance`` is the mean over the top ``max_chunks`` candidates, to show how far off they were.
"""

from __future__ import annotations

import logging
import threading
import time
import uuid
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

import numpy as np

from ragstream.answer.models import DocumentChunk, RAGContext
from ragstream.config import AnswerConfig
from ragstream.errors import EmbedderUnavailableError, RagstreamError, VectorDBUnavailableError
from ragstream.models import Chunk, SearchResult
from ragstream.retrieval.searcher import validate_query
from ragstream.store.base import Snapshot

logger = logging.getLogger("ragstream.answer")
T = TypeVar("T")
SearchFn = Callable[..., SearchResult]
EmbedFn = Callable[[str], np.ndarray]
DENSE = "dense"


def relevance(cosine: float | None) -> float:
    """A cosine similarity (or None for a chunk the dense search did not score) mapped to 0..1."""
    return min(1.0, max(0.0, cosine or 0.0))


def chunk_metadata(chunk: Chunk) -> dict[str, Any]:
    """Citation-ready metadata: chunk position fields plus the document's own metadata.

    The document's metadata may override ``source`` and ``url`` (e.g. ``source="Core Rules v3.1"``),
    never the chunk's place (title, section, page, ...).
    """
    meta = chunk.metadata
    return {
        "source": meta.source,
        "url": meta.source,
        **meta.extra,
        "title": meta.title,
        "section": meta.section,
        "header_path": meta.header_path,
        "page": meta.page,
        "chunk_index": meta.chunk_index,
        "mime": meta.mime,
        "created_at": meta.created_at,
        "checksum": meta.checksum,
    }


def to_document_chunk(chunk: Chunk, score: float) -> DocumentChunk:
    """A stored chunk as a DocumentChunk."""
    return DocumentChunk(
        chunk_id=chunk.chunk_id, document_id=chunk.metadata.document_id, text=chunk.text,
        metadata=chunk_metadata(chunk), relevance_score=score, position_in_doc=chunk.metadata.chunk_index,
    )


class Retriever:
    """Runs the retrieve over ``search`` (``Searcher.search``: the user and collection ids filter the store) with a
    bounded wait."""

    def __init__(self, search: SearchFn, embed_query: EmbedFn, config: AnswerConfig, max_query_chars: int) -> None:
        self._search = search
        self._embed_query = embed_query
        self._config = config
        self._max_query_chars = max_query_chars

    def retrieve(self, query: str, context_key: str, *, max_chunks: int | None = None,
                 min_relevance: float | None = None, snapshot: Snapshot | None = None,
                 user: str | None = None, collections: Sequence[str] | None = None) -> RAGContext:
        """Chunks of relevance >= ``min_relevance``, best first, at most ``max_chunks``, among the
        versions committed at ``snapshot`` (by default, when the search starts) of the documents
        ``user`` may see (every document when None), in ``collections`` (ids) when given."""
        validate_query(query, self._max_query_chars)
        limit = max_chunks if max_chunks is not None else self._config.max_chunks
        threshold = min_relevance if min_relevance is not None else self._config.min_relevance
        started = time.perf_counter()
        try:  # outside the timeout: it covers the vector store, not loading the embedding model
            vector = self._embed_query(query)
        except EmbedderUnavailableError as error:
            raise EmbedderUnavailableError(
                "retrieve ranks chunks by their cosine to the query's embedding, and the embedder is unavailable "
                f"(BM25 scores give no calibrated relevance): {error.message}") from error
        result = run_with_timeout(
            lambda: self._search(query, mode=DENSE, top_k=max(limit, self._config.candidates), query_vector=vector,
                                 snapshot=snapshot, user=user, collections=collections),
            self._config.timeout_seconds, self._config.search_max_wait_seconds,
        )
        scored = [(hit.chunk, relevance(hit.dense_score)) for hit in result.hits]
        scored.sort(key=lambda item: -item[1])
        kept = [(chunk, score) for chunk, score in scored if score >= threshold][:limit]
        pool = kept or scored[:limit]
        avg = sum(score for _, score in pool) / len(pool) if pool else 0.0
        meets = bool(kept) and avg >= threshold
        chunks = [to_document_chunk(chunk, score) for chunk, score in kept] if meets else []
        return RAGContext(
            context_id=str(uuid.uuid4()), query_id=str(uuid.uuid4()), query=query, context_key=context_key,
            document_chunks=chunks, relevance_scores=[chunk.relevance_score for chunk in chunks],
            total_chunks=len(chunks), avg_relevance=avg, meets_threshold=meets, min_relevance=threshold,
            latency_ms=(time.perf_counter() - started) * 1000,
        )


def run_with_timeout(fn: Callable[[], T], slow_seconds: float, max_seconds: float) -> T:
    """``fn()`` in a worker thread. Still running after ``slow_seconds``, it is logged as slow and waited for, up to
    ``max_seconds`` in all (a busy store answers slowly rather than fail); VectorDBUnavailableError (logged) past
    that, or when it fails with an error that is not one of ragstream's own."""
    outcome: dict[str, Any] = {}

    def work() -> None:
        try:
            outcome["value"] = fn()
        except BaseException as error:
            outcome["error"] = error

    bound = max(slow_seconds, max_seconds)
    started = time.monotonic()
    worker = threading.Thread(target=work, name="ragstream-retrieve", daemon=True)
    worker.start()
    worker.join(slow_seconds)
    if worker.is_alive() and bound > slow_seconds:
        logger.warning("vector search has not answered within %g s (answer.timeout_seconds): the store is slow; "
                       "still waiting, up to %g s (answer.search_max_wait_seconds)", slow_seconds, bound)
        worker.join(max(0.0, bound - (time.monotonic() - started)))
    if worker.is_alive():
        message = f"vector search did not answer within {bound:g} s (answer.search_max_wait_seconds)"
        logger.warning("retrieve failed: %s", message)
        raise VectorDBUnavailableError(message)
    error = outcome.get("error")
    if isinstance(error, RagstreamError):
        if isinstance(error, VectorDBUnavailableError):
            logger.warning("retrieve failed: the vector store is unavailable: %s", error.message)
        raise error
    if error is not None:
        logger.warning("retrieve failed: vector search raised %s: %s", type(error).__name__, error)
        raise VectorDBUnavailableError(f"vector search failed: {type(error).__name__}: {error}") from error
    return outcome["value"]
