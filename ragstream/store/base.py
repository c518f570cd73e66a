"""The vector-store interface: chunks with dense and BM25 vectors, filtered search, generations."""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from typing import Any, Protocol

import numpy as np

from ragstream.models import Chunk

FilterValue = str | int | bool | Sequence[str] | Sequence[int]
Filters = Mapping[str, FilterValue]


class ScoredChunk(Protocol):
    """A chunk and the score one retriever gave it."""

    chunk: Chunk
    score: float


class VectorStore(Protocol):
    """What ragstream needs from a vector database.

    Every point carries the ``generation`` (document version) it was written under; searches
    skip the generations in ``hidden`` so readers never see a half-written or superseded version.
    """

    def upsert(self, chunks: Sequence[Chunk], vectors: np.ndarray, generation: int) -> None:
        """Write chunks with their dense vectors (BM25 vectors are computed by the store)."""
        ...

    def delete_generation(self, document_id: str, generation: int) -> None:
        """Remove every point of one document version."""
        ...

    def flush(self) -> None:
        """Make every write so far durable."""
        ...

    def search_dense(self, vector: np.ndarray, limit: int, filters: Filters | None, hidden: Collection[int]) -> list[tuple[Chunk, float]]:
        """Nearest chunks by cosine similarity."""
        ...

    def search_bm25(self, text: str, limit: int, filters: Filters | None, hidden: Collection[int]) -> list[tuple[Chunk, float]]:
        """Best chunks by BM25."""
        ...

    def count(self, filters: Filters | None = None) -> int:
        """Number of stored points matching ``filters``."""
        ...

    def chunks_of(self, document_id: str, generation: int) -> list[Chunk]:
        """Every chunk of one document version, by chunk_index."""
        ...

    def maybe_optimize(self) -> bool:
        """Build ANN indexes when the store is big enough to need them."""
        ...

    def info(self) -> Mapping[str, Any]:
        """Backend statistics."""
        ...

    def close(self) -> None:
        """Release the store."""
        ...
