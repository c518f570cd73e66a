"""Rerankers for the ReRanker stage: a cross-encoder; the bi-encoder re-score only when asked for."""

from __future__ import annotations

import logging
from collections.abc import Callable

from ragstream.config import RerankerConfig
from ragstream.providers.embedders.base import Embedder
from ragstream.providers.rerankers.base import Reranker
from ragstream.providers.rerankers.bi_encoder import BiEncoderReranker
from ragstream.providers.rerankers.cross_encoder import CrossEncoderReranker, CrossEncoderUnavailableError

logger = logging.getLogger("ragstream.rerankers")

__all__ = ["BiEncoderReranker", "CrossEncoderReranker", "Reranker", "make_reranker"]


def make_reranker(config: RerankerConfig, embedder: Callable[[], Embedder]) -> tuple[Reranker | None, str | None]:
    """``(reranker, None)``, or ``(None, why)`` when no reranker can run.

    A cross-encoder that cannot load leaves the ReRanker stage a no-op that keeps the fused
    retrieval order (the bi-encoder re-score measured below it on SciFact); ``backend = "bi_encoder"``
    asks for the bi-encoder explicitly, ``backend = "none"`` switches reranking off.
    """
    if config.backend == "none":
        return None, "reranker.backend is none"
    if config.backend == "bi_encoder":
        bi_encoder: Reranker = BiEncoderReranker(embedder, reason="reranker.backend is bi_encoder")
        return bi_encoder, None
    try:
        return CrossEncoderReranker(config), None
    except CrossEncoderUnavailableError as error:
        logger.info("reranking off: %s", error)
        return None, f"cross-encoder {config.model!r} could not be loaded from local files"
