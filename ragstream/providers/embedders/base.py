"""The embedder interface every backend implements."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

import numpy as np


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
