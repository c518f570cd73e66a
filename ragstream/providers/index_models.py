"""The models of one index, each loaded once, on first use: the embedder (its passage vectors cached in the
catalog, its query vectors in memory) and the reranker; and the start of a local answering model.

Loading is thread-safe. An embedder that cannot load is remembered: every later call raises the same
EmbedderUnavailableError without trying again (searches fall back to BM25). A reranker that cannot load
leaves None and the reason, which the ReRanker stage and ``search(rerank=True)`` report.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING

from ragstream.config import RagstreamConfig
from ragstream.errors import EmbedderUnavailableError
from ragstream.providers.embedders import Embedder, make_embedder
from ragstream.providers.embedders.cached import CachedEmbedder
from ragstream.store.catalog_base import EmbeddingCache

if TYPE_CHECKING:
    from ragstream.providers.rerankers.base import Reranker


class IndexModels:
    """The embedder and the reranker of the index whose catalog's embedding cache is ``cache`` (``embedder``: one
    given by the caller instead of the configured one)."""

    def __init__(self, config: RagstreamConfig, cache: EmbeddingCache, embedder: Embedder | None = None) -> None:
        self._config = config
        self._cache = cache
        self._embedder = CachedEmbedder(embedder, cache, config.embedding.query_cache_size) if embedder else None
        self._embedder_error: EmbedderUnavailableError | None = None
        self._reranker: tuple[Reranker | None, str | None] | None = None
        self._lock = threading.Lock()

    def embedder(self) -> CachedEmbedder:
        """The embedder, loaded on first use; raises EmbedderUnavailableError if it cannot load."""
        with self._lock:
            if self._embedder is None:
                if self._embedder_error is not None:
                    raise self._embedder_error
                try:
                    self._embedder = CachedEmbedder(make_embedder(self._config.embedding), self._cache,
                                                    self._config.embedding.query_cache_size)
                except EmbedderUnavailableError as error:
                    self._embedder_error = error
                    raise
            return self._embedder

    def reranker(self) -> tuple[Reranker | None, str | None]:
        """The configured reranker (loaded once), or None with the reason it cannot run."""
        if self._reranker is None:
            from ragstream.providers.rerankers import make_reranker

            built = make_reranker(self._config.reranker, self.embedder)
            with self._lock:
                self._reranker = self._reranker or built
        return self._reranker

    def start_llm(self) -> None:
        """Start the local model's server now (``llm.provider = "local"``) instead of at the first question, so a
        missing model file or wheel fails at start-up (:class:`ConfigError`); nothing for a remote model."""
        if self._config.llm.provider == "local":
            from ragstream.providers.local_llm import local_server_for

            local_server_for(self._config.llm)
