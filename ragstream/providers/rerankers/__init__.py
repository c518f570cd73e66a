"""Rerankers for the ReRanker stage and ``search --rerank``: a cross-encoder on ONNX Runtime (the
default), the same on torch, or the bi-encoder re-score when asked for."""

from __future__ import annotations

import logging
from collections.abc import Callable

from ragstream.config import RerankerConfig
from ragstream.errors import ModelUnavailableError
from ragstream.providers.embedders.base import Embedder
from ragstream.providers.rerankers.base import Reranker
from ragstream.providers.rerankers.bi_encoder import BiEncoderReranker
from ragstream.providers.rerankers.cross_encoder import CrossEncoderReranker, CrossEncoderUnavailableError
from ragstream.providers.rerankers.onnx_cross_encoder import OnnxCrossEncoderReranker

logger = logging.getLogger("ragstream.rerankers")

__all__ = ["BiEncoderReranker", "CrossEncoderReranker", "OnnxCrossEncoderReranker", "Reranker", "make_reranker"]


def make_reranker(config: RerankerConfig, embedder: Callable[[], Embedder]) -> tuple[Reranker | None, str | None]:
    """``(reranker, None)``, or ``(None, why)`` when no reranker can run.

    A cross-encoder that cannot load (absent, failing its sha256 or shape check) leaves the ReRanker
    stage keeping the fused retrieval order, with the reason; ``backend = "bi_encoder"`` asks for the
    bi-encoder re-score explicitly, ``backend = "none"`` switches reranking off.
    """
    if config.backend == "none":
        return None, "reranker.backend is none"
    if config.backend == "bi_encoder":
        bi_encoder: Reranker = BiEncoderReranker(embedder, reason="reranker.backend is bi_encoder")
        return bi_encoder, None
    if config.backend == "onnx":
        try:
            return OnnxCrossEncoderReranker(config), None
        except ModelUnavailableError as error:
            logger.warning("reranking off: %s", error.message)
            return None, f"model_unavailable: {error.message}"
    try:
        return CrossEncoderReranker(config), None
    except CrossEncoderUnavailableError as error:
        logger.info("reranking off: %s", error)
        return None, f"model_unavailable: cross-encoder {config.model!r} could not be loaded from local files"
