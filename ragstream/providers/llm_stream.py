"""One streamed chat answer: :class:`ChatStream` iterates its token deltas and tells the circuit breaker how it
ended; :class:`ChatCompletionResult` is a finished answer (streamed or not)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import httpx
import openai
from openai.types.chat import ChatCompletionChunk

from ragstream.errors import DeadlineExceededError, LLMUnavailableError
from ragstream.providers.circuit import CircuitBreaker
from ragstream.providers.deadline import Deadline


@dataclass(frozen=True)
class ChatCompletionResult:
    """One finished answer. Token counts are ``None`` when the server reports no usage."""

    text: str
    prompt_tokens: int | None
    completion_tokens: int | None
    model: str
    finish_reason: str | None = None


class TrackedStream(openai.Stream[ChatCompletionChunk]):
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
