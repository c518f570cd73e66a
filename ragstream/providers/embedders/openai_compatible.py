"""Embeddings from any OpenAI-compatible /v1/embeddings endpoint (OpenAI, Ollama, vLLM, llama.cpp).

Requests are retried on 429, 5xx and network errors, within ``embedding.retry_budget_seconds`` after the
first attempt: one call ends by ``timeout_seconds`` + that budget. A request that got no answer within
``timeout_seconds`` is not retried and opens the circuit breaker at once (``breaker_opens_on_timeout``): a
hung endpoint costs one timeout, not one per retry and per question. The breaker, shared by every embedder
of the same ``base_url``, also opens after ``embedding.breaker_failures`` calls in a row failed as
unavailable; while open, calls raise :class:`EmbedderCircuitOpenError` at once. A 200 whose body is
not the expected ``{"data": [{"index", "embedding"}, ...]}`` raises :class:`EmbedderUnavailableError`.
"""

from __future__ import annotations

import json
import re
from typing import Any

import httpx
import numpy as np

from ragstream.config import EmbeddingConfig
from ragstream.errors import (
    DeadlineExceededError,
    EmbedderCircuitOpenError,
    EmbedderUnavailableError,
    EmbeddingFailureError,
)
from ragstream.observability import request_id_headers
from ragstream.providers.circuit import breaker_for
from ragstream.providers.deadline import Deadline
from ragstream.providers.embedders.base import BatchedEmbedder
from ragstream.providers.retry import RetryPolicy, call_with_retries

_TOKEN_PATTERN = re.compile(r"\w+|[^\w\s]")
BREAKER_KIND = "embedder"


class OpenAICompatibleEmbedder(BatchedEmbedder):
    """Batches texts to ``POST {base_url}/embeddings`` with retries on 429, 5xx and network errors."""

    def __init__(self, config: EmbeddingConfig) -> None:
        if not config.base_url:
            raise EmbedderUnavailableError("embedding.provider=openai needs embedding.base_url")
        headers = {"Authorization": f"Bearer {config.api_key}"} if config.api_key else {}
        self._client = httpx.Client(base_url=config.base_url.rstrip("/"), headers=headers, timeout=config.timeout_seconds)
        self._model = config.model
        self._batch_size = config.batch_size
        self._policy = RetryPolicy(config.max_retries, config.retry_base_seconds, config.retry_max_seconds)
        self._timeout = config.timeout_seconds
        self._retry_budget = config.retry_budget_seconds
        self._trip_on_timeout = config.breaker_opens_on_timeout
        self.model_id = f"openai:{config.base_url}:{config.model}"
        self._dimensions = config.dimensions or 0
        self.breaker = breaker_for(BREAKER_KIND, config.base_url.rstrip("/"), config.breaker_failures,
                                   config.breaker_cooldown_seconds, error=EmbedderCircuitOpenError)

    def count_tokens(self, text: str) -> int:
        """Approximate: remote tokenizers are not available locally; over-counts word pieces."""
        return len(_TOKEN_PATTERN.findall(text))

    def _request(self, batch: list[str]) -> np.ndarray:
        deadline = Deadline(self._timeout + self._retry_budget)
        hung = False  # an attempt got no answer for a whole timeout

        def post() -> httpx.Response:
            nonlocal hung
            timeout = deadline.timeout(self._timeout)
            try:
                response = self._client.post("/embeddings", json={"model": self._model, "input": batch},
                                             headers=request_id_headers(), timeout=timeout)
            except httpx.TimeoutException:
                hung = timeout >= self._timeout  # not when the retry budget cut the attempt short
                raise
            response.raise_for_status()
            return response

        def retryable(error: BaseException) -> bool:
            return _is_retryable(error) and not (hung and self._trip_on_timeout)

        self.breaker.before_call()
        try:
            response = call_with_retries(post, self._policy, is_retryable=retryable, deadline=deadline)
            vectors = parse_embeddings(response, len(batch), self._dimensions)
        except httpx.HTTPStatusError as error:
            status = error.response.status_code
            if _is_retryable(error):
                self.breaker.record_failure()
                raise EmbedderUnavailableError(f"embedding endpoint answered {status} after its retries") from error
            self.breaker.record_success()  # the endpoint is up; it refused this request
            raise EmbeddingFailureError(f"embedding endpoint answered {status}") from error
        except httpx.TimeoutException as error:
            if hung and self._trip_on_timeout:
                self.breaker.trip()
                raise EmbedderUnavailableError(
                    f"embedding endpoint did not answer within {self._timeout:g}s (embedding.timeout_seconds); "
                    f"its circuit breaker fails further calls at once for "
                    f"{self.breaker.cooldown_seconds:g}s") from error
            self.breaker.record_failure()
            raise EmbedderUnavailableError(f"embedding endpoint unreachable: {error}") from error
        except httpx.HTTPError as error:
            self.breaker.record_failure()
            raise EmbedderUnavailableError(f"embedding endpoint unreachable: {error}") from error
        except DeadlineExceededError as error:  # the retry budget ran out
            self.breaker.record_failure()
            raise EmbedderUnavailableError(
                f"embedding endpoint still failing after {self._timeout + self._retry_budget:g}s "
                f"(embedding.timeout_seconds + retry_budget_seconds): {error.__cause__ or error}") from error
        except EmbedderUnavailableError:
            self.breaker.record_failure()
            raise
        except BaseException:
            self.breaker.release()
            raise
        self.breaker.record_success()
        if not self._dimensions:  # later replies must match the first one
            self._dimensions = int(vectors.shape[1])
        return vectors


def parse_embeddings(response: httpx.Response, expected_rows: int, dimensions: int = 0) -> np.ndarray:
    """The ``(expected_rows, dims)`` float32 vectors of an embeddings reply, in input order.

    Raises :class:`EmbedderUnavailableError` for a body that is not JSON, lacks ``data``, has the
    wrong number of rows, bad indices, ragged, empty or non-finite vectors, or vectors whose size
    differs from ``dimensions`` (when known, i.e. > 0).
    """

    def malformed(reason: str) -> EmbedderUnavailableError:
        return EmbedderUnavailableError(f"embedding endpoint answered {response.status_code} with {reason}")

    try:
        payload: Any = response.json()
    except (json.JSONDecodeError, UnicodeDecodeError) as error:
        content_type = response.headers.get("content-type", "unknown")
        raise malformed(f"a body that is not JSON (Content-Type {content_type!r})") from error
    data = payload.get("data") if isinstance(payload, dict) else None
    if not isinstance(data, list):
        raise malformed("no 'data' list")
    if len(data) != expected_rows:
        raise malformed(f"{len(data)} embeddings for {expected_rows} inputs")
    if not data:
        return np.zeros((0, dimensions), dtype=np.float32)
    if not all(isinstance(row, dict) and isinstance(row.get("embedding"), list) for row in data):
        raise malformed("a 'data' row without an 'embedding' list")
    indices = [row["index"] for row in data if isinstance(row.get("index"), int)]
    if len(indices) == len(data):  # every row numbered: put them in input order
        if sorted(indices) != list(range(expected_rows)):
            raise malformed(f"indices {indices[:10]} that are not 0..{expected_rows - 1}")
        data = sorted(data, key=lambda row: row["index"])
    sizes = {len(row["embedding"]) for row in data}
    if len(sizes) > 1 or 0 in sizes:
        raise malformed(f"vectors of sizes {sorted(sizes)[:5]}")
    try:
        vectors = np.asarray([row["embedding"] for row in data], dtype=np.float32)
    except (TypeError, ValueError) as error:
        raise malformed(f"non-numeric vectors: {error}") from error
    if vectors.ndim != 2 or (dimensions and vectors.shape[1] != dimensions):
        raise malformed(f"vectors of size {vectors.shape[-1]}, expected {dimensions}")
    if not np.isfinite(vectors).all():
        raise malformed("non-finite vector values")
    return vectors


def _is_retryable(error: BaseException) -> bool:
    if isinstance(error, httpx.HTTPStatusError):
        status = error.response.status_code
        return status == 429 or status >= 500
    return isinstance(error, httpx.TransportError)
