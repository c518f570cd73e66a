"""A small client for any OpenAI-compatible chat endpoint, with the retry policy of seed 002.

The official ``openai`` SDK does the HTTP; its own retries are off (``max_retries=0``) and ours
apply instead: up to ``LLMConfig.max_retries`` retries on HTTP 429, 5xx, network errors and
timeouts, waiting ``retry_base_seconds * 2**n`` capped at ``retry_max_seconds``, +/-
``retry_jitter`` random share. 400 and every other 4xx fail at once. Exhausted retries raise
:class:`LLMRateLimitError` (429) or :class:`LLMUnavailableError` (network/5xx); a refused request
raises :class:`LLMRequestError`.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

import httpx
import openai
from pydantic import BaseModel, ValidationError

from ragstream import metrics
from ragstream.config import LLMConfig
from ragstream.errors import (
    ConfigError,
    LLMError,
    LLMOutputError,
    LLMRateLimitError,
    LLMRequestError,
    LLMUnavailableError,
)
from ragstream.observability import request_id_headers
from ragstream.providers.retry import RetryPolicy, call_with_retries

Message = Mapping[str, Any]
M = TypeVar("M", bound=BaseModel)
T = TypeVar("T")

JSON_INSTRUCTION = (
    "Reply with one JSON object only, no prose and no code fences. "
    "It must validate against this JSON Schema:\n{schema}"
)


@dataclass(frozen=True)
class ChatCompletionResult:
    """One finished answer. Token counts are ``None`` when the server reports no usage."""

    text: str
    prompt_tokens: int | None
    completion_tokens: int | None
    model: str
    finish_reason: str | None = None


class ChatStream(Iterator[str]):
    """Iterator over the token deltas of one streamed answer.

    Once exhausted, :attr:`result` holds the whole text, the finish reason and, when the server
    sent a usage chunk, the token counts. Use as a context manager (or call :meth:`close`) to
    release the connection when stopping early.
    """

    def __init__(self, chunks: Any, model: str, attempts: int) -> None:
        self._chunks = chunks
        self._parts: list[str] = []
        self._model = model
        self._attempts = attempts
        self._prompt_tokens: int | None = None
        self._completion_tokens: int | None = None
        self._finish_reason: str | None = None
        self.done = False
        self._deltas = self._iterate()

    def _iterate(self) -> Iterator[str]:
        try:
            for chunk in self._chunks:
                self._model = getattr(chunk, "model", None) or self._model
                usage = getattr(chunk, "usage", None)
                if usage is not None:
                    self._prompt_tokens = usage.prompt_tokens
                    self._completion_tokens = usage.completion_tokens
                for choice in getattr(chunk, "choices", None) or []:
                    self._finish_reason = choice.finish_reason or self._finish_reason
                    delta = choice.delta.content if choice.delta is not None else None
                    if delta:
                        self._parts.append(delta)
                        yield delta
        except (openai.APIError, httpx.HTTPError) as error:
            raise LLMUnavailableError(
                f"LLM stream broke after {len(self._parts)} deltas: {error}", attempts=self._attempts
            ) from error
        finally:
            self.close()
        self.done = True

    def __iter__(self) -> ChatStream:
        return self

    def __next__(self) -> str:
        return next(self._deltas)

    @property
    def text(self) -> str:
        """The text received so far."""
        return "".join(self._parts)

    @property
    def result(self) -> ChatCompletionResult:
        """The answer so far as a :class:`ChatCompletionResult` (complete once :attr:`done`)."""
        return ChatCompletionResult(
            self.text, self._prompt_tokens, self._completion_tokens, self._model, self._finish_reason
        )

    def close(self) -> None:
        """Release the HTTP connection."""
        close = getattr(self._chunks, "close", None)
        if callable(close):
            close()

    def __enter__(self) -> ChatStream:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class LLMClient:
    """Chat, streamed chat and schema-validated JSON over an OpenAI-compatible endpoint.

    ``calls`` counts HTTP requests sent (retries included) and ``retries`` the retries among them.
    ``sleep`` is injectable so tests need not wait out real backoff delays.
    """

    def __init__(
        self,
        config: LLMConfig,
        *,
        sleep: Callable[[float], None] = time.sleep,
        client: openai.OpenAI | None = None,
    ) -> None:
        if not config.enabled:
            raise ConfigError("no LLM configured: set llm.base_url (RAGSTREAM_LLM__BASE_URL)")
        self.config = config
        self.calls = 0
        self.retries = 0
        self._sleep = sleep
        self._policy = RetryPolicy(
            max_retries=config.max_retries,
            base_seconds=config.retry_base_seconds,
            cap_seconds=config.retry_max_seconds,
            jitter=config.retry_jitter,
        )
        self._client = client or openai.OpenAI(
            base_url=config.base_url,
            api_key=config.api_key or "not-needed",
            timeout=config.timeout_seconds,
            max_retries=0,
        )
        self._json_mode: bool | None = None  # None until the server accepted or refused it
        self._stream_usage: bool | None = None

    def chat(
        self, messages: Sequence[Message], *, max_tokens: int | None = None, temperature: float | None = None
    ) -> ChatCompletionResult:
        """One chat completion."""
        return self._chat(messages, max_tokens=max_tokens, temperature=temperature)

    def stream_chat(
        self, messages: Sequence[Message], *, max_tokens: int | None = None, temperature: float | None = None
    ) -> ChatStream:
        """A streamed chat completion: iterate for token deltas, then read ``.result``.

        Only opening the stream is retried; an error mid-stream raises :class:`LLMUnavailableError`.
        Usage is requested with ``stream_options``; a server refusing that gets the request again without.
        """
        kwargs = self._request(messages, max_tokens, temperature)
        if self._stream_usage is not False:
            try:
                chunks, attempts = self._send(stream=True, stream_options={"include_usage": True}, **kwargs)
                self._stream_usage = True
                return ChatStream(chunks, self.config.model, attempts)
            except LLMRequestError as error:
                if self._stream_usage or error.status_code not in (400, 422):
                    raise
                self._stream_usage = False
        chunks, attempts = self._send(stream=True, **kwargs)
        return ChatStream(chunks, self.config.model, attempts)

    def complete_json(
        self, messages: Sequence[Message], schema: type[M], *, max_tokens: int | None = None
    ) -> M:
        """Ask for one JSON object matching ``schema`` and return it validated.

        Uses ``response_format={"type": "json_object"}``; a server refusing that (400/422) is asked
        again without it. Raises :class:`LLMOutputError` when the answer holds no object that validates.
        """
        schema_text = json.dumps(schema.model_json_schema(), separators=(",", ":"))
        prompt = with_system_instruction(messages, JSON_INSTRUCTION.format(schema=schema_text))
        result: ChatCompletionResult | None = None
        if self._json_mode is not False:
            try:
                result = self._chat(prompt, max_tokens=max_tokens, response_format={"type": "json_object"})
                self._json_mode = True
            except LLMRequestError as error:
                if self._json_mode or error.status_code not in (400, 422):
                    raise
                self._json_mode = False
        if result is None:
            result = self._chat(prompt, max_tokens=max_tokens)
        return parse_json_output(result.text, schema)

    # -- internals -------------------------------------------------------------------------------

    def _request(
        self, messages: Sequence[Message], max_tokens: int | None, temperature: float | None
    ) -> dict[str, Any]:
        kwargs: dict[str, Any] = {
            "model": self.config.model,
            "messages": [dict(m) for m in messages],
            "max_tokens": max_tokens if max_tokens is not None else self.config.max_tokens,
            "temperature": temperature if temperature is not None else self.config.temperature,
        }
        if self.config.seed is not None:
            kwargs["seed"] = self.config.seed
        return kwargs

    def _chat(
        self,
        messages: Sequence[Message],
        *,
        max_tokens: int | None = None,
        temperature: float | None = None,
        **extra: Any,
    ) -> ChatCompletionResult:
        completion, attempts = self._send(**self._request(messages, max_tokens, temperature), **extra)
        choices = getattr(completion, "choices", None)
        if not choices:
            raise LLMOutputError("LLM answer holds no choices", attempts=attempts)
        usage = getattr(completion, "usage", None)
        return ChatCompletionResult(
            text=choices[0].message.content or "",
            prompt_tokens=usage.prompt_tokens if usage else None,
            completion_tokens=usage.completion_tokens if usage else None,
            model=getattr(completion, "model", None) or self.config.model,
            finish_reason=choices[0].finish_reason,
        )

    def _send(self, **kwargs: Any) -> tuple[Any, int]:
        """``chat.completions.create`` under the retry policy; returns (response, attempts)."""
        attempts = 0

        def once() -> Any:
            nonlocal attempts
            if attempts:
                self.retries += 1
            attempts += 1
            self.calls += 1
            with metrics.timed_llm_call():
                return self._client.chat.completions.create(**kwargs, extra_headers=request_id_headers())

        try:
            response = call_with_retries(once, self._policy, is_retryable=is_retryable, sleep=self._sleep)
        except openai.APIError as error:
            raise translate_error(error, attempts) from error
        return response, attempts


def is_retryable(error: BaseException) -> bool:
    """Seed 002: retry 429, 5xx, network errors and timeouts; never 400 or another 4xx."""
    if isinstance(error, openai.APIConnectionError):  # includes APITimeoutError
        return True
    if isinstance(error, openai.APIStatusError):
        return error.status_code == 429 or error.status_code >= 500
    return False


def translate_error(error: openai.APIError, attempts: int) -> LLMError:
    """Map an SDK error to ragstream's typed LLM errors."""
    if isinstance(error, openai.APIConnectionError):
        return LLMUnavailableError(f"LLM endpoint unreachable after {attempts} attempt(s): {error}", attempts=attempts)
    if isinstance(error, openai.APIStatusError):
        status = error.status_code
        detail = f"HTTP {status} after {attempts} attempt(s): {error.message}"
        if status == 429:
            return LLMRateLimitError(f"LLM rate limit: {detail}", status_code=status, attempts=attempts)
        if status >= 500:
            return LLMUnavailableError(f"LLM server error: {detail}", status_code=status, attempts=attempts)
        return LLMRequestError(f"LLM refused the request: {detail}", status_code=status, attempts=attempts)
    return LLMError(f"LLM call failed: {error}", attempts=attempts)


def with_system_instruction(messages: Sequence[Message], instruction: str) -> list[dict[str, Any]]:
    """``messages`` with ``instruction`` added to the leading system message (or as a new one)."""
    out = [dict(m) for m in messages]
    if out and out[0].get("role") == "system" and isinstance(out[0].get("content"), str):
        out[0]["content"] = f"{out[0]['content']}\n\n{instruction}"
    else:
        out.insert(0, {"role": "system", "content": instruction})
    return out


def extract_json_object(text: str) -> dict[str, Any] | None:
    """The first JSON object embedded in ``text`` (prose and code fences around it are skipped)."""
    decoder = json.JSONDecoder()
    start = text.find("{")
    while start != -1:
        try:
            value, _ = decoder.raw_decode(text, start)
        except json.JSONDecodeError:
            value = None
        if isinstance(value, dict):
            return value
        start = text.find("{", start + 1)
    return None


def parse_json_output(text: str, schema: type[M]) -> M:
    """Validate the first JSON object of ``text`` against ``schema``; :class:`LLMOutputError` if none fits."""
    data = extract_json_object(text)
    if data is None:
        raise LLMOutputError(f"LLM answer holds no JSON object: {text[:200]!r}", text=text)
    try:
        return schema.model_validate(data)
    except ValidationError as error:
        raise LLMOutputError(
            f"LLM JSON does not match {schema.__name__}: {error.error_count()} error(s): {error.errors()[0]['msg']}",
            text=text,
        ) from error
