"""LLMClient: the retry policy (docs/answers.md), JSON output, and real calls to a local llama.cpp server."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import BaseModel
from support.scripted_llm import ScriptedServer

from ragstream.config import LLMConfig
from ragstream.errors import (
    ConfigError,
    LLMOutputError,
    LLMRateLimitError,
    LLMRequestError,
    LLMUnavailableError,
)
from ragstream.providers.llm_client import ChatStream, LLMClient
from ragstream.providers.llm_json import extract_json_object, parse_json_output


class Answer(BaseModel):
    answer: str




def make_client(base_url: str, **overrides: Any) -> tuple[LLMClient, list[float]]:
    """A client whose sleeps are recorded, not slept."""
    delays: list[float] = []
    fields = {"retry_jitter": 0.0, "timeout_seconds": 5.0, **overrides}
    return LLMClient(LLMConfig(base_url=base_url, api_key="test", **fields), sleep=delays.append), delays


MESSAGES = [{"role": "user", "content": "Say hello."}]


# -- retry policy against a scripted real HTTP server ----------------------------------------------


def test_retries_429_then_500_then_succeeds_with_backoff() -> None:
    with ScriptedServer([429, 500, 200]) as server:
        client, delays = make_client(server.base_url)
        result = client.chat(MESSAGES)
    assert result.text == "hello"
    assert (result.prompt_tokens, result.completion_tokens) == (7, 3)
    assert delays == [1.0, 2.0]  # base 1 s, doubling
    assert len(server.requests) == 3 and client.calls == 3 and client.retries == 2


def test_400_fails_at_once_without_retry() -> None:
    with ScriptedServer([400]) as server:
        client, delays = make_client(server.base_url)
        with pytest.raises(LLMRequestError) as caught:
            client.chat(MESSAGES)
    assert len(server.requests) == 1 and client.calls == 1 and delays == []
    assert caught.value.status_code == 400 and caught.value.code == "llm_request_error"


@pytest.mark.parametrize("status", [401, 404, 422])
def test_other_4xx_never_retried(status: int) -> None:
    with ScriptedServer([status]) as server:
        client, delays = make_client(server.base_url)
        with pytest.raises(LLMRequestError):
            client.chat(MESSAGES)
    assert len(server.requests) == 1 and delays == []


def test_500_forever_raises_unavailable_after_all_retries() -> None:
    with ScriptedServer([500]) as server:
        client, delays = make_client(server.base_url, max_retries=3)
        with pytest.raises(LLMUnavailableError) as caught:
            client.chat(MESSAGES)
    assert len(server.requests) == 1 + 3 and client.calls == 4
    assert delays == [1.0, 2.0, 4.0]
    assert caught.value.attempts == 4 and caught.value.status_code == 500


def test_429_forever_raises_rate_limit_and_delays_are_capped() -> None:
    with ScriptedServer([429]) as server:
        client, delays = make_client(server.base_url, max_retries=5, retry_max_seconds=3.0)
        with pytest.raises(LLMRateLimitError) as caught:
            client.chat(MESSAGES)
    assert len(server.requests) == 6
    assert delays == [1.0, 2.0, 3.0, 3.0, 3.0]
    assert caught.value.code == "llm_rate_limited"


def test_jitter_stays_within_its_share() -> None:
    with ScriptedServer([503]) as server:
        client, delays = make_client(server.base_url, max_retries=4, retry_jitter=0.25, retry_max_seconds=100.0)
        with pytest.raises(LLMUnavailableError):
            client.chat(MESSAGES)
    for n, delay in enumerate(delays):
        assert 0.75 * 2**n <= delay <= 1.25 * 2**n


def test_connection_refused_is_retried_then_unavailable() -> None:
    with ScriptedServer([200]) as server:
        base_url = server.base_url  # the port is closed once the server stops
    client, delays = make_client(base_url, max_retries=2)
    with pytest.raises(LLMUnavailableError) as caught:
        client.chat(MESSAGES)
    assert client.calls == 3 and delays == [1.0, 2.0] and caught.value.status_code is None


def test_timeout_is_retried_when_it_does_not_open_the_breaker() -> None:
    with ScriptedServer([200], delay=1.0) as server:
        client, delays = make_client(server.base_url, max_retries=1, timeout_seconds=0.2,
                                     breaker_opens_on_timeout=False)
        with pytest.raises(LLMUnavailableError):
            client.chat(MESSAGES)
    assert client.calls == 2 and delays == [1.0]


def test_timeout_is_not_retried_by_default() -> None:
    with ScriptedServer([200], delay=1.0) as server:
        client, delays = make_client(server.base_url, max_retries=1, timeout_seconds=0.2)
        with pytest.raises(LLMUnavailableError):
            client.chat(MESSAGES)
    assert client.calls == 1 and delays == [] and client.breaker.state == "open"


def test_request_carries_model_temperature_seed_and_max_tokens() -> None:
    with ScriptedServer([200]) as server:
        client, _ = make_client(server.base_url, model="m1", seed=7, max_tokens=33)
        client.chat(MESSAGES)
        client.chat(MESSAGES, max_tokens=5, temperature=0.5)
    first, second = server.requests
    assert (first["model"], first["temperature"], first["seed"], first["max_tokens"]) == ("m1", 0.0, 7, 33)
    assert (second["temperature"], second["max_tokens"]) == (0.5, 5)


def test_disabled_config_is_refused() -> None:
    with pytest.raises(ConfigError):
        LLMClient(LLMConfig())


# -- JSON output ---------------------------------------------------------------------------------


def test_complete_json_asks_for_json_mode() -> None:
    with ScriptedServer([200], reply='{"answer": "Paris"}') as server:
        client, _ = make_client(server.base_url)
        assert client.complete_json(MESSAGES, Answer) == Answer(answer="Paris")
    (body,) = server.requests
    assert body["response_format"] == {"type": "json_object"}
    assert body["messages"][0]["role"] == "system" and "JSON Schema" in body["messages"][0]["content"]


def test_complete_json_falls_back_when_json_mode_is_refused() -> None:
    reply = 'Sure! ```json\n{"answer": "Paris"}\n```'
    with ScriptedServer([200], reply=reply, refuse_json_mode=True) as server:
        client, _ = make_client(server.base_url)
        assert client.complete_json(MESSAGES, Answer).answer == "Paris"
        assert client.complete_json(MESSAGES, Answer).answer == "Paris"  # remembers: no second refusal
    assert ["response_format" in r for r in server.requests] == [True, False, False]


def test_complete_json_raises_output_error_on_invalid_answers() -> None:
    with ScriptedServer([200], reply="I don't know.") as server:
        client, _ = make_client(server.base_url)
        with pytest.raises(LLMOutputError) as caught:
            client.complete_json(MESSAGES, Answer)
    assert caught.value.text == "I don't know." and caught.value.code == "llm_output_invalid"
    with pytest.raises(LLMOutputError):
        parse_json_output('{"reply": 1}', Answer)


def test_extract_json_object_skips_prose_and_broken_braces() -> None:
    assert extract_json_object('x {bad} then {"a": {"b": [1, "}"]}} tail {"c": 2}') == {"a": {"b": [1, "}"]}}
    assert extract_json_object("no object [1, 2]") is None


# -- a real llama.cpp server (skipped when it cannot start) ----------------------------------------


@pytest.fixture(scope="module")
def smollm2_client(smollm2_server: str) -> LLMClient:
    return LLMClient(LLMConfig(base_url=smollm2_server, max_tokens=32, timeout_seconds=120.0))


def test_llama_chat_returns_text(smollm2_client: LLMClient) -> None:
    result = smollm2_client.chat([{"role": "user", "content": "What is the capital of France?"}])
    assert result.text.strip()
    assert result.prompt_tokens and result.completion_tokens


def test_llama_stream_chat_yields_several_tokens(smollm2_client: LLMClient) -> None:
    stream = smollm2_client.stream_chat([{"role": "user", "content": "Count from one to ten in words."}])
    assert isinstance(stream, ChatStream)
    deltas = list(stream)
    assert len(deltas) >= 3 and all(isinstance(d, str) for d in deltas)
    assert stream.done and stream.result.text == "".join(deltas)


def test_llama_complete_json_validates_schema(qwen_server: str) -> None:
    client = LLMClient(LLMConfig(base_url=qwen_server, max_tokens=48, timeout_seconds=120.0))
    messages = [{"role": "user", "content": "What is the capital of France? Answer in the field 'answer'."}]
    answer = client.complete_json(messages, Answer)
    assert isinstance(answer, Answer) and answer.answer.strip()


def test_llama_stops_where_the_model_writes_a_stop_string(qwen_server: str) -> None:
    client = LLMClient(LLMConfig(base_url=qwen_server, max_tokens=96, timeout_seconds=120.0, temperature=0.0))
    text = "Timeouts default to five seconds.\n[2] SOURCE: notes.md\nSPAN: notes chunk 0"
    messages = [{"role": "user", "content": f"Repeat this text exactly, nothing else:\n\n```text\n{text}\n```"}]
    free = client.chat(messages)
    assert "SOURCE:" in free.text, "without a stop string the model copies the header line"
    stopped = client.chat(messages, stop=["] SOURCE: "])
    assert "SOURCE" not in stopped.text and "five seconds" in stopped.text and stopped.finish_reason == "stop"
    stream = client.stream_chat(messages, stop=["] SOURCE: "])
    streamed = "".join(stream)
    assert "SOURCE" not in streamed and stream.result.finish_reason == "stop"
