"""The embedder interface every backend implements."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

import numpy as np

from ragstream import metrics


class Embedder(Protocol):
    """Turns texts into L2-normalised float32 vectors."""

    model_id: str
    """Stable identifier of the model and its settings; part of the embedding-cache key."""

    @property
    def dimensions(self) -> int:
        """Vector size."""
        ...

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        """Embed passages; returns an array of shape (len(texts), dimensions)."""
        ...

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        """Embed search queries; returns an array of shape (len(texts), dimensions)."""
        ...

    def count_tokens(self, text: str) -> int:
        """Number of model tokens in ``text`` (used by token-limited chunking)."""
        ...


class BatchedEmbedder:
    """What the embedders that ask a model server share (OpenAI-compatible, GGUF): the vector size asked once by
    embedding a probe (unless ``embedding.dimensions`` names it), the prefixes, batches of ``_batch_size`` texts,
    L2-normalised rows and the embedding metrics. A subclass sends one batch: :meth:`_request`."""

    query_prefix = ""
    passage_prefix = ""
    _batch_size = 1
    _dimensions = 0

    @property
    def dimensions(self) -> int:
        if not self._dimensions:
            self._dimensions = int(self._request(["dimension probe"]).shape[1])
        return self._dimensions

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        with metrics.timed_embedding("documents", len(texts)):
            return self._embed([self.passage_prefix + text for text in texts])

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        with metrics.timed_embedding("queries", len(texts)):
            return self._embed([self.query_prefix + text for text in texts])

    def _embed(self, texts: list[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dimensions), dtype=np.float32)
        batches = [self._request(texts[start:start + self._batch_size])
                   for start in range(0, len(texts), self._batch_size)]
        return normalise(np.vstack(batches))

    def _request(self, batch: list[str]) -> np.ndarray:
        """The raw vectors of one batch, one row per text."""
        raise NotImplementedError


def normalise(vectors: np.ndarray) -> np.ndarray:
    """L2-normalise rows, leaving all-zero rows at zero."""
    vectors = np.asarray(vectors, dtype=np.float32)
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    return vectors / norms


def scoring_vectors(embedder: Embedder, texts: Sequence[str]) -> np.ndarray:
    """Vectors of ``texts`` to compare with query vectors at question time, never stored (sentence
    scores, conversation pairs): the embedder's fast encoder when it offers ``embed_for_scoring``
    (the ONNX query encoder beside a torch passage encoder), else its passage vectors."""
    fast = getattr(embedder, "embed_for_scoring", None)
    vectors: np.ndarray = fast(texts) if fast is not None else embedder.embed_documents(texts)
    return vectors
