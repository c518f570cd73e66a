"""``POST /api/chat`` with a real LLM behind ``ragstream serve``: a client that goes away mid-answer
cancels the stream, which closes the LLM call (issue 5). Uses the ``smollm2_server`` fixture."""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from support.server_process import RunningServer, running_server

pytestmark = pytest.mark.slow  # a real LLM server (llama.cpp) behind ragstream serve

TIMEOUT = httpx.Timeout(300.0)
# Long enough that the model is still writing when the client leaves.
QUESTION = "Explain in detail every kind of timeout a client can set and how to configure each one."
EVENTS_BEFORE_LEAVING = 2
LOG_WAIT_SECONDS = 120.0


@pytest.fixture(scope="module")
def llm_server(tmp_path_factory: pytest.TempPathFactory, smollm2_server: str,
               shared_data: Path) -> Iterator[RunningServer]:
    """``ragstream serve`` answering with the LLM; the pipeline agents keep their rules (no llm_stages)."""
    settings = {"LLM__BASE_URL": smollm2_server, "LLM__MODEL": "smollm2", "LLM__MAX_TOKENS": "120",
                "LLM__CONTEXT_WINDOW": "2048", "ANSWER__CONTEXT_TOKENS": "700"}  # the server's 2048-token context
    with running_server(tmp_path_factory.mktemp("llm-server"), **settings) as running:
        path = shared_data / "markdown_docs" / "httpx" / "docs" / "advanced" / "timeouts.md"
        response = httpx.post(f"{running.url}/api/documents", files={"files": (path.name, path.read_bytes())},
                              timeout=TIMEOUT)
        assert response.status_code == 201, response.text
        yield running


def _events(lines: Iterator[str]) -> Iterator[tuple[str, dict]]:
    kind = None
    for line in lines:
        if line.startswith("event: "):
            kind = line.removeprefix("event: ")
        elif line.startswith("data: "):
            yield kind or "message", json.loads(line.removeprefix("data: "))


def _wait_for_log(server: RunningServer, text: str) -> str:
    deadline = time.monotonic() + LOG_WAIT_SECONDS
    while time.monotonic() < deadline:
        log = server.log_text()
        if text in log:
            return log
        time.sleep(0.25)
    raise AssertionError(f"{text!r} not in the server log:\n{server.log_text()[-4000:]}")


def test_client_disconnect_cancels_llm_stream(llm_server: RunningServer):
    # A UUID: some providers (llama-cpp-python's server, through starlette-context) answer 400 to any other
    # X-Request-ID, and ragstream forwards the request id to the provider.
    request_id = str(uuid.uuid4())
    received: list[str] = []
    with httpx.Client(base_url=llm_server.url, timeout=TIMEOUT) as client:
        with client.stream("POST", "/api/chat", json={"message": QUESTION},
                           headers={"X-Request-ID": request_id}) as response:
            assert response.status_code == 200, response.read()
            conversation_id = response.headers["X-Conversation-ID"]
            for kind, _ in _events(response.iter_lines()):
                received.append(kind)
                if len(received) == EVENTS_BEFORE_LEAVING:
                    break
        # Leaving the block closes the connection before the answer is done.
    assert received and "done" not in received, received
    log = _wait_for_log(llm_server, f"[{request_id}] ragstream.server: stream cancelled after")
    assert f"[{request_id}] ragstream.server: client disconnected after" in log
    turns = httpx.get(f"{llm_server.url}/api/conversations/{conversation_id}", timeout=TIMEOUT).json()
    assert len(turns) == 1 and turns[0]["incomplete"] is True and turns[0]["user"] == QUESTION
    # The server is healthy and answers the next question in full.
    with httpx.Client(base_url=llm_server.url, timeout=TIMEOUT) as client:
        events = list(_events(client.post("/api/chat", json={"message": "What is a pool timeout?"}).text.splitlines()))
    assert events[-1][0] == "done" and events[-1][1]["response"]["metadata"]["mode"] == "llm"


def test_any_request_id_shape_reaches_the_llm(llm_server: RunningServer):
    """Some providers (llama-cpp-python's server) refuse non-UUID request ids; ragstream sends a derived UUID."""
    with httpx.Client(base_url=llm_server.url, timeout=TIMEOUT) as client:
        response = client.post("/api/chat", json={"message": "What is a pool timeout?"}, headers={"X-Request-ID": "trace-42"})
    assert response.status_code == 200 and response.headers["X-Request-ID"] == "trace-42"
    events = list(_events(response.text.splitlines()))
    assert events[-1][0] == "done" and events[-1][1]["response"]["metadata"]["mode"] == "llm"
