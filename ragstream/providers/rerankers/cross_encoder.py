"""A sentence-transformers ``CrossEncoder`` over (query, chunk) pairs, loaded from local files only."""

from __future__ import annotations

import threading
from collections.abc import Sequence

from ragstream.config import RerankerConfig
from ragstream.providers.deadline import Deadline
from ragstream.providers.packaged_models import is_available_locally, resolve_model_path


class CrossEncoderUnavailableError(Exception):
    """The cross-encoder cannot be loaded (no local copy and no download at run time)."""


class CrossEncoderReranker:
    """Cross-encoder scores; ``config.model`` is a hub id found locally, a weights package or a path.

    Safe to share between threads: one lock serialises the model and its tokenizer.
    """

    backend = "cross_encoder"
    degraded_reason: str | None = None

    def __init__(self, config: RerankerConfig) -> None:
        if not is_available_locally(config.model):  # before importing torch: seconds saved when absent
            raise CrossEncoderUnavailableError(
                f"cross-encoder {config.model!r} has no local copy (path, weights package or offline HF cache)")
        try:
            import transformers
            from sentence_transformers import CrossEncoder
        except ImportError as error:  # a torch-free install: the stage keeps the retrieval order
            raise CrossEncoderUnavailableError(f"the cross-encoder needs ragstream[torch]: {error}") from error

        transformers.logging.disable_progress_bar()
        location = resolve_model_path(config.model)
        try:
            self._model = CrossEncoder(location, device="cpu", max_length=config.max_tokens, local_files_only=True)
        except Exception as error:
            raise CrossEncoderUnavailableError(
                f"cross-encoder {config.model!r} could not be loaded from {location!r} "
                f"(local files only): {type(error).__name__}: {error}"
            ) from error
        self.model = config.model
        self._batch_size = config.batch_size
        self._lock = threading.Lock()

    def score(self, query: str, texts: Sequence[str], *, deadline: Deadline | None = None) -> list[float]:
        if not texts:
            return []
        if deadline is not None:
            deadline.check("the cross-encoder")
        with self._lock:
            scores = self._model.predict([(query, text) for text in texts], batch_size=self._batch_size,
                                         show_progress_bar=False, convert_to_numpy=True)
        return [float(value) for value in scores.reshape(len(texts), -1)[:, 0]]
