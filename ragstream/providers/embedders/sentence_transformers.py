"""Local CPU embeddings with sentence-transformers, from packaged or local weights."""

from __future__ import annotations

import copy
import threading
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from ragstream import metrics
from ragstream.config import EmbeddingConfig
from ragstream.errors import EmbedderUnavailableError
from ragstream.providers.embedders.base import normalise
from ragstream.providers.embedders.model_settings import model_settings, with_prefix
from ragstream.providers.packaged_models import resolve_model_path


class SentenceTransformerEmbedder:
    """all-MiniLM-L6-v2 (or any sentence-transformers model) on the CPU.

    ``embedding.dtype`` auto runs bfloat16 on a CPU with bfloat16 instructions (~1.8x faster than
    float32 on 2 cores, cosine ~1.0 against float32) and float32 where bfloat16 would be emulated
    (``ragstream.cpu_runtime``).

    Safe to share between threads: one lock serialises the model (its fast tokenizer keeps
    truncation and padding settings as mutable state, so concurrent calls broke each other's
    batches), and token counting runs on its own copy of the tokenizer under its own lock, so
    chunking does not wait behind embedding. Torch already spreads one call over every core, so
    serialising costs little throughput (docs/consistency.md has the measurement).
    """

    def __init__(self, config: EmbeddingConfig) -> None:
        try:
            import torch
            import transformers
            from sentence_transformers import SentenceTransformer
        except ImportError as error:
            raise EmbedderUnavailableError(
                f"embedding.provider=sentence_transformers needs torch and sentence-transformers ({error}): "
                "pip install torch==2.13.0 'ragstream[torch]', or set embedding.provider=onnx"
            ) from error

        transformers.logging.disable_progress_bar()

        location = resolve_model_path(config.model)
        dtype = torch.bfloat16 if config.local_runtime().dtype == "bfloat16" else torch.float32
        try:
            self._model = SentenceTransformer(location, device="cpu", model_kwargs={"dtype": dtype})
        except Exception as error:
            raise EmbedderUnavailableError(
                f"cannot load embedding model {config.model!r} from {location!r} (offline): {error}"
            ) from error
        self._batch_size = config.batch_size
        self._settings = model_settings(config, Path(location) if Path(location).is_dir() else None)
        self.model_id = self.model_id_for(config)
        dimension_of = getattr(self._model, "get_embedding_dimension", None) or self._model.get_sentence_embedding_dimension
        dimensions = dimension_of()
        if dimensions is None:
            raise EmbedderUnavailableError(f"embedding model {config.model!r} reports no vector size")
        self._dimensions = int(dimensions)
        self._model_lock = threading.Lock()
        self._counter = copy.deepcopy(self._model.tokenizer)
        self._counter_lock = threading.Lock()

    @staticmethod
    def model_id_for(config: EmbeddingConfig) -> str:
        """The ``model_id`` an embedder built from ``config`` has (the passage-vector cache key)."""
        return f"st:{config.model}" + (f":passage_prefix={config.passage_prefix!r}" if config.passage_prefix else "")

    @property
    def dimensions(self) -> int:
        return self._dimensions

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        with metrics.timed_embedding("documents", len(texts)):
            return self._encode(with_prefix(self._settings.passage_prefix, list(texts)))

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        with metrics.timed_embedding("queries", len(texts)):
            return self._encode(with_prefix(self._settings.query_prefix, list(texts)))

    def count_tokens(self, text: str) -> int:
        with self._counter_lock:
            return len(self._counter(text, add_special_tokens=True, verbose=False)["input_ids"])

    def _encode(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self._dimensions), dtype=np.float32)
        with self._model_lock:
            vectors = self._model.encode(
                list(texts), batch_size=self._batch_size, convert_to_numpy=True, show_progress_bar=False
            )
        return normalise(vectors)
