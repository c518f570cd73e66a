"""A small client for any OpenAI-compatible chat endpoint, with a bounded retry policy (docs/answers.md).

The official ``openai`` SDK does the HTTP; its own retries are off (``max_retries=0``) and ours
apply instead: up to ``LLMConfig.max_retries`` retries on HTTP 429, 5xx, network errors and
timeouts, waiting ``retry_base_seconds * 2**n`` capped at ``retry_max_seconds``, +/-
``retry_jitter`` random share, or longer when a 429/503 carries ``Retry-After`` (up to
``retry_after_max_seconds``). 400 and every other 4xx fail at once. Exhausted retries raise
:class:`LLMRateLimitError` (429) or :class:`LLMUnavailableError` (network/5xx); a refused request
raises :class:`LLMRequestError`; a 200 whose body is not a chat completion raises
:class:`LLMUnavailableError`.

Bounds: every call takes an optional :class:`Deadline` (the answer path makes one per question,
``answer.deadline_seconds``). Each HTTP attempt waits at most ``min(timeout_seconds, time
left)``, a backoff that would end past the deadline is not slept, and running out of time raises
:class:`DeadlineExceededError`. A circuit breaker shared by every client of the same ``base_url``
opens after ``breaker_failures`` calls in a row failed as unavailable; while open, calls raise
:class:`LLMCircuitOpenError` at once, with no HTTP request. An attempt (or a stream) that got no answer
for a whole ``timeout_seconds`` is not retried and opens the breaker at once (``breaker_opens_on_timeout``):
a hung endpoint costs one timeout, then the question's other calls and the next questions fail fast.
"""

from __future__ import annotations

import functools
import json
import math
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

import httpx
import openai
from openai.types.chat import ChatCompletionChunk
from pydantic import BaseModel, ValidationError

from ragstream import metrics
from ragstream.config import LLMConfig
from ragstream.errors import (
    ConfigError,
    DeadlineExceededError,
    LLMCircuitOpenError,
    LLMError,
    LLMOutputError,
    LLMRateLimitError,
    LLMRequestError,
    LLMUnavailableError,
)
from ragstream.observability import request_id_headers
from ragstream.providers.circuit import CircuitBreaker, breaker_for
from ragstream.providers.deadline import Deadline
from ragstream.providers.retry import RetryPolicy, call_with_retries, parse_retry_after

Message = Mapping[str, Any]
M = TypeVar("M", bound=BaseModel)
T = TypeVar("T")

JSON_INSTRUCTION = (
    "Reply with one JSON object only, no prose and no code fences. "
    "It must validate against this JSON Schema:\n{schema}"
)
BREAKER_KIND = "llm"
RETRY_AFTER_STATUSES = frozenset({429, 503})


@dataclass(frozen=True)
class ChatCompletionResult:
    """One finished answer. Token counts are ``None`` when the server reports no usage."""

    text: str
    prompt_tokens: int | None
    completion_tokens: int | None
    model: str
    finish_reason: str | None = None


class _TrackedStream(openai.Stream[ChatCompletionChunk]):
    """The SDK's chunk stream, noting whether the server ended it with ``data: [DONE]``."""

    saw_done = False

    def _iter_events(self) -> Iterator[Any]:
        for event in super()._iter_events():
            if event.data.startswith("[DONE]"):
                self.saw_done = True
            yield event


class ChatStream(Iterator[str]):
    """Iterator over the token deltas of one streamed answer.

    Once exhausted, :attr:`result` holds the whole text, the finish reason and, when the server
    sent a usage chunk, the token counts; :attr:`truncated` tells whether the token cap cut it.
    A connection that ends without a finish reason and without ``[DONE]`` raises
    :class:`LLMUnavailableError` rather than passing for a complete answer; a ``deadline`` that
    passes while iterating raises :class:`DeadlineExceededError`. Use as a context manager (or
    call :meth:`close`) to release the connection when stopping early.
    """

    def __init__(
        self,
        chunks: Any,
        model: str,
        attempts: int,
        *,
        deadline: Deadline | None = None,
        breaker: CircuitBreaker | None = None,
        trip_on_timeout: bool = False,
    ) -> None:
        self._chunks = chunks
        self._trip_on_timeout = trip_on_timeout
        self._parts: list[str] = []
        self._model = model
        self._attempts = attempts
        self._deadline = deadline
        self._breaker = breaker
        self._prompt_tokens: int | None = None
        self._completion_tokens: int | None = None
        self._finish_reason: str | None = None
        self._events = 0
        self._settled = breaker is None
        self.done = False
        self._deltas = self._iterate()

    def _iterate(self) -> Iterator[str]:
        try:
            for chunk in self._chunks:
                self._events += 1
                yield from self._read(chunk)
                if self._deadline is not None and self._deadline.expired():
                    self._settle(None)  # out of time, not a fault of the endpoint
                    raise DeadlineExceededError(
                        f"deadline of {self._deadline.seconds:g}s passed while streaming, "
                        f"after {len(self._parts)} deltas", attempts=self._attempts)
            if self._finish_reason is None and getattr(self._chunks, "saw_done", False) is not True:
                raise LLMUnavailableError(self._ended_early_message(), attempts=self._attempts)
            self.done = True
            self._settle(True)
        except (openai.APIError, httpx.HTTPError, ValueError) as error:
            failure = self._failure(error)
            stalled = isinstance(error, (httpx.TimeoutException, openai.APITimeoutError))
            out_of_time = isinstance(failure, DeadlineExceededError) or (
                self._deadline is not None and self._deadline.expired())
            if stalled and self._trip_on_timeout and not out_of_time:
                self._settle(False, trip=True)  # no token for a whole timeout: the endpoint hangs
            else:
                self._settle(False)
            raise failure from error
        except LLMUnavailableError:
            self._settle(False)
            raise
        finally:
            self.close()

    def _read(self, chunk: Any) -> Iterator[str]:
        self._model = getattr(chunk, "model", None) or self._model
        usage = getattr(chunk, "usage", None)
        if usage is not None:
            self._prompt_tokens = getattr(usage, "prompt_tokens", None)
            self._completion_tokens = getattr(usage, "completion_tokens", None)
        for choice in getattr(chunk, "choices", None) or []:
            self._finish_reason = getattr(choice, "finish_reason", None) or self._finish_reason
            delta = getattr(choice, "delta", None)
            content = getattr(delta, "content", None) if delta is not None else None
            if isinstance(content, str) and content:
                self._parts.append(content)
                yield content

    def _failure(self, error: BaseException) -> LLMUnavailableError:
        if isinstance(error, openai.APIConnectionError) and self._deadline is not None and self._deadline.expired():
            return DeadlineExceededError(
                f"deadline of {self._deadline.seconds:g}s passed while streaming, after {len(self._parts)} deltas",
                attempts=self._attempts)
        if isinstance(error, (openai.APIError, httpx.HTTPError)):
            return LLMUnavailableError(
                f"LLM stream broke after {len(self._parts)} deltas: {error}", attempts=self._attempts)
        return LLMUnavailableError(
            f"LLM stream sent a malformed chunk after {len(self._parts)} deltas: {error}", attempts=self._attempts)

    def _ended_early_message(self) -> str:
        if self._events == 0:
            response = getattr(self._chunks, "response", None)
            content_type = response.headers.get("content-type", "") if response is not None else ""
            return f"LLM stream ended early: no event received (Content-Type {content_type or 'unknown'!r})"
        return (f"LLM stream ended early: the connection closed after {len(self._parts)} deltas "
                "without a finish reason or [DONE]")

    def _settle(self, ok: bool | None, *, trip: bool = False) -> None:
        """Tell the breaker, once, how the stream ended (``None``: it says nothing about the endpoint;
        ``trip``: it hung, open the breaker at once)."""
        if self._settled or self._breaker is None:
            return
        self._settled = True
        if ok is None:
            self._breaker.release()
        elif ok:
            self._breaker.record_success()
        elif trip:
            self._breaker.trip()
        else:
            self._breaker.record_failure()

    def __iter__(self) -> ChatStream:
        return self

    def __next__(self) -> str:
        return next(self._deltas)

    @property
    def text(self) -> str:
        """The text received so far."""
        return "".join(self._parts)

    @property
    def finish_reason(self) -> str | None:
        """Why generation stopped (``stop``, ``length``, ...), once the server said so."""
        return self._finish_reason

    @property
    def truncated(self) -> bool:
        """True when the answer was cut by the token cap (finish reason ``length``)."""
        return self._finish_reason == "length"

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
        if not self.done:
            self._settle(None)  # stopped early by the consumer

    def __enter__(self) -> ChatStream:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class LLMClient:
    """Chat, streamed chat and schema-validated JSON over an OpenAI-compatible endpoint.

    ``calls`` counts HTTP requests sent (retries included) and ``retries`` the retries among them.
    ``sleep`` is injectable so tests need not wait out real backoff delays. ``breaker`` is the
    circuit breaker shared by every client of ``config.base_url``.
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
        self.breaker = breaker_for(
            BREAKER_KIND,
            (config.base_url or "").rstrip("/"),
            config.breaker_failures,
            config.breaker_cooldown_seconds,
            error=functools.partial(LLMCircuitOpenError, attempts=0),
        )
        self._json_mode: bool | None = None  # None until the server accepted or refused it
        self._stream_usage: bool | None = None

    def chat(
        self,
        messages: Sequence[Message],
        *,
        max_tokens: int | None = None,
        temperature: float | None = None,
        deadline: Deadline | None = None,
        stop: Sequence[str] = (),
    ) -> ChatCompletionResult:
        """One chat completion, ending by ``deadline`` when one is given, or where the model writes
        one of the ``stop`` strings (not included)."""
        return self._chat(messages, max_tokens=max_tokens, temperature=temperature, deadline=deadline, stop=stop)

    def stream_chat(
        self,
        messages: Sequence[Message],
        *,
        max_tokens: int | None = None,
        temperature: float | None = None,
        deadline: Deadline | None = None,
        stop: Sequence[str] = (),
    ) -> ChatStream:
        """A streamed chat completion: iterate for token deltas, then read ``.result``.

        Only opening the stream is retried; an error mid-stream (or a stream that ends early)
        raises :class:`LLMUnavailableError`, and ``deadline`` bounds both opening and iterating.
        Usage is requested with ``stream_options``; a server refusing that gets the request again without.
        Generation ends where the model writes one of the ``stop`` strings (not sent).
        """
        kwargs = self._request(messages, max_tokens, temperature, stop)
        if self._stream_usage is not False:
            try:
                chunks, attempts = self._send(deadline, stream=True, stream_options={"include_usage": True}, **kwargs)
                self._stream_usage = True
                return self._stream(chunks, attempts, deadline)
            except LLMRequestError as error:
                if self._stream_usage or error.status_code not in (400, 422):
                    raise
                self._stream_usage = False
        chunks, attempts = self._send(deadline, stream=True, **kwargs)
        return self._stream(chunks, attempts, deadline)

    def _stream(self, chunks: Any, attempts: int, deadline: Deadline | None) -> ChatStream:
        return ChatStream(chunks, self.config.model, attempts, deadline=deadline, breaker=self.breaker,
                          trip_on_timeout=self.config.breaker_opens_on_timeout)

    def complete_json(
        self,
        messages: Sequence[Message],
        schema: type[M],
        *,
        max_tokens: int | None = None,
        deadline: Deadline | None = None,
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
                result = self._chat(prompt, max_tokens=max_tokens, deadline=deadline,
                                    response_format={"type": "json_object"})
                self._json_mode = True
            except LLMRequestError as error:
                if self._json_mode or error.status_code not in (400, 422):
                    raise
                self._json_mode = False
        if result is None:
            result = self._chat(prompt, max_tokens=max_tokens, deadline=deadline)
        return parse_json_output(result.text, schema)

    # -- internals -------------------------------------------------------------------------------

    def _request(
        self, messages: Sequence[Message], max_tokens: int | None, temperature: float | None, stop: Sequence[str] = ()
    ) -> dict[str, Any]:
        kwargs: dict[str, Any] = {
            "model": self.config.model,
            "messages": [dict(m) for m in messages],
            "max_tokens": max_tokens if max_tokens is not None else self.config.max_tokens,
            "temperature": temperature if temperature is not None else self.config.temperature,
        }
        if self.config.seed is not None:
            kwargs["seed"] = self.config.seed
        if stop:
            kwargs["stop"] = list(stop)
        return kwargs

    def _chat(
        self,
        messages: Sequence[Message],
        *,
        max_tokens: int | None = None,
        temperature: float | None = None,
        deadline: Deadline | None = None,
        stop: Sequence[str] = (),
        **extra: Any,
    ) -> ChatCompletionResult:
        completion, attempts = self._send(deadline, **self._request(messages, max_tokens, temperature, stop), **extra)
        choices = getattr(completion, "choices", None)
        if not choices:
            raise LLMOutputError("LLM answer holds no choices", attempts=attempts)
        usage = getattr(completion, "usage", None)
        return ChatCompletionResult(
            text=choices[0].message.content or "",
            prompt_tokens=getattr(usage, "prompt_tokens", None) if usage else None,
            completion_tokens=getattr(usage, "completion_tokens", None) if usage else None,
            model=getattr(completion, "model", None) or self.config.model,
            finish_reason=getattr(choices[0], "finish_reason", None),
        )

    def _send(self, deadline: Deadline | None, *, stream: bool = False, **kwargs: Any) -> tuple[Any, int]:
        """``chat.completions.create`` under the deadline, breaker and retry policy.

        Returns (response, attempts): a checked completion, or an open chunk stream when ``stream``.
        """
        attempts = 0
        last_timeout = self.config.timeout_seconds
        hung = False  # an attempt got no answer for a whole llm.timeout_seconds
        if deadline is not None:
            try:
                deadline.check("the LLM call")
            except DeadlineExceededError as error:
                error.attempts = 0
                raise
        self.breaker.before_call()

        def once() -> Any:
            nonlocal attempts, last_timeout, hung
            timeout = deadline.timeout(self.config.timeout_seconds) if deadline else self.config.timeout_seconds
            last_timeout = timeout
            if attempts:
                self.retries += 1
            attempts += 1
            self.calls += 1
            try:
                with metrics.timed_llm_call():
                    return self._create(stream=stream, timeout=timeout, **kwargs)
            except openai.APITimeoutError:
                hung = self.config.breaker_opens_on_timeout and timeout >= self.config.timeout_seconds
                raise

        def retryable(error: BaseException) -> bool:
            return is_retryable(error) and not hung

        try:
            response = call_with_retries(
                once, self._policy, is_retryable=retryable, sleep=self._sleep, deadline=deadline,
                retry_after=retry_after_seconds, retry_after_max=self.config.retry_after_max_seconds,
            )
            if not stream:
                check_completion(response, attempts)
        except DeadlineExceededError as error:
            error.attempts = attempts
            self._record(error if attempts and last_timeout >= self.config.timeout_seconds else None)
            raise
        except openai.APIError as error:
            failure = translate_error(error, attempts)
            cut_by_deadline = False
            if isinstance(failure, LLMUnavailableError) and deadline is not None and deadline.expired():
                failure = DeadlineExceededError(
                    f"deadline of {deadline.seconds:g}s passed during attempt {attempts}: {error}",
                    status_code=failure.status_code, attempts=attempts)
                # the question's budget, not the endpoint, ended an attempt shorter than llm.timeout_seconds
                cut_by_deadline = last_timeout < self.config.timeout_seconds
            if hung:
                self.breaker.trip()
                failure.message = (f"{failure.message}; no answer within {self.config.timeout_seconds:g}s "
                                   "(llm.timeout_seconds): not retried, and its circuit breaker fails further "
                                   f"calls at once for {self.breaker.cooldown_seconds:g}s")
                failure.args = (failure.message,)
            else:
                self._record(None if cut_by_deadline else failure)
            raise failure from error
        except LLMError as error:
            self._record(error)
            raise
        except ValueError as error:  # the SDK could not decode a 200 body
            failure = LLMUnavailableError(
                f"LLM endpoint answered 200 with a body that is not a chat completion: {error}",
                status_code=200, attempts=attempts)
            self._record(failure)
            raise failure from error
        except BaseException:
            self.breaker.release()
            raise
        if not stream:  # a stream's outcome is known only once read: ChatStream tells the breaker
            self.breaker.record_success()
        return response, attempts

    def _create(self, *, stream: bool, timeout: float, **kwargs: Any) -> Any:
        extra_headers = request_id_headers()
        if not stream:
            return self._client.chat.completions.create(**kwargs, timeout=timeout, extra_headers=extra_headers)
        raw = self._client.chat.completions.with_raw_response.create(
            **kwargs, stream=True, timeout=timeout, extra_headers=extra_headers)
        return raw.parse(to=_TrackedStream)

    def _record(self, failure: LLMError | None) -> None:
        """Tell the breaker how the call ended: unavailable and rate-limited count as failures."""
        if failure is None:
            self.breaker.release()
        elif isinstance(failure, (LLMUnavailableError, LLMRateLimitError)):
            self.breaker.record_failure()
        else:
            self.breaker.record_success()  # the endpoint answered (a 4xx or an unusable answer)


def is_retryable(error: BaseException) -> bool:
    """Retry 429, 5xx, network errors and timeouts; never 400 or another 4xx."""
    if isinstance(error, openai.APIConnectionError):  # includes APITimeoutError
        return True
    if isinstance(error, openai.APIStatusError):
        return error.status_code == 429 or error.status_code >= 500
    return False


def retry_after_seconds(error: BaseException) -> float | None:
    """The ``Retry-After`` wait (``retry-after-ms`` or ``retry-after``) of a 429/503 answer, if any."""
    if not isinstance(error, openai.APIStatusError) or error.status_code not in RETRY_AFTER_STATUSES:
        return None
    headers = error.response.headers
    milliseconds = headers.get("retry-after-ms")
    if milliseconds is not None:
        try:
            value = float(milliseconds)
        except ValueError:
            value = math.nan
        if math.isfinite(value) and value >= 0:
            return value / 1000.0
    return parse_retry_after(headers.get("retry-after"))


def check_completion(completion: Any, attempts: int) -> None:
    """Raise :class:`LLMUnavailableError` unless ``completion`` looks like a chat completion.

    The SDK hands back the body text when a 200 is not JSON (e.g. an HTML error page from a
    proxy) and an unchecked model when the JSON lacks the schema; neither holds an answer.
    An empty ``choices`` list is a real (if useless) answer and is left to the caller.
    """
    choices = getattr(completion, "choices", None)
    if isinstance(completion, (str, bytes)) or not isinstance(choices, list):
        preview = completion[:120] if isinstance(completion, (str, bytes)) else type(completion).__name__
        raise LLMUnavailableError(
            f"LLM endpoint answered 200 with a body that is not a chat completion: {preview!r}",
            status_code=200, attempts=attempts)
    for choice in choices:
        message = getattr(choice, "message", None)
        content = getattr(message, "content", None) if message is not None else None
        if message is None or not (content is None or isinstance(content, str)):
            raise LLMUnavailableError(
                "LLM endpoint answered 200 with a choice that holds no message", status_code=200, attempts=attempts)


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
    return LLMUnavailableError(f"LLM call failed: {error}", attempts=attempts)


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
