"""An embedder wrapper that serves passage vectors from the catalog's cache by text hash."""

from __future__ import annotations

import hashlib
import time
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ragstream.providers.embedders.base import Embedder
from ragstream.store.catalog import Catalog


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
    near-duplicate checks) read vectors instead of running the model again.
    """

    def __init__(self, inner: Embedder, catalog: Catalog) -> None:
        self.inner = inner
        self._catalog = catalog
        self.model_id = inner.model_id

    @property
    def dimensions(self) -> int:
        return self.inner.dimensions

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        return self.embed_documents_with_stats(texts)[0]

    def embed_documents_with_stats(self, texts: Sequence[str]) -> tuple[np.ndarray, CacheStats]:
        """Vectors for ``texts`` plus what the call cost."""
        if not texts:
            return self.inner.embed_documents([]), CacheStats(0, 0, 0.0)
        hashes = [content_hash(text) for text in texts]
        cached = self._catalog.cached_vectors(self.model_id, hashes)
        missing = list(dict.fromkeys(h for h in hashes if h not in cached))
        seconds = 0.0
        if missing:
            by_hash = dict(zip(hashes, texts, strict=True))
            started = time.perf_counter()
            fresh = self.inner.embed_documents([by_hash[h] for h in missing])
            seconds = time.perf_counter() - started
            new_items = dict(zip(missing, fresh, strict=True))
            self._catalog.cache_vectors(self.model_id, new_items.items())
            cached.update(new_items)
        hits = sum(1 for h in hashes if h not in missing)
        return np.vstack([cached[h] for h in hashes]), CacheStats(hits, len(missing), seconds)

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        return self.inner.embed_queries(texts)

    def count_tokens(self, text: str) -> int:
        return self.inner.count_tokens(text)
