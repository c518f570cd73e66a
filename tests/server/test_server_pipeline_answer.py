"""The pipeline's selected text and its Answer step over HTTP (issue 32, rows 3 and 6), against a real
``ragstream serve`` process (hash embedder) whose answering model is a RecordingLLM (a real OpenAI-compatible
HTTP server that records what it was sent): ``POST /api/pipeline`` takes ``selected_text`` and Prompt_Builder
quotes it; ``POST /api/pipeline/{id}/answer`` streams the model's reply to exactly the messages Prompt_Builder
rendered, as ``/api/chat``'s events, and can run again; its 4xx errors."""

from __future__ import annotations

import json
from collections.abc import Iterator

import httpx
import pytest
from support.recording_llm import RecordingLLM
from support.server_process import RunningServer, running_server

ALICE_KEY = "alice-key-0123456789abcdef"
BOB_KEY = "bob-key-0123456789abcdef"
PAGE = (b"# Timeouts\n\nThe client waits five seconds for a response before it raises a timeout error. "
        b"You can change the timeout on every request or on the client.\n")
QUESTION = "How long does the client wait for a response?"
SELECTED = "raises a timeout error"
REPLY = "The client waits five seconds for a response [1]."
MAX_SELECTED = 200
TIMEOUT = 120.0


@pytest.fixture(scope="module")
def llm() -> Iterator[RecordingLLM]:
    with RecordingLLM(reply=REPLY) as recording:
        yield recording


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory, llm: RecordingLLM) -> Iterator[RunningServer]:
    keys = json.dumps([{"key": ALICE_KEY, "user": "alice"}, {"key": BOB_KEY, "user": "bob"}])
    with running_server(tmp_path_factory.mktemp("pipeline-answer"), hash_embedder=True, SERVER__KEYS=keys,
                        LLM__BASE_URL=llm.base_url, LLM__MODEL="recorder",
                        ANSWER__MAX_SELECTED_TEXT_CHARS=str(MAX_SELECTED)) as running:
        uploaded = httpx.post(f"{running.url}/api/documents", files={"files": ("timeouts.md", PAGE)},
                              headers=auth(ALICE_KEY), timeout=TIMEOUT)
        assert uploaded.status_code in (200, 201), uploaded.text
        yield running


def auth(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


@pytest.fixture
def alice(server: RunningServer) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=server.url, timeout=TIMEOUT, headers=auth(ALICE_KEY)) as client:
        yield client


def sse(response: httpx.Response) -> list[tuple[str, dict]]:
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith("text/event-stream")
    events = []
    for block in response.text.strip().split("\n\n"):
        lines = dict(line.split(": ", 1) for line in block.splitlines())
        events.append((lines["event"], json.loads(lines["data"])))
    return events


def assert_error(response: httpx.Response, status: int, code: str) -> None:
    assert response.status_code == status, response.text
    assert response.json()["error"]["code"] == code


def built(client: httpx.Client, **body: object) -> dict:
    """A SuperPrompt of ``QUESTION`` run through Prompt_Builder."""
    created = client.post("/api/pipeline", json={"text": QUESTION, **body})
    assert created.status_code == 201, created.text
    state = client.post(f"/api/pipeline/{created.json()['id']}/auto", json={}).json()
    assert state["next_stage"] is None
    return state


def test_selected_text_is_quoted_in_the_built_prompt(alice: httpx.Client) -> None:
    state = built(alice, selected_text=SELECTED)
    sp = state["superprompt"]
    assert sp["selected_text"] == SELECTED
    assert "### Selected text" in sp["Prompt_MD"] and SELECTED in sp["Prompt_MD"]
    assert f"### Selected text\n```text\n{SELECTED}\n```" in sp["prompt_ready"]
    assert SELECTED in sp["messages"][1]["content"]  # the user turn the answering model reads


def test_the_answer_step_sends_the_rendered_messages_and_streams_a_cited_answer(alice: httpx.Client,
                                                                                 llm: RecordingLLM) -> None:
    state = built(alice, selected_text=SELECTED)
    before = len(llm.requests)
    events = sse(alice.post(f"/api/pipeline/{state['id']}/answer"))
    [request] = llm.requests[before:]  # one call: the answer (no agent stage calls the LLM by default)
    sent = [{"role": m["role"], "content": m["content"]} for m in request["messages"]]
    assert sent == state["superprompt"]["messages"]  # what Prompt_Builder rendered, nothing rebuilt
    assert request["stream"] is True
    types = [event for event, _ in events]
    assert types[-1] == "done" and "token" in types and "citation" in types and "support" in types
    assert "".join(data["token"] for event, data in events if event == "token") == REPLY
    [citation] = [data for event, data in events if event == "citation"]
    assert citation["number"] == 1 and citation["title"]
    done = events[-1][1]
    assert done["mode"] == "llm" and done["message_id"] and done["conversation_id"]
    assert done["response"]["citations"][0]["number"] == 1
    assert [s["verdict"] for s in done["response"]["sentences"]]

    # Replayable: the SuperPrompt is unchanged, and the step runs again on the same prompt.
    assert alice.get(f"/api/pipeline/{state['id']}").json() == state
    again = sse(alice.post(f"/api/pipeline/{state['id']}/answer"))
    assert again[-1][0] == "done" and again[-1][1]["message_id"] != done["message_id"]
    assert llm.requests[-1]["messages"] == request["messages"]


def test_answer_step_errors(alice: httpx.Client, server: RunningServer) -> None:
    created = alice.post("/api/pipeline", json={"text": QUESTION}).json()
    assert_error(alice.post(f"/api/pipeline/{created['id']}/answer"), 409, "prompt_not_built")
    partial = alice.post(f"/api/pipeline/{created['id']}/auto", json={"until": "A5_Format_Enforcer"}).json()
    assert partial["next_stage"] == "Prompt_Builder"
    assert_error(alice.post(f"/api/pipeline/{created['id']}/answer"), 409, "prompt_not_built")
    assert_error(alice.post("/api/pipeline/unknown/answer"), 404, "pipeline_not_found")
    state = built(alice)
    with httpx.Client(base_url=server.url, timeout=TIMEOUT, headers=auth(BOB_KEY)) as bob:
        assert_error(bob.post(f"/api/pipeline/{state['id']}/answer"), 404, "pipeline_not_found")
    assert_error(httpx.post(f"{server.url}/api/pipeline/{state['id']}/answer", timeout=TIMEOUT), 401, "unauthorized")


def test_selected_text_errors(alice: httpx.Client) -> None:
    too_long = alice.post("/api/pipeline", json={"text": QUESTION, "selected_text": "x" * (MAX_SELECTED + 1)})
    assert_error(too_long, 422, "invalid_query")
    surrogate = alice.post("/api/pipeline", content=b'{"text": "q", "selected_text": "\\ud800"}',
                           headers={"Content-Type": "application/json"})
    assert_error(surrogate, 400, "invalid_unicode")
    assert_error(alice.post("/api/pipeline", json={"text": QUESTION, "selected_text": 5}), 422, "validation_error")
