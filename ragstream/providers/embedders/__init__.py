"""Embedders: one small interface, one module per backend."""

import logging

from ragstream.config import EmbeddingConfig
from ragstream.errors import EmbedderUnavailableError
from ragstream.providers.embedders.base import Embedder

logger = logging.getLogger("ragstream.embedders")


def make_embedder(config: EmbeddingConfig) -> Embedder:
    """Build the embedder named by ``config.provider`` (gguf: a GGUF file through llama.cpp; with
    ``query_provider=onnx``, queries through ONNX Runtime)."""
    backend = config.backend()
    if backend == "openai":
        from ragstream.providers.embedders.openai_compatible import OpenAICompatibleEmbedder

        return OpenAICompatibleEmbedder(config)
    if backend == "gguf":
        from ragstream.providers.embedders.gguf import GgufEmbedder

        return GgufEmbedder(config)
    from ragstream.providers.embedders.onnx_runtime import OnnxEmbedder

    if backend == "onnx":
        return OnnxEmbedder(config)
    from ragstream.providers.embedders.sentence_transformers import SentenceTransformerEmbedder

    if config.query_provider == "onnx" and config.onnx_export() is not None:
        from ragstream.providers.embedders.query_encoder import QueryEncoderEmbedder

        try:
            queries = OnnxEmbedder(config)
        except EmbedderUnavailableError as error:
            logger.warning("queries embed with torch: %s", error.message)
        else:
            return QueryEncoderEmbedder(queries, lambda: SentenceTransformerEmbedder(config),
                                        SentenceTransformerEmbedder.model_id_for(config))
    return SentenceTransformerEmbedder(config)


__all__ = ["Embedder", "make_embedder"]
