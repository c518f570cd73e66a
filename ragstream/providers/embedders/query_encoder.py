"""Passages through one encoder, queries through a faster one of the same model.

The default pairs torch (bfloat16) for passages with ONNX Runtime (the model's int8 export) for
queries: a single query embeds about 4x faster and the vectors agree (cosine >= 0.999 on SciFact
claims, ``bench/embedders.py``; a slow test checks it). Stored vectors come from the passage encoder
alone, so the index fingerprint does not change. The passage encoder loads on first use: a process
that only searches never loads torch.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence

import numpy as np

from ragstream.providers.embedders.base import Embedder


class QueryEncoderEmbedder:
    """:class:`Embedder` whose ``embed_queries`` (and token counts) use ``queries``, passages a lazily built encoder."""

    def __init__(self, queries: Embedder, passages: Callable[[], Embedder], passage_model_id: str) -> None:
        self.queries = queries
        self._make_passages = passages
        self._passages: Embedder | None = None
        self._lock = threading.Lock()
        self.model_id = passage_model_id

    @property
    def passages(self) -> Embedder:
        """The passage encoder, loaded on first use."""
        with self._lock:
            if self._passages is None:
                self._passages = self._make_passages()
            return self._passages

    @property
    def dimensions(self) -> int:
        return self.queries.dimensions

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        return self.passages.embed_documents(texts)

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        return self.queries.embed_queries(texts)

    @property
    def scoring_model_id(self) -> str:
        """The model id of :meth:`embed_for_scoring`'s vectors (their embedding-cache key)."""
        return self.queries.model_id

    def embed_for_scoring(self, texts: Sequence[str]) -> np.ndarray:
        """Vectors compared with query vectors at question time (sentence scores), never stored: the
        fast encoder (as passages: with the passage prefix), so answering a new question never loads the
        passage encoder."""
        return self.queries.embed_documents(texts)

    def count_tokens(self, text: str) -> int:
        """The model's tokenizer, held by the query encoder too (same tokenizer.json)."""
        return self.queries.count_tokens(text)
