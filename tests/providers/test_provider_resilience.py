"""Bounded, fail-fast providers: Deadline, CircuitBreaker, Retry-After, and bad 200 answers.

The LLM client and the OpenAI-compatible embedder run against real HTTP servers on 127.0.0.1 that
misbehave on purpose (hang, answer HTML, 429 with Retry-After, 503 forever, streams cut short),
because a real provider cannot be made to fail on demand. Timeouts and cool-downs are small so the
file runs in seconds; Deadline and CircuitBreaker are also unit-tested with an injected clock.
"""

from __future__ import annotations

import email.utils
import json
import socket
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler
from typing import Any

import numpy as np
import pytest
from pydantic import BaseModel
from support.loopback import LoopbackServer

from ragstream.config import EmbeddingConfig, LLMConfig
from ragstream.errors import (
    DeadlineExceededError,
    EmbedderCircuitOpenError,
    EmbedderUnavailableError,
    EmbeddingFailureError,
    LLMCircuitOpenError,
    LLMRateLimitError,
    LLMRequestError,
    LLMUnavailableError,
    ProviderCircuitOpenError,
)
from ragstream.providers.circuit import CircuitBreaker, breaker_for, reset_breakers
from ragstream.providers.deadline import Deadline
from ragstream.providers.embedders.openai_compatible import OpenAICompatibleEmbedder
from ragstream.providers.llm_client import LLMClient
from ragstream.providers.retry import RetryPolicy, call_with_retries, parse_retry_after, retry_wait

MESSAGES = [{"role": "user", "content": "Say hello."}]
SLACK_SECONDS = 1.0  # "returned within the deadline": the deadline plus this much
DIMS = 8


class Answer(BaseModel):
    answer: str




class FakeClock:
    """A clock that moves only when told to."""

    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


# -- a misbehaving provider on 127.0.0.1 -----------------------------------------------------------

Behaviour = Callable[["Provider", BaseHTTPRequestHandler, dict[str, Any]], None]


class Provider(LoopbackServer):
    """A real HTTP server whose answers follow ``script``; the last behaviour repeats forever.

    ``requests`` holds (monotonic arrival time, JSON body) of every request received.
    """

    def __init__(self, script: list[Behaviour]) -> None:
        self.script = list(script)
        self.requests: list[tuple[float, dict[str, Any]]] = []
        self._lock = threading.Lock()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                raw = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                body = json.loads(raw or b"{}")
                with outer._lock:
                    outer.requests.append((time.monotonic(), body))
                    behaviour = outer.script.pop(0) if len(outer.script) > 1 else outer.script[0]
                try:
                    behaviour(outer, self, body)
                except (BrokenPipeError, ConnectionResetError):  # the client gave up first
                    pass

            def log_message(self, *args: Any) -> None:
                pass

        super().__init__(Handler)  # its release event lets hanging handlers end when the server stops

    @property
    def count(self) -> int:
        """Requests received so far."""
        with self._lock:
            return len(self.requests)



def send(handler: BaseHTTPRequestHandler, status: int, body: bytes, content_type: str,
         headers: dict[str, str] | None = None) -> None:
    handler.send_response(status)
    handler.send_header("Content-Type", content_type)
    handler.send_header("Content-Length", str(len(body)))
    for name, value in (headers or {}).items():
        handler.send_header(name, value)
    handler.end_headers()
    handler.wfile.write(body)


def hang(provider: Provider, handler: BaseHTTPRequestHandler, body: dict[str, Any]) -> None:
    """Accept the request and never answer."""
    provider.release.wait()


def ok(text: str = "hello") -> Behaviour:
    def behaviour(provider: Provider, handler: BaseHTTPRequestHandler, body: dict[str, Any]) -> None:
        payload = {
            "id": "chatcmpl-1", "object": "chat.completion", "created": 1, "model": "fake",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 5, "completion_tokens": 2, "total_tokens": 7},
        }
        send(handler, 200, json.dumps(payload).encode(), "application/json")

    return behaviour


def status(code: int, headers: dict[str, str] | None = None) -> Behaviour:
    def behaviour(provider: Provider, handler: BaseHTTPRequestHandler, body: dict[str, Any]) -> None:
        payload = {"error": {"message": f"fake {code}", "type": "fake", "code": code}}
        send(handler, code, json.dumps(payload).encode(), "application/json", headers)

    return behaviour


def raw(body: bytes, content_type: str) -> Behaviour:
    def behaviour(provider: Provider, handler: BaseHTTPRequestHandler, request: dict[str, Any]) -> None:
        send(handler, 200, body, content_type)

    return behaviour


def chunk(content: str | None, finish_reason: str | None = None) -> str:
    delta = {"content": content} if content is not None else {}
    data = {"id": "c1", "object": "chat.completion.chunk", "created": 1, "model": "fake",
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish_reason}]}
    return f"data: {json.dumps(data)}\n\n"


def stream(deltas: list[str], *, finish_reason: str | None = None, done: bool = False,
           pause: float = 0.0, then_hang: bool = False) -> Behaviour:
    """An SSE answer of ``deltas`` (``pause`` s apart); the connection closes after the last event."""

    def behaviour(provider: Provider, handler: BaseHTTPRequestHandler, body: dict[str, Any]) -> None:
        handler.send_response(200)
        handler.send_header("Content-Type", "text/event-stream")
        handler.send_header("Connection", "close")
        handler.end_headers()
        for delta in deltas:
            handler.wfile.write(chunk(delta).encode())
            handler.wfile.flush()
            if pause:
                time.sleep(pause)
        if then_hang:
            provider.release.wait()
            return
        if finish_reason is not None:
            handler.wfile.write(chunk(None, finish_reason).encode())
        if done:
            handler.wfile.write(b"data: [DONE]\n\n")
        handler.wfile.flush()

    return behaviour


def embeddings(dims: int = DIMS, *, rows: int | None = None, data_key: str = "data") -> Behaviour:
    def behaviour(provider: Provider, handler: BaseHTTPRequestHandler, body: dict[str, Any]) -> None:
        count = len(body["input"]) if rows is None else rows
        data = [{"object": "embedding", "index": i, "embedding": [float(i + 1)] * dims} for i in range(count)]
        send(handler, 200, json.dumps({"object": "list", data_key: data, "model": "fake"}).encode(),
             "application/json")

    return behaviour


def llm(provider: Provider, *, sleep: Callable[[float], None] | None = None, **overrides: Any) -> LLMClient:
    """A client with small timeouts and no jitter; ``sleep=None`` records waits instead of sleeping."""
    fields: dict[str, Any] = {"retry_jitter": 0.0, "timeout_seconds": 0.5, "max_retries": 0,
                              "retry_base_seconds": 0.01, "retry_max_seconds": 0.02, **overrides}
    config = LLMConfig(base_url=provider.base_url, api_key="test", **fields)
    return LLMClient(config, sleep=sleep if sleep is not None else (lambda seconds: None))


def recording_llm(provider: Provider, **overrides: Any) -> tuple[LLMClient, list[float]]:
    waits: list[float] = []
    return llm(provider, sleep=waits.append, **overrides), waits


def embedder(base_url: str, **overrides: Any) -> OpenAICompatibleEmbedder:
    fields: dict[str, Any] = {"provider": "openai", "base_url": base_url, "model": "fake", "max_retries": 0,
                              "retry_base_seconds": 0.01, "retry_max_seconds": 0.02, "timeout_seconds": 0.5,
                              **overrides}
    return OpenAICompatibleEmbedder(EmbeddingConfig(**fields))


def closed_port_url() -> str:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}/v1"


# -- Deadline ----------------------------------------------------------------------------------------


def test_deadline_bounds_each_timeout_by_the_time_left() -> None:
    clock = FakeClock()
    deadline = Deadline(10.0, clock=clock)
    assert deadline.remaining() == 10.0 and not deadline.expired()
    assert deadline.timeout(3.0) == 3.0
    clock.advance(8.0)
    assert deadline.timeout(3.0) == pytest.approx(2.0)
    assert deadline.allows(1.5) and not deadline.allows(2.0)
    clock.advance(2.0)
    assert deadline.expired() and deadline.remaining() == 0.0
    with pytest.raises(DeadlineExceededError) as caught:
        deadline.timeout(3.0)
    assert caught.value.code == "deadline_exceeded" and isinstance(caught.value, LLMUnavailableError)


def test_unbounded_deadline_never_expires() -> None:
    clock = FakeClock()
    deadline = Deadline.unbounded(clock=clock)
    clock.advance(1e9)
    assert deadline.remaining() is None and not deadline.expired() and not deadline.bounded
    assert deadline.timeout(7.0) == 7.0 and deadline.allows(1e9)
    assert Deadline(None).remaining() is None


def test_deadline_rejects_negative_budgets() -> None:
    with pytest.raises(ValueError):
        Deadline(-1.0)
    assert Deadline(0.0).expired()


# -- CircuitBreaker ------------------------------------------------------------------------------


def test_breaker_opens_after_consecutive_failures_only() -> None:
    breaker = CircuitBreaker("t", failure_threshold=3, cooldown_seconds=10.0, clock=FakeClock())
    breaker.record_failure()
    breaker.record_failure()
    breaker.record_success()  # not consecutive any more
    breaker.record_failure()
    breaker.record_failure()
    assert breaker.state == "closed"
    breaker.before_call()
    breaker.record_failure()
    assert breaker.state == "open"
    with pytest.raises(ProviderCircuitOpenError) as caught:
        breaker.before_call()
    assert "3 failure(s) in a row" in caught.value.message


def test_breaker_half_opens_for_one_trial_after_the_cooldown() -> None:
    clock = FakeClock()
    breaker = CircuitBreaker("t", 2, 10.0, clock, error=LLMCircuitOpenError)
    breaker.record_failure()
    breaker.record_failure()
    clock.advance(9.9)
    with pytest.raises(LLMCircuitOpenError):
        breaker.before_call()
    clock.advance(0.1)
    assert breaker.state == "half_open"
    breaker.before_call()  # the trial
    with pytest.raises(LLMCircuitOpenError, match="trial call is in flight"):
        breaker.before_call()  # everyone else still fails fast
    breaker.record_failure()  # the trial failed: open for another whole cool-down
    assert breaker.state == "open"
    clock.advance(5.0)
    with pytest.raises(LLMCircuitOpenError):
        breaker.before_call()
    clock.advance(5.0)
    breaker.before_call()
    breaker.record_success()
    assert breaker.state == "closed" and breaker.consecutive_failures == 0
    breaker.before_call()
    breaker.before_call()


def test_breaker_release_frees_the_trial_and_a_lost_trial_expires() -> None:
    clock = FakeClock()
    breaker = CircuitBreaker("t", 1, 10.0, clock)
    breaker.record_failure()
    clock.advance(10.0)
    breaker.before_call()
    breaker.release()  # the trial ended without a verdict (e.g. the caller was cancelled)
    breaker.before_call()
    clock.advance(10.0)  # a trial never reported is given up after one cool-down
    breaker.before_call()
    assert breaker.state == "half_open"


def test_breaker_threshold_zero_disables_it() -> None:
    breaker = CircuitBreaker("t", 0, 10.0, FakeClock())
    for _ in range(10):
        breaker.record_failure()
    breaker.before_call()
    assert breaker.state == "closed" and breaker.consecutive_failures == 10


def test_breaker_counts_exactly_under_threads() -> None:
    breaker = CircuitBreaker("t", 10_000, 10.0)

    def fail() -> None:
        for _ in range(500):
            breaker.record_failure()

    threads = [threading.Thread(target=fail) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert breaker.consecutive_failures == 4000 and breaker.state == "closed"


def test_breaker_registry_shares_one_breaker_per_endpoint() -> None:
    first = breaker_for("llm", "http://a/v1", 3, 30.0)
    assert breaker_for("llm", "http://a/v1", 5, 10.0) is first
    assert (first.failure_threshold, first.cooldown_seconds) == (5, 10.0)  # the latest settings apply
    assert breaker_for("llm", "http://b/v1", 3, 30.0) is not first
    assert breaker_for("embedder", "http://a/v1", 3, 30.0) is not first
    reset_breakers()
    assert breaker_for("llm", "http://a/v1", 3, 30.0) is not first


# -- retry waits -----------------------------------------------------------------------------------


def test_parse_retry_after_seconds_and_http_dates() -> None:
    now = 1_700_000_000.0
    assert parse_retry_after("1") == 1.0 and parse_retry_after(" 2.5 ") == 2.5
    assert parse_retry_after(email.utils.formatdate(now + 30, usegmt=True), now=lambda: now) == pytest.approx(30.0)
    assert parse_retry_after(email.utils.formatdate(now - 30, usegmt=True), now=lambda: now) == 0.0
    for unreadable in (None, "", "soon", "nan", "inf"):
        assert parse_retry_after(unreadable) is None
    assert retry_wait(2.0, None, 30.0) == 2.0
    assert retry_wait(2.0, 5.0, 30.0) == 5.0
    assert retry_wait(2.0, 500.0, 30.0) == 30.0
    assert retry_wait(2.0, 0.5, 30.0) == 2.0


def test_call_with_retries_does_not_sleep_past_the_deadline() -> None:
    clock = FakeClock()
    slept: list[float] = []
    calls = [0]

    def failing() -> None:
        calls[0] += 1
        raise OSError("down")

    def sleep(seconds: float) -> None:
        slept.append(seconds)
        clock.advance(seconds)

    with pytest.raises(DeadlineExceededError) as caught:
        call_with_retries(failing, RetryPolicy(5, 1.0, 10.0), is_retryable=lambda e: True,
                          sleep=sleep, deadline=Deadline(2.5, clock=clock))
    assert slept == [1.0] and calls[0] == 2  # the 2 s wait would end past 2.5 s: not slept
    assert isinstance(caught.value.__cause__, OSError)


# -- LLM: deadline against a server that never answers ----------------------------------------------


def test_hanging_llm_fails_within_the_deadline() -> None:
    with Provider([hang]) as provider:  # timeouts retried (not the default): the deadline still bounds them
        client = llm(provider, sleep=time.sleep, max_retries=5, retry_base_seconds=0.1, timeout_seconds=0.5,
                     breaker_opens_on_timeout=False)
        started = time.monotonic()
        with pytest.raises(DeadlineExceededError) as caught:
            client.chat(MESSAGES, deadline=Deadline(1.0))
        elapsed = time.monotonic() - started
    assert elapsed < 1.0 + SLACK_SECONDS
    assert caught.value.code == "deadline_exceeded"
    assert caught.value.attempts == client.calls == provider.count >= 2
    assert client.retries == client.calls - 1


def test_hanging_llm_without_deadline_fails_on_the_per_request_timeout() -> None:
    with Provider([hang]) as provider:
        client = llm(provider, timeout_seconds=0.3)
        started = time.monotonic()
        with pytest.raises(LLMUnavailableError) as caught:
            client.chat(MESSAGES)
        assert time.monotonic() - started < 0.3 + SLACK_SECONDS
    assert type(caught.value) is LLMUnavailableError and caught.value.attempts == 1


def test_a_timed_out_attempt_is_not_retried_and_opens_the_breaker() -> None:
    """Issue 25.3: a hung LLM cost four timeouts and three backoffs per question; now one timeout, and the
    breaker answers the question's other calls and the next questions at once."""
    with Provider([hang]) as provider:
        client = llm(provider, max_retries=3, timeout_seconds=0.3, breaker_failures=3)
        with pytest.raises(LLMUnavailableError) as caught:
            client.chat(MESSAGES, deadline=Deadline(30.0))
        assert "llm.timeout_seconds" in caught.value.message and caught.value.attempts == 1
        assert provider.count == client.calls == 1 and client.retries == 0
        assert client.breaker.state == "open"
        for call in (lambda: client.chat(MESSAGES), lambda: client.stream_chat(MESSAGES),
                     lambda: client.complete_json(MESSAGES, Answer)):
            with pytest.raises(LLMCircuitOpenError):
                call()
        assert provider.count == 1


def test_a_stream_open_that_times_out_opens_the_breaker() -> None:
    with Provider([hang]) as provider:
        client = llm(provider, max_retries=3, timeout_seconds=0.3, breaker_failures=3)
        with pytest.raises(LLMUnavailableError):
            client.stream_chat(MESSAGES)
        with pytest.raises(LLMCircuitOpenError):
            client.stream_chat(MESSAGES)
    assert provider.count == 1


def test_a_stream_stalled_for_a_whole_timeout_opens_the_breaker() -> None:
    with Provider([stream(["first"], then_hang=True)]) as provider:
        client = llm(provider, timeout_seconds=0.3, breaker_failures=3)
        chat = client.stream_chat(MESSAGES, deadline=Deadline(30.0))
        with pytest.raises(LLMUnavailableError):
            list(chat)
        assert chat.text == "first" and client.breaker.state == "open"
        with pytest.raises(LLMCircuitOpenError):
            client.chat(MESSAGES)
    assert provider.count == 1


def test_timeouts_count_like_other_failures_when_configured() -> None:
    with Provider([hang]) as provider:
        client = llm(provider, max_retries=2, timeout_seconds=0.2, breaker_failures=3, breaker_opens_on_timeout=False)
        with pytest.raises(LLMUnavailableError):
            client.chat(MESSAGES)
        assert provider.count == 3 and client.breaker.state == "closed"
        assert client.breaker.consecutive_failures == 1


def test_expired_deadline_sends_no_request() -> None:
    with Provider([ok()]) as provider:
        client = llm(provider)
        for call in (lambda d: client.chat(MESSAGES, deadline=d),
                     lambda d: client.stream_chat(MESSAGES, deadline=d),
                     lambda d: client.complete_json(MESSAGES, Answer, deadline=d)):
            with pytest.raises(DeadlineExceededError) as caught:
                call(Deadline(0.0))
            assert caught.value.attempts == 0
    assert provider.count == 0 and client.calls == 0 and client.breaker.state == "closed"


def test_stream_open_against_hanging_server_respects_the_deadline() -> None:
    with Provider([hang]) as provider:
        client = llm(provider, timeout_seconds=5.0, max_retries=3)
        started = time.monotonic()
        with pytest.raises(DeadlineExceededError):
            client.stream_chat(MESSAGES, deadline=Deadline(0.6))
        assert time.monotonic() - started < 0.6 + SLACK_SECONDS


# -- LLM: 200 answers that are not chat completions -------------------------------------------------

BAD_BODIES = {
    "html": raw(b"<html><body>oops</html>", "text/html"),
    "plain text": raw(b"oops", "text/plain"),
    "broken json": raw(b'{"choices": [', "application/json"),
    "json without choices": raw(b'{"status": "ok"}', "application/json"),
    "json string": raw(b'"oops"', "application/json"),
    "choice without message": raw(b'{"choices": [{"index": 0}]}', "application/json"),
}


@pytest.mark.parametrize("name", list(BAD_BODIES))
def test_non_completion_200_is_llm_unavailable(name: str) -> None:
    with Provider([BAD_BODIES[name]]) as provider:
        client = llm(provider, max_retries=2)
        with pytest.raises(LLMUnavailableError) as caught:
            client.chat(MESSAGES)
        assert caught.value.code == "llm_unavailable" and caught.value.status_code == 200
        with pytest.raises(LLMUnavailableError):
            client.complete_json(MESSAGES, Answer)
    assert provider.count == 2  # not retried: the same request would get the same body


def test_html_200_to_a_stream_request_is_llm_unavailable() -> None:
    with Provider([raw(b"<html>oops</html>", "text/html")]) as provider:
        client = llm(provider)
        with pytest.raises(LLMUnavailableError, match=r"no event received.*text/html"):
            list(client.stream_chat(MESSAGES))


# -- LLM: Retry-After ------------------------------------------------------------------------------


def test_429_retry_after_is_honoured() -> None:
    with Provider([status(429, {"Retry-After": "1"}), ok()]) as provider:
        client, waits = recording_llm(provider, max_retries=3)
        assert client.chat(MESSAGES).text == "hello"
    assert waits == [1.0]  # max(backoff 0.01, Retry-After 1)
    assert client.calls == 2 and client.retries == 1


def test_429_retry_after_really_waits() -> None:
    with Provider([status(429, {"Retry-After": "1"}), ok()]) as provider:
        client = llm(provider, sleep=time.sleep, max_retries=1)
        assert client.chat(MESSAGES, deadline=Deadline(5.0)).text == "hello"
        (first, _), (second, _) = provider.requests
    assert second - first >= 0.95


def test_503_retry_after_http_date_and_cap() -> None:
    later = email.utils.formatdate(time.time() + 3, usegmt=True)
    with Provider([status(503, {"Retry-After": later}), status(429, {"Retry-After": "3600"}), ok()]) as provider:
        client, waits = recording_llm(provider, max_retries=3, retry_after_max_seconds=2.0)
        assert client.chat(MESSAGES).text == "hello"
    assert 1.0 <= waits[0] <= 2.0  # a date ~3 s ahead, capped at 2 s
    assert waits[1] == 2.0  # an hour asked for, the configured cap waited


def test_retry_after_past_the_deadline_fails_at_once() -> None:
    with Provider([status(429, {"Retry-After": "5"}), ok()]) as provider:
        client, waits = recording_llm(provider, max_retries=3, retry_after_max_seconds=30.0)
        with pytest.raises(DeadlineExceededError) as caught:
            client.chat(MESSAGES, deadline=Deadline(2.0))
    assert waits == [] and provider.count == 1 and caught.value.attempts == 1


def test_retry_after_is_ignored_on_other_statuses() -> None:
    with Provider([status(500, {"Retry-After": "9"}), ok()]) as provider:
        client, waits = recording_llm(provider, max_retries=1)
        client.chat(MESSAGES)
    assert waits == [0.01]


# -- LLM: circuit breaker against a server answering 503 forever -----------------------------------


def test_breaker_opens_fails_fast_then_half_opens() -> None:
    COOLDOWN = 1.5  # noqa: N806 - long enough that a loaded machine's fast-fail loop stays inside it
    with Provider([status(503)]) as provider:
        client = llm(provider, max_retries=1, breaker_failures=2, breaker_cooldown_seconds=COOLDOWN)
        for _ in range(2):
            with pytest.raises(LLMUnavailableError):
                client.chat(MESSAGES)
        assert provider.count == 4 and client.calls == 4 and client.breaker.state == "open"

        other = llm(provider, breaker_failures=2, breaker_cooldown_seconds=COOLDOWN)  # same endpoint: same breaker
        for call in (lambda c: c.chat(MESSAGES), lambda c: c.stream_chat(MESSAGES),
                     lambda c: c.complete_json(MESSAGES, Answer)):
            for each in (client, other):
                with pytest.raises(LLMCircuitOpenError) as caught:
                    call(each)
                assert caught.value.code == "llm_unavailable" and caught.value.attempts == 0
        assert provider.count == 4 and client.calls == 4 and other.calls == 0

        time.sleep(COOLDOWN + 0.1)
        assert client.breaker.state == "half_open"
        with pytest.raises(LLMUnavailableError):
            client.chat(MESSAGES)  # the trial fails: open again at once
        assert provider.count == 6 and client.breaker.state == "open"
        with pytest.raises(LLMCircuitOpenError):
            client.chat(MESSAGES)

        provider.script = [ok()]
        time.sleep(COOLDOWN + 0.1)
        assert client.chat(MESSAGES).text == "hello"  # the trial succeeds: closed
        assert client.breaker.state == "closed"
        assert other.chat(MESSAGES).text == "hello"


def test_breaker_with_injected_clock_through_the_client() -> None:
    clock = FakeClock()
    with Provider([status(502), status(502), ok()]) as provider:
        shared = breaker_for("llm", provider.base_url, 2, 30.0, clock=clock)
        client = llm(provider, breaker_failures=2, breaker_cooldown_seconds=30.0)
        assert client.breaker is shared
        for _ in range(2):
            with pytest.raises(LLMUnavailableError):
                client.chat(MESSAGES)
        clock.advance(29.0)
        with pytest.raises(LLMCircuitOpenError):
            client.chat(MESSAGES)
        clock.advance(1.0)
        assert client.chat(MESSAGES).text == "hello" and shared.state == "closed"
    assert provider.count == 3


def test_request_errors_do_not_open_the_breaker() -> None:
    with Provider([status(400)]) as provider:
        client = llm(provider, breaker_failures=2)
        for _ in range(4):
            with pytest.raises(LLMRequestError):
                client.chat(MESSAGES)
    assert provider.count == 4 and client.breaker.state == "closed"


def test_rate_limit_after_retries_counts_as_a_failure() -> None:
    with Provider([status(429)]) as provider:
        client = llm(provider, max_retries=1, breaker_failures=1)
        with pytest.raises(LLMRateLimitError):
            client.chat(MESSAGES)
        with pytest.raises(LLMCircuitOpenError):
            client.chat(MESSAGES)
    assert provider.count == 2


def test_html_answers_open_the_breaker() -> None:
    with Provider([raw(b"<html>oops</html>", "text/html")]) as provider:
        client = llm(provider, breaker_failures=2)
        for _ in range(2):
            with pytest.raises(LLMUnavailableError):
                client.chat(MESSAGES)
        with pytest.raises(LLMCircuitOpenError):
            client.chat(MESSAGES)
    assert provider.count == 2


# -- LLM: streams ------------------------------------------------------------------------------------


def test_stream_closed_without_done_raises_after_its_deltas() -> None:
    with Provider([stream(["Hel", "lo"])]) as provider:
        client = llm(provider)
        chat = client.stream_chat(MESSAGES)
        received: list[str] = []
        with pytest.raises(LLMUnavailableError, match="stream ended early"):
            for delta in chat:
                received.append(delta)
    assert received == ["Hel", "lo"] and not chat.done and chat.result.finish_reason is None


def test_stream_finish_reason_and_truncation() -> None:
    script = [stream(["a", "b"], finish_reason="length", done=True), stream(["c"], finish_reason="stop"),
              stream(["d"], done=True)]
    with Provider(script) as provider:
        client = llm(provider)
        cut = client.stream_chat(MESSAGES)
        assert list(cut) == ["a", "b"]
        assert cut.done and cut.truncated and cut.result.finish_reason == "length" and cut.result.text == "ab"
        stopped = client.stream_chat(MESSAGES)  # a finish reason without [DONE] is complete
        assert list(stopped) == ["c"] and stopped.done and not stopped.truncated
        assert stopped.result.finish_reason == "stop"
        plain = client.stream_chat(MESSAGES)  # [DONE] without a finish reason is complete too
        assert list(plain) == ["d"] and plain.done and plain.result.finish_reason is None
    assert client.calls == 3 and client.breaker.state == "closed"


def test_stream_stops_when_the_deadline_passes_while_iterating() -> None:
    with Provider([stream([f"t{i} " for i in range(100)], pause=0.05, finish_reason="stop")]) as provider:
        client = llm(provider, timeout_seconds=5.0)
        started = time.monotonic()
        chat = client.stream_chat(MESSAGES, deadline=Deadline(0.5))
        received: list[str] = []
        with pytest.raises(DeadlineExceededError):
            for delta in chat:
                received.append(delta)
        assert time.monotonic() - started < 0.5 + SLACK_SECONDS
    assert 0 < len(received) < 100 and not chat.done
    assert client.breaker.consecutive_failures == 0  # running out of time is not the endpoint's fault


def test_stalled_stream_times_out_by_the_deadline() -> None:
    with Provider([stream(["first"], then_hang=True)]) as provider:
        client = llm(provider, timeout_seconds=5.0)
        started = time.monotonic()
        chat = client.stream_chat(MESSAGES, deadline=Deadline(0.6))
        with pytest.raises(DeadlineExceededError):
            list(chat)
        assert time.monotonic() - started < 0.6 + SLACK_SECONDS
    assert chat.text == "first"


def test_streams_ending_early_open_the_breaker() -> None:
    with Provider([stream(["x"])]) as provider:
        client = llm(provider, breaker_failures=2)
        for _ in range(2):
            with pytest.raises(LLMUnavailableError):
                list(client.stream_chat(MESSAGES))
        with pytest.raises(LLMCircuitOpenError):
            client.stream_chat(MESSAGES)
    assert provider.count == 2


def test_stream_falls_back_when_stream_options_are_refused() -> None:
    answer = stream(["ok"], finish_reason="stop", done=True)

    def refuse_usage(provider: Provider, handler: BaseHTTPRequestHandler, body: dict[str, Any]) -> None:
        (status(400) if "stream_options" in body else answer)(provider, handler, body)

    with Provider([refuse_usage]) as provider:
        client = llm(provider, breaker_failures=1)
        assert list(client.stream_chat(MESSAGES)) == ["ok"]
        assert list(client.stream_chat(MESSAGES)) == ["ok"]  # remembered: asked without at once
    assert ["stream_options" in body for _, body in provider.requests] == [True, False, False]
    assert client.breaker.state == "closed"


def test_stream_abandoned_by_the_consumer_gives_no_verdict() -> None:
    with Provider([stream(["a", "b", "c"], finish_reason="stop")]) as provider:
        client = llm(provider, breaker_failures=1)
        with client.stream_chat(MESSAGES) as chat:
            assert next(chat) == "a"
        assert client.breaker.state == "closed"
        assert list(client.stream_chat(MESSAGES)) == ["a", "b", "c"]


# -- embedder --------------------------------------------------------------------------------------


def test_embedder_closed_port_fails_then_breaker_fails_fast() -> None:
    client = embedder(closed_port_url(), max_retries=1, breaker_failures=2, breaker_cooldown_seconds=30.0,
                      dimensions=DIMS)
    for _ in range(2):
        with pytest.raises(EmbedderUnavailableError) as caught:
            client.embed_queries(["hello"])
        assert type(caught.value) is EmbedderUnavailableError
    assert client.breaker.state == "open"
    with pytest.raises(EmbedderCircuitOpenError) as fast:
        client.embed_queries(["hello"])
    assert fast.value.code == "embedder_unavailable" and isinstance(fast.value, EmbeddingFailureError)


def test_hung_embedder_costs_one_timeout_then_fails_fast() -> None:
    """Issue 25.2: four timed-out attempts and three backoffs per embedding call before; now one."""
    with Provider([hang]) as provider:
        client = embedder(provider.base_url, max_retries=3, breaker_failures=3, timeout_seconds=0.3, dimensions=DIMS)
        with pytest.raises(EmbedderUnavailableError) as caught:
            client.embed_queries(["hello"])
        assert type(caught.value) is EmbedderUnavailableError
        assert "embedding.timeout_seconds" in caught.value.message
        assert provider.count == 1 and client.breaker.state == "open"
        with pytest.raises(EmbedderCircuitOpenError):
            client.embed_documents(["a", "b"])
    assert provider.count == 1


def test_embedder_retries_stop_at_the_retry_budget() -> None:
    with Provider([hang]) as provider:  # timeouts retried (not the default): the budget bounds the call
        client = embedder(provider.base_url, max_retries=50, breaker_failures=3, timeout_seconds=0.2,
                          retry_budget_seconds=0.3, breaker_opens_on_timeout=False, dimensions=DIMS)
        with pytest.raises(EmbedderUnavailableError) as caught:
            client.embed_queries(["hello"])
    assert "retry_budget_seconds" in caught.value.message
    assert 2 <= provider.count <= 4  # 0.2 s attempts within 0.2 + 0.3 s, the last one cut short
    assert client.breaker.state == "closed" and client.breaker.consecutive_failures == 1


def test_embedder_breaker_opens_on_503_and_half_opens() -> None:
    clock = FakeClock()
    with Provider([status(503)]) as provider:
        breaker_for("embedder", provider.base_url, 2, 10.0, clock=clock)
        client = embedder(provider.base_url, max_retries=1, breaker_failures=2, breaker_cooldown_seconds=10.0)
        for _ in range(2):
            with pytest.raises(EmbedderUnavailableError):
                client.embed_documents(["a", "b"])
        assert provider.count == 4
        with pytest.raises(EmbedderCircuitOpenError):
            # shared by every embedder of the URL
            embedder(provider.base_url, breaker_failures=2, breaker_cooldown_seconds=10.0).embed_queries(["a"])
        assert provider.count == 4
        provider.script = [embeddings()]
        clock.advance(10.0)
        vectors = client.embed_documents(["a", "b"])
    assert vectors.shape == (2, DIMS) and np.allclose(np.linalg.norm(vectors, axis=1), 1.0)
    assert client.breaker.state == "closed" and provider.count == 5


def test_embedder_400_does_not_open_the_breaker() -> None:
    with Provider([status(400)]) as provider:
        client = embedder(provider.base_url, breaker_failures=1)
        for _ in range(3):
            with pytest.raises(EmbeddingFailureError) as caught:
                client.embed_queries(["a"])
            assert not isinstance(caught.value, EmbedderUnavailableError)
    assert provider.count == 3 and client.breaker.state == "closed"


BAD_EMBEDDINGS = {
    "html": raw(b"<html>oops</html>", "text/html"),
    "broken json": raw(b'{"data": [', "application/json"),
    "json list": raw(b"[1, 2, 3]", "application/json"),
    "missing data": embeddings(data_key="items"),
    "too few rows": embeddings(rows=1),
    "wrong size": embeddings(dims=DIMS + 1),
    "ragged": raw(json.dumps({"data": [{"index": 0, "embedding": [1.0, 2.0]},
                                       {"index": 1, "embedding": [1.0]}]}).encode(), "application/json"),
    "bad indices": raw(json.dumps({"data": [{"index": 0, "embedding": [1.0] * DIMS},
                                            {"index": 0, "embedding": [1.0] * DIMS}]}).encode(), "application/json"),
    "strings": raw(json.dumps({"data": [{"index": 0, "embedding": ["x"] * DIMS},
                                        {"index": 1, "embedding": ["y"] * DIMS}]}).encode(), "application/json"),
}


@pytest.mark.parametrize("name", list(BAD_EMBEDDINGS))
def test_malformed_embedding_replies_are_unavailable(name: str) -> None:
    with Provider([BAD_EMBEDDINGS[name]]) as provider:
        client = embedder(provider.base_url, dimensions=DIMS, max_retries=2)
        with pytest.raises(EmbedderUnavailableError) as caught:
            client.embed_documents(["a", "b"])
    assert caught.value.code == "embedder_unavailable" and provider.count == 1
    assert client.breaker.consecutive_failures == 1


def test_embedder_checks_later_replies_against_the_first() -> None:
    with Provider([embeddings(dims=DIMS), embeddings(dims=DIMS + 2)]) as provider:
        client = embedder(provider.base_url, batch_size=2)
        with pytest.raises(EmbedderUnavailableError, match=f"expected {DIMS}"):
            client.embed_documents(["a", "b", "c"])
        assert client.dimensions == DIMS


def test_a_call_cut_short_by_the_questions_deadline_is_no_verdict_on_the_endpoint() -> None:
    with Provider([hang]) as provider:
        patient = llm(provider, timeout_seconds=5.0, max_retries=0, breaker_failures=1)
        for _ in range(2):  # a slow endpoint under a short question budget: not evidence it is down
            with pytest.raises(DeadlineExceededError):
                patient.chat(MESSAGES, deadline=Deadline(0.3))
        assert patient.breaker.state == "closed" and provider.count == 2
        impatient = llm(provider, timeout_seconds=0.3, max_retries=0, breaker_failures=1)
        with pytest.raises(LLMUnavailableError):  # its own timeout ran out: that is a failure
            impatient.chat(MESSAGES, deadline=Deadline(5.0))
        assert impatient.breaker.state == "open"
