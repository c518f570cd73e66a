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

``llm.provider = "local"``: the endpoint is the llama.cpp server ragstream runs in a child process
(:mod:`ragstream.providers.local_llm`); each attempt asks it for its address (starting it again when it died),
and its breaker is keyed by the model file. Everything above applies unchanged.
"""

from __future__ import annotations

import functools
import json
import time
from collections.abc import Callable, Sequence
from http import HTTPStatus
from typing import TYPE_CHECKING, Any

import openai

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
from ragstream.providers.circuit import breaker_for
from ragstream.providers.deadline import Deadline
from ragstream.providers.llm_failures import check_completion, is_retryable, retry_after_seconds, translate_error
from ragstream.providers.llm_json import JSON_INSTRUCTION, M, Message, parse_json_output, with_system_instruction
from ragstream.providers.llm_queue import queue_for
from ragstream.providers.llm_stream import ChatCompletionResult, ChatStream, TrackedStream
from ragstream.providers.retry import RetryPolicy, call_with_retries

if TYPE_CHECKING:
    from ragstream.providers.local_llm import LocalModelServer

__all__ = ["ChatCompletionResult", "ChatStream", "LLMClient"]

BREAKER_KIND = "llm"
LOCAL_PLACEHOLDER_URL = "http://127.0.0.1/v1"
"""provider=local: the SDK's base URL until the model server listens (each request sets the real one)."""


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
        self.local: LocalModelServer | None = None
        endpoint = (config.base_url or "").rstrip("/")
        if config.provider == "local":  # the same HTTP path, to a model server ragstream runs (local_llm.py)
            from ragstream.providers.local_llm import local_server_for

            self.local = local_server_for(config)
            config = config.model_copy(update={"model": self.local.spec.alias, "base_url": None})
            endpoint = f"local:{self.local.spec.model_path}"
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
            base_url=config.base_url or LOCAL_PLACEHOLDER_URL,
            api_key=config.api_key or "not-needed",
            timeout=config.timeout_seconds,
            max_retries=0,
        )
        self.breaker = breaker_for(
            BREAKER_KIND,
            endpoint,
            config.breaker_failures,
            config.breaker_cooldown_seconds,
            error=functools.partial(LLMCircuitOpenError, attempts=0),
        )
        self.queue = queue_for(endpoint, config.max_concurrent, config.queue_max_waiting,
                               config.queue_full_retry_after_seconds)
        """The process's waiting line of this endpoint (the answer path waits in it, answer/llm_line.py)."""
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
        grammar: str | None = None,
        retry_rate_limits: bool = True,
    ) -> ChatCompletionResult:
        """One chat completion, ending by ``deadline`` when one is given, or where the model writes
        one of the ``stop`` strings (not included); ``grammar``: a llama.cpp GBNF grammar the text must follow.
        ``retry_rate_limits=False``: a 429 raises :class:`LLMRateLimitError` at once (the waiting line waits it out)."""
        return self._chat(messages, max_tokens=max_tokens, temperature=temperature, deadline=deadline, stop=stop,
                          retry_429=retry_rate_limits, **_grammar(grammar))

    def stream_chat(
        self,
        messages: Sequence[Message],
        *,
        max_tokens: int | None = None,
        temperature: float | None = None,
        deadline: Deadline | None = None,
        stop: Sequence[str] = (),
        grammar: str | None = None,
        retry_rate_limits: bool = True,
    ) -> ChatStream:
        """A streamed chat completion: iterate for token deltas, then read ``.result``.

        Only opening the stream is retried; an error mid-stream (or a stream that ends early)
        raises :class:`LLMUnavailableError`, and ``deadline`` bounds both opening and iterating.
        Usage is requested with ``stream_options``; a server refusing that gets the request again without.
        Generation ends where the model writes one of the ``stop`` strings (not sent); ``grammar`` and
        ``retry_rate_limits``: as in :meth:`chat`.
        """
        kwargs = self._request(messages, max_tokens, temperature, stop) | _grammar(grammar) | {"retry_429": retry_rate_limits}
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
        retry_429: bool = True,
        **extra: Any,
    ) -> ChatCompletionResult:
        completion, attempts = self._send(deadline, retry_429=retry_429,
                                          **self._request(messages, max_tokens, temperature, stop), **extra)
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

    def _send(self, deadline: Deadline | None, *, stream: bool = False, retry_429: bool = True,
              **kwargs: Any) -> tuple[Any, int]:
        """``chat.completions.create`` under the deadline, breaker and retry policy.

        Returns (response, attempts): a checked completion, or an open chunk stream when ``stream``.
        ``retry_429=False``: a 429 is neither retried nor counted against the breaker (the endpoint is up, only busy).
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
            if self.local is not None:  # (re)started when needed; its base URL changes with each start
                self._client.base_url = self.local.base_url(
                    deadline.timeout(self.local.start_timeout) if deadline else None)
            try:
                with metrics.timed_llm_call():
                    return self._create(stream=stream, timeout=timeout, **kwargs)
            except openai.APITimeoutError:
                hung = self.config.breaker_opens_on_timeout and timeout >= self.config.timeout_seconds
                raise

        def retryable(error: BaseException) -> bool:
            if not retry_429 and isinstance(error, openai.APIStatusError) and error.status_code == HTTPStatus.TOO_MANY_REQUESTS:
                return False
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
                self._record(None if cut_by_deadline or (isinstance(failure, LLMRateLimitError) and not retry_429)
                             else failure)
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
        return raw.parse(to=TrackedStream)

    def _record(self, failure: LLMError | None) -> None:
        """Tell the breaker how the call ended: unavailable and rate-limited count as failures."""
        if failure is None:
            self.breaker.release()
        elif isinstance(failure, (LLMUnavailableError, LLMRateLimitError)):
            self.breaker.record_failure()
        else:
            self.breaker.record_success()  # the endpoint answered (a 4xx or an unusable answer)


def _grammar(grammar: str | None) -> dict[str, Any]:
    """The request field of a llama.cpp grammar (not an OpenAI parameter: sent in the body as is)."""
    return {"extra_body": {"grammar": grammar}} if grammar else {}
