"""An embedder wrapper that serves passage vectors from the catalog's cache by text hash."""

from __future__ import annotations

import hashlib
import logging
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from ragstream.errors import InsufficientStorageError
from ragstream.providers.embedders.base import Embedder
from ragstream.store.catalog_base import EmbeddingCache

logger = logging.getLogger("ragstream.embedding")


@dataclass(frozen=True)
class CacheStats:
    """What one cached call cost: hits, texts sent to the model, seconds inside the model."""

    hits: int
    embedded: int
    model_seconds: float


def content_hash(text: str) -> str:
    """The cache key of a passage: sha256 of its UTF-8 text (equals ``ChunkMetadata.content_hash``)."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


class CachedEmbedder:
    """:class:`Embedder` whose passages are embedded once per model and text, ever.

    Ingest fills the cache, so later stages that re-score stored chunks (bi-encoder reranking,
    near-duplicate checks) read vectors instead of running the model again. Query vectors are kept
    in memory (the last ``query_cache_size`` texts), so every stage of a question reuses the vector
    Retrieval computed: a question is embedded once.
    """

    def __init__(self, inner: Embedder, cache: EmbeddingCache, query_cache_size: int = 1024) -> None:
        self.inner = inner
        self._cache = cache
        self.model_id = inner.model_id
        self._queries: OrderedDict[str, np.ndarray] = OrderedDict()
        self._query_cache_size = query_cache_size
        self._lock = threading.Lock()
        self.query_model_calls = 0

    @property
    def dimensions(self) -> int:
        return self.inner.dimensions

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        return self.embed_documents_with_stats(texts)[0]

    def embed_documents_with_stats(self, texts: Sequence[str]) -> tuple[np.ndarray, CacheStats]:
        """Vectors for ``texts`` plus what the call cost."""
        return self._through_cache(texts, self.model_id, self.inner.embed_documents)

    def _through_cache(self, texts: Sequence[str], model_id: str,
                       encode: Callable[[Sequence[str]], np.ndarray]) -> tuple[np.ndarray, CacheStats]:
        """Vectors of ``texts`` from the catalog's cache under ``model_id``; the rest from ``encode``, then cached."""
        if not texts:
            return self.inner.embed_documents([]), CacheStats(0, 0, 0.0)
        hashes = [content_hash(text) for text in texts]
        cached = self._cache.cached_vectors(model_id, hashes)
        missing = list(dict.fromkeys(h for h in hashes if h not in cached))
        seconds = 0.0
        if missing:
            by_hash = dict(zip(hashes, texts, strict=True))
            started = time.perf_counter()
            fresh = encode([by_hash[h] for h in missing])
            seconds = time.perf_counter() - started
            new_items = dict(zip(missing, fresh, strict=True))
            if not self._cache.read_only:
                try:
                    self._cache.cache_vectors(model_id, new_items.items())
                except InsufficientStorageError as error:  # a full disk only costs the cache, never the vectors
                    logger.warning("embedding cache not written: %s", error.message)
            cached.update(new_items)
        hits = sum(1 for h in hashes if h not in missing)
        return np.vstack([cached[h] for h in hashes]), CacheStats(hits, len(missing), seconds)

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        """Query vectors, from memory for texts seen lately; the rest from the model in one call."""
        with self._lock:
            known = {text: self._queries[text] for text in texts if text in self._queries}
            for text in known:
                self._queries.move_to_end(text)
        missing = list(dict.fromkeys(text for text in texts if text not in known))
        if missing:
            fresh = self.inner.embed_queries(missing)
            with self._lock:
                self.query_model_calls += 1
                for text, vector in zip(missing, fresh, strict=True):
                    known[text] = vector
                    self._queries[text] = vector
                while len(self._queries) > self._query_cache_size:
                    self._queries.popitem(last=False)
        if not texts:
            return self.inner.embed_queries([])
        return np.vstack([known[text] for text in texts])

    def embed_for_scoring(self, texts: Sequence[str]) -> np.ndarray:
        """Vectors compared with query vectors at question time and never stored (A4's sentence
        scores): the inner embedder's fast encoder when it has one (not counted as a question
        embedding, not kept in the query memory), cached in the catalog under that encoder's model
        id; else the cached passage vectors."""
        fast = getattr(self.inner, "embed_for_scoring", None)
        model_id = getattr(self.inner, "scoring_model_id", None)
        if fast is None or model_id is None:
            return self.embed_documents(texts)
        return self._through_cache(texts, model_id, fast)[0]

    def forget_queries(self) -> None:
        """Drop the query vectors kept in memory (a benchmark's next pass then pays each embedding again)."""
        with self._lock:
            self._queries.clear()

    def count_tokens(self, text: str) -> int:
        return self.inner.count_tokens(text)
