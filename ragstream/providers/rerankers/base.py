"""The reranker interface."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from ragstream.providers.deadline import Deadline


class Reranker(Protocol):
    """Scores (query, text) pairs; higher is more relevant."""

    @property
    def backend(self) -> str:
        """``cross_encoder`` or ``bi_encoder``."""
        ...

    @property
    def model(self) -> str:
        """The model that scores."""
        ...

    @property
    def degraded_reason(self) -> str | None:
        """Why this is not the configured cross-encoder, or ``None``."""
        ...

    def score(self, query: str, texts: Sequence[str], *, deadline: Deadline | None = None) -> list[float]:
        """One score per text; raises DeadlineExceededError once ``deadline`` has passed."""
        ...
