"""Rerankers for the ReRanker stage: a cross-encoder, or the bi-encoder re-score as its degradation."""

from __future__ import annotations

from collections.abc import Callable

from ragstream.config import RerankerConfig
from ragstream.providers.embedders.base import Embedder
from ragstream.providers.rerankers.base import Reranker
from ragstream.providers.rerankers.bi_encoder import BiEncoderReranker
from ragstream.providers.rerankers.cross_encoder import CrossEncoderReranker, CrossEncoderUnavailable

__all__ = ["BiEncoderReranker", "CrossEncoderReranker", "Reranker", "make_reranker"]


def make_reranker(config: RerankerConfig, embedder: Callable[[], Embedder]) -> Reranker:
    """The configured reranker; a cross-encoder that cannot load degrades to the bi-encoder,
    whose ``degraded_reason`` says why."""
    if config.backend == "bi_encoder":
        return BiEncoderReranker(embedder, reason="reranker.backend is bi_encoder")
    try:
        return CrossEncoderReranker(config)
    except CrossEncoderUnavailable as error:
        return BiEncoderReranker(embedder, reason=str(error))
