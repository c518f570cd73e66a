"""Embedders: one small interface, one module per backend."""

from ragstream.config import EmbeddingConfig
from ragstream.providers.embedders.base import Embedder


def make_embedder(config: EmbeddingConfig) -> Embedder:
    """Build the embedder named by ``config.provider``."""
    if config.provider == "openai":
        from ragstream.providers.embedders.openai_compatible import OpenAICompatibleEmbedder

        return OpenAICompatibleEmbedder(config)
    if config.provider == "onnx":
        from ragstream.providers.embedders.onnx_runtime import OnnxEmbedder

        return OnnxEmbedder(config)
    from ragstream.providers.embedders.sentence_transformers import SentenceTransformerEmbedder

    return SentenceTransformerEmbedder(config)


__all__ = ["Embedder", "make_embedder"]
