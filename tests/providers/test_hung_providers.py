"""Issue 25.2 and 25.3: a hung embedder or LLM behind real ``ragstream serve`` processes.

The hung provider is a real TCP endpoint on 127.0.0.1 that accepts every connection and never answers
(``loopback.HungEndpoint``): each HTTP attempt the server makes is one connection it accepts. The bounds are
checked by counting those attempts, never by timing: the first question waits for one timed-out attempt
(no retry after a timeout, which opens the provider's circuit breaker), later ones send none.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from support.loopback import HungEndpoint
from support.server_process import running_server

TIMEOUT = httpx.Timeout(120.0)
PROVIDER_TIMEOUT = "1"  # seconds: each test waits for one such timeout
SEED = ("seed.md", b"# Seed\n\nCats purr and dogs bark; a small document for searches to find.\n")
HASH_DIMENSIONS = "256"  # the hash embedder's vector size: the index built with it opens without an embedder


def assert_error(response: httpx.Response, status: int, code: str) -> dict:
    assert response.status_code == status, response.text
    body = response.json()
    assert body["error"]["code"] == code, body
    return body


def sse_events(response: httpx.Response) -> list[tuple[str, dict]]:
    events = []
    for block in response.text.strip().split("\n\n"):
        lines = dict(line.split(": ", 1) for line in block.splitlines())
        events.append((lines["event"], json.loads(lines["data"])))
    return events


@pytest.fixture(scope="module")
def seeded_index(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A data dir holding the seed document, indexed with the hash embedder (256 dimensions); the tests' servers
    open it one after the other."""
    tmp = tmp_path_factory.mktemp("seeded")
    with running_server(tmp / "build", hash_embedder=True, data_dir=tmp / "data") as server:
        httpx.post(f"{server.url}/api/documents", files={"files": SEED}, timeout=TIMEOUT).raise_for_status()
    return tmp / "data"


@pytest.fixture
def hung() -> Iterator[HungEndpoint]:
    with HungEndpoint() as endpoint:
        yield endpoint


def embedder_server(tmp_path: Path, data_dir: Path, hung: HungEndpoint):
    return running_server(tmp_path / "serve", data_dir=data_dir, RERANKER__BACKEND="none",
                          EMBEDDING__PROVIDER="openai", EMBEDDING__BASE_URL=hung.base_url,
                          EMBEDDING__TIMEOUT_SECONDS=PROVIDER_TIMEOUT, EMBEDDING__DIMENSIONS=HASH_DIMENSIONS)


def test_hung_embedder_retrieve_names_the_embedder_and_the_breaker_answers_later_questions(
        tmp_path: Path, seeded_index: Path, hung: HungEndpoint):
    with embedder_server(tmp_path, seeded_index, hung) as server, \
            httpx.Client(base_url=server.url, timeout=TIMEOUT) as api:
        body = assert_error(api.post("/api/retrieve", json={"query": "cats purr"}), 503, "embedder_unavailable")
        assert "vector" not in body["error"]["message"].lower()
        assert hung.connections == 1  # one attempt: a timeout is not retried, it opens the breaker
        body = assert_error(api.post("/api/retrieve", json={"query": "dogs bark"}), 503, "embedder_unavailable")
        assert "circuit" in body["error"]["message"]
        search = api.post("/api/search", json={"query": "cats purr"})
        assert search.status_code == 200, search.text
        result = search.json()
        assert result["mode"] == "bm25" and result["requested_mode"] == "hybrid"
        assert "embedder unavailable" in result["fallback_reason"]
        assert [hit["chunk"]["metadata"]["title"] for hit in result["hits"]] == ["Seed"]
        answer = api.post("/api/query", json={"query": "Do cats purr?"})
        assert answer.status_code == 200, answer.text
        assert hung.connections == 1  # the breaker answered every later call at once


def test_hung_embedder_search_falls_back_to_bm25_after_one_attempt(
        tmp_path: Path, seeded_index: Path, hung: HungEndpoint):
    with embedder_server(tmp_path, seeded_index, hung) as server, \
            httpx.Client(base_url=server.url, timeout=TIMEOUT) as api:
        for query in ("cats purr", "dogs bark"):
            result = api.post("/api/search", json={"query": query}).json()
            assert result["mode"] == "bm25" and result["hits"], result
            assert "embedder unavailable" in result["fallback_reason"]
        assert hung.connections == 1


def hung_llm_server(tmp_path: Path, hung: HungEndpoint):
    return running_server(tmp_path, hash_embedder=True, LLM__BASE_URL=hung.base_url,
                          LLM__TIMEOUT_SECONDS=PROVIDER_TIMEOUT)


def test_hung_llm_costs_one_timeout_then_the_breaker_answers(tmp_path: Path, hung: HungEndpoint):
    with hung_llm_server(tmp_path, hung) as server, httpx.Client(base_url=server.url, timeout=TIMEOUT) as api:
        api.post("/api/documents", files={"files": SEED}).raise_for_status()
        answer = api.post("/api/query", json={"query": "Do cats purr?"})
        assert answer.status_code == 200, answer.text
        metadata = answer.json()["metadata"]
        assert metadata["mode"] == "extractive" and "LLM" in metadata["degraded_reason"]
        assert answer.json()["sources"]
        assert hung.connections == 1  # the timed-out attempt opened the breaker: no retry, no other LLM call
        chat = api.post("/api/chat", json={"message": "Do dogs bark?"})
        assert chat.status_code == 200, chat.text
        events = sse_events(chat)
        assert events[-1][0] == "done" and events[-1][1]["mode"] == "extractive"
        assert "circuit" in events[-1][1]["degraded_reason"]
        again = api.post("/api/query", json={"query": "Do dogs bark at cats?"})
        assert again.status_code == 200 and again.json()["metadata"]["mode"] == "extractive"
        assert hung.connections == 1


def test_hung_llm_chat_first(tmp_path: Path, hung: HungEndpoint):
    with hung_llm_server(tmp_path, hung) as server, httpx.Client(base_url=server.url, timeout=TIMEOUT) as api:
        api.post("/api/documents", files={"files": SEED}).raise_for_status()
        for message in ("Do dogs bark?", "Do cats purr?"):
            events = sse_events(api.post("/api/chat", json={"message": message}))
            assert events[-1][0] == "done" and events[-1][1]["mode"] == "extractive", events[-1]
        assert hung.connections == 1
