"""The documented degradation of the cross-encoder: cosine between the query and each chunk."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from ragstream.providers.deadline import Deadline
from ragstream.providers.embedders.base import Embedder


class BiEncoderReranker:
    """Re-scores with the index's own embedder (vectors are L2-normalised, so dot = cosine)."""

    backend = "bi_encoder"

    def __init__(self, embedder: Callable[[], Embedder], *, reason: str) -> None:
        self._embedder = embedder
        self.degraded_reason = reason

    @property
    def model(self) -> str:
        return self._embedder().model_id

    def score(self, query: str, texts: Sequence[str], *, deadline: Deadline | None = None) -> list[float]:
        if deadline is not None:
            deadline.check("the bi-encoder re-score")
        if not texts:
            return []
        embedder = self._embedder()
        query_vector = embedder.embed_queries([query])[0]
        return [float(value) for value in embedder.embed_documents(texts) @ query_vector]
