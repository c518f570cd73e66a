"""Embeddings from any OpenAI-compatible /v1/embeddings endpoint (OpenAI, Ollama, vLLM, llama.cpp)."""

from __future__ import annotations

import re
from collections.abc import Sequence

import httpx
import numpy as np

from ragstream import metrics
from ragstream.config import EmbeddingConfig
from ragstream.errors import EmbedderUnavailableError, EmbeddingFailureError
from ragstream.observability import request_id_headers
from ragstream.providers.embedders.base import normalise
from ragstream.providers.retry import RetryPolicy, call_with_retries

_TOKEN_PATTERN = re.compile(r"\w+|[^\w\s]")


class OpenAICompatibleEmbedder:
    """Batches texts to ``POST {base_url}/embeddings`` with retries on 429, 5xx and network errors."""

    def __init__(self, config: EmbeddingConfig) -> None:
        if not config.base_url:
            raise EmbedderUnavailableError("embedding.provider=openai needs embedding.base_url")
        headers = {"Authorization": f"Bearer {config.api_key}"} if config.api_key else {}
        self._client = httpx.Client(base_url=config.base_url.rstrip("/"), headers=headers, timeout=config.timeout_seconds)
        self._model = config.model
        self._batch_size = config.batch_size
        self._policy = RetryPolicy(config.max_retries, config.retry_base_seconds, config.retry_max_seconds)
        self.model_id = f"openai:{config.base_url}:{config.model}"
        self._dimensions = config.dimensions or 0

    @property
    def dimensions(self) -> int:
        if not self._dimensions:
            self._dimensions = int(self._request(["dimension probe"]).shape[1])
        return self._dimensions

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        with metrics.timed_embedding("documents", len(texts)):
            return self._embed(texts)

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        with metrics.timed_embedding("queries", len(texts)):
            return self._embed(texts)

    def count_tokens(self, text: str) -> int:
        """Approximate: remote tokenizers are not available locally; over-counts word pieces."""
        return len(_TOKEN_PATTERN.findall(text))

    def _embed(self, texts: Sequence[str]) -> np.ndarray:
        batches = [self._request(list(texts[i : i + self._batch_size])) for i in range(0, len(texts), self._batch_size)]
        if not batches:
            return np.zeros((0, self.dimensions), dtype=np.float32)
        return normalise(np.vstack(batches))

    def _request(self, batch: list[str]) -> np.ndarray:
        def post() -> httpx.Response:
            response = self._client.post("/embeddings", json={"model": self._model, "input": batch},
                                         headers=request_id_headers())
            response.raise_for_status()
            return response

        try:
            response = call_with_retries(post, self._policy, is_retryable=_is_retryable)
        except httpx.HTTPStatusError as error:
            raise EmbeddingFailureError(f"embedding endpoint answered {error.response.status_code}") from error
        except httpx.HTTPError as error:
            raise EmbedderUnavailableError(f"embedding endpoint unreachable: {error}") from error
        rows = sorted(response.json()["data"], key=lambda row: row["index"])
        return np.asarray([row["embedding"] for row in rows], dtype=np.float32)


def _is_retryable(error: BaseException) -> bool:
    if isinstance(error, httpx.HTTPStatusError):
        status = error.response.status_code
        return status == 429 or status >= 500
    return isinstance(error, httpx.TransportError)
