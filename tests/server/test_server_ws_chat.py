"""``/ws/chat`` over a real WebSocket client (the ``websockets`` package) against real ``ragstream serve``
processes (hash embedder): the same events as ``/api/chat``'s SSE, the same keys and user isolation, bad first
messages answered with an error event and a documented close code, and ``{"type": "stop"}`` stopping a
streaming LLM (a real OpenAI-compatible server on loopback, paced word by word).
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator

import httpx
import pytest
from support.recording_llm import RecordingLLM
from support.server_process import RunningServer, running_server
from websockets.exceptions import ConnectionClosed, InvalidStatus
from websockets.sync.client import ClientConnection, connect

ALICE_KEY = "alice-key-0123456789abcdef"
BOB_KEY = "bob-key-0123456789abcdef"
SECRET_WORD = "zanzibarquokka"
QUESTION = f"What does the {SECRET_WORD} protocol require before a launch?"
ALICE_TEXT = (f"# The {SECRET_WORD} protocol\n\nThe {SECRET_WORD} protocol requires two signatures before a launch. "
              f"Every {SECRET_WORD} launch is logged by the duty officer.\n").encode()
TIMEOUT = 60.0


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    tmp = tmp_path_factory.mktemp("ws")
    keys = json.dumps([{"key": ALICE_KEY, "user": "alice"}, {"key": BOB_KEY, "user": "bob"}])
    with running_server(tmp, hash_embedder=True, SERVER__KEYS=keys, SERVER__WS_FIRST_MESSAGE_SECONDS="2") as running:
        uploaded = httpx.post(f"{running.url}/api/documents", files={"files": ("protocol.md", ALICE_TEXT)},
                              headers={"Authorization": f"Bearer {ALICE_KEY}"}, timeout=TIMEOUT)
        assert uploaded.status_code in (200, 201), uploaded.text
        yield running


def ws_url(server: RunningServer, query: str = "") -> str:
    return server.url.replace("http://", "ws://") + "/ws/chat" + query


def receive_all(ws: ClientConnection) -> tuple[list[dict], int, str]:
    """Every message until the server closes: the events, the close code and reason."""
    events = []
    try:
        while True:
            events.append(json.loads(ws.recv(timeout=TIMEOUT)))
    except ConnectionClosed as closed:
        assert closed.rcvd is not None, "the server closed without a close frame"
        return events, closed.rcvd.code, closed.rcvd.reason


def ask(server: RunningServer, body: object, *, key: str | None = ALICE_KEY, query: str = "",
        headers: dict[str, str] | None = None) -> tuple[list[dict], int, str]:
    sent = {"Authorization": f"Bearer {key}"} if key else {}
    with connect(ws_url(server, query), additional_headers={**sent, **(headers or {})}, open_timeout=TIMEOUT) as ws:
        try:
            ws.send(body if isinstance(body, (str, bytes)) else json.dumps(body))
        except ConnectionClosed:  # the server may refuse (a forbidden X-User-ID) before the first message arrives
            pass
        return receive_all(ws)


def sse(server: RunningServer, body: dict, key: str) -> list[tuple[str, dict]]:
    response = httpx.post(f"{server.url}/api/chat", json=body, headers={"Authorization": f"Bearer {key}"},
                          timeout=TIMEOUT)
    assert response.status_code == 200, response.text
    events = []
    for block in response.text.strip().split("\n\n"):
        lines = dict(line.split(": ", 1) for line in block.splitlines() if ": " in line)
        events.append((lines["event"], json.loads(lines["data"])))
    return events


def test_the_same_events_as_the_sse_route(server):
    events, code, _ = ask(server, {"message": QUESTION})
    assert code == 1000
    assert all(set(event) == {"event", "data"} for event in events)
    streamed = sse(server, {"message": QUESTION}, ALICE_KEY)
    assert [e["event"] for e in events] == [name for name, _ in streamed]
    assert events[-1]["event"] == "done" and "citation" in [e["event"] for e in events]
    done, sse_done = events[-1]["data"], streamed[-1][1]
    assert set(done) == set(sse_done) and done["response"]["answer"] == sse_done["response"]["answer"]
    assert any(s["title"].endswith("protocol") for s in done["response"]["sources"])
    # the conversation is the caller's, continued by id as on /api/chat
    conversation_id = done["conversation_id"]
    turns = httpx.get(f"{server.url}/api/conversations/{conversation_id}", timeout=TIMEOUT,
                      headers={"Authorization": f"Bearer {ALICE_KEY}"})
    assert turns.status_code == 200 and turns.json()[0]["user"] == QUESTION


def test_keys_and_isolation(server):
    bob, code, _ = ask(server, {"message": QUESTION}, key=None, query=f"?key={BOB_KEY}")  # as a browser sends it
    assert code == 1000 and bob[-1]["event"] == "done"
    assert SECRET_WORD not in json.dumps(bob[-1]["data"]["response"]["sources"])  # Alice's document stays hers
    assert not [e for e in bob if e["event"] == "citation"]
    for key, query in ((None, ""), ("wrong-key-0123456789abcdef", ""), (None, "?key=wrong-key-0123456789abcdef")):
        with pytest.raises(InvalidStatus) as refused:
            ask(server, {"message": QUESTION}, key=key, query=query)
        assert refused.value.response.status_code == 403
    events, code, reason = ask(server, {"message": QUESTION}, headers={"X-User-ID": "bob"})  # not an admin key
    assert (code, reason) == (1008, "forbidden") and events[0]["event"] == "error"
    assert events[0]["data"]["code"] == "forbidden"


@pytest.mark.parametrize(("body", "code", "error"), [
    ("not json", 1007, "invalid_query"),
    ({"question": QUESTION}, 1007, "invalid_query"),
    ({"message": "   "}, 1007, "invalid_query"),
    ({"message": QUESTION, "conversation_id": "../x"}, 1007, "invalid_query"),
    (b"\x00\x01", 1003, "invalid_query"),
    ("[" * 200_000, 1007, "invalid_query"),
    (json.dumps({"message": "x" * 2_000_000}), 1009, "request_too_large"),
])
def test_bad_first_messages_get_an_error_event_and_a_close_code(server, body, code, error):
    events, closed, reason = ask(server, body)
    assert (closed, reason) == (code, error)
    assert [e["event"] for e in events] == ["error"] and events[0]["data"]["code"] == error


def test_no_first_message_in_time(server):
    with connect(ws_url(server), additional_headers={"Authorization": f"Bearer {ALICE_KEY}"}) as ws:
        events, code, reason = receive_all(ws)  # server.ws_first_message_seconds = 2 in this server
    assert (code, reason) == (1008, "first_message_timeout") and events[0]["data"]["code"] == "first_message_timeout"


def test_stop_ends_generation(tmp_path):
    reply = " ".join(f"word{i}" for i in range(200)) + " [1]."
    with RecordingLLM(reply=reply, word_seconds=0.05) as llm, running_server(
            tmp_path, hash_embedder=True, LLM__BASE_URL=llm.base_url, LLM__MODEL="recorder") as srv:
        httpx.post(f"{srv.url}/api/documents", files={"files": ("protocol.md", ALICE_TEXT)}, timeout=TIMEOUT)
        with connect(ws_url(srv), open_timeout=TIMEOUT) as ws:
            ws.send(json.dumps({"message": QUESTION}))
            tokens = 0
            while tokens < 3:
                event = json.loads(ws.recv(timeout=TIMEOUT))
                assert event["event"] != "done", "the answer ended before it could be stopped"
                tokens += event["event"] == "token"
            ws.send(json.dumps({"type": "stop"}))
            events, code, reason = receive_all(ws)
        assert (code, reason) == (1000, "stopped")
        assert "done" not in [e["event"] for e in events]
        deadline = time.monotonic() + TIMEOUT
        while llm.disconnects == 0 and time.monotonic() < deadline:
            time.sleep(0.1)
        assert llm.disconnects == 1  # the LLM's stream was closed: generation stopped
