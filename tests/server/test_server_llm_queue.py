"""The waiting line in front of the answering model, through a real ``ragstream serve`` (hash embedder) over
HTTP, against a real OpenAI-compatible server that is busy on demand (:mod:`support.busy_llm`).

One slot and a line of one: the second question's ``/api/chat`` stream says ``queued`` (its place and the
seconds waited) while the first is being answered, then, past ``llm.queue_wait_seconds``, gets the extractive
answer with the reason; a third question meanwhile is refused 429 ``too_many_requests`` with ``Retry-After``.
A provider's 429 waits in the same line for its Retry-After (``queued``, reason ``rate_limited``) and then is
answered by the model; a Retry-After longer than the wait budget gets the extractive answer at once with the reason.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from typing import Any

import httpx
from support.busy_llm import BusyLLM
from support.polling import wait_for
from support.server_process import RunningServer, running_server
from websockets.sync.client import connect

SECRET_WORD = "zanzibarquokka"
QUESTION = f"What does the {SECRET_WORD} protocol require before a launch?"
DOCUMENT = (f"# The {SECRET_WORD} protocol\n\nThe {SECRET_WORD} protocol requires two signatures before a launch. "
            f"Every {SECRET_WORD} launch is logged by the duty officer.\n").encode()
TIMEOUT = 60.0
Events = list[tuple[str, dict[str, Any]]]


def _chat(server: RunningServer, events: Events, on_event: Callable[[str], None] = lambda _: None) -> None:
    """POST /api/chat and collect its SSE events as they arrive."""
    with httpx.stream("POST", f"{server.url}/api/chat", json={"message": QUESTION}, timeout=TIMEOUT) as response:
        assert response.status_code == 200, response.read()
        name = ""
        for line in response.iter_lines():
            if line.startswith("event: "):
                name = line.removeprefix("event: ")
            elif line.startswith("data: "):
                events.append((name, json.loads(line.removeprefix("data: "))))
                on_event(name)


def _server(tmp_path, llm: BusyLLM, **settings: str):
    return running_server(tmp_path, hash_embedder=True, LLM__BASE_URL=llm.base_url, LLM__MODEL="busy",
                          LLM__MAX_CONCURRENT="1", LLM__QUEUE_EVENT_SECONDS="0.2", **settings)


def _done(events: Events) -> dict[str, Any]:
    return next(data for name, data in events if name == "done")


def test_questions_wait_in_line_are_told_and_a_full_line_answers_429(tmp_path):
    with BusyLLM() as llm, _server(tmp_path, llm, LLM__QUEUE_MAX_WAITING="1", LLM__QUEUE_WAIT_SECONDS="4") as srv:
        assert httpx.post(f"{srv.url}/api/documents", files={"files": ("protocol.md", DOCUMENT)},
                          timeout=TIMEOUT).status_code == 201
        first: Events = []
        second: Events = []
        queued = threading.Event()
        answering = threading.Thread(target=_chat, args=(srv, first))
        answering.start()
        wait_for(lambda: llm.requests == 1, "the first question to reach the model")
        waiting = threading.Thread(target=_chat, args=(srv, second, lambda name: name == "queued" and queued.set()))
        waiting.start()
        assert queued.wait(TIMEOUT), second

        refused = httpx.post(f"{srv.url}/api/chat", json={"message": QUESTION}, timeout=TIMEOUT)
        assert refused.status_code == 429 and refused.json()["error"]["code"] == "too_many_requests"
        assert refused.headers["Retry-After"] == "5"  # llm.queue_full_retry_after_seconds
        one_piece = httpx.post(f"{srv.url}/api/query", json={"query": QUESTION}, timeout=TIMEOUT)
        assert one_piece.status_code == 429 and one_piece.headers["Retry-After"] == "5"

        waiting.join(TIMEOUT)
        notices = [data for name, data in second if name == "queued"]
        assert len(notices) >= 2 and {n["position"] for n in notices} == {1} and notices[0]["reason"] == "busy"
        assert [n["waited_seconds"] for n in notices] == sorted(n["waited_seconds"] for n in notices)
        assert [name for name, _ in second].index("queued") == 0  # told before anything else
        done = _done(second)
        assert done["mode"] == "extractive" and "many questions at once" in done["degraded_reason"]
        assert "llm.queue_wait_seconds = 4" in done["degraded_reason"]

        llm.gate.set()
        answering.join(TIMEOUT)
        assert _done(first)["mode"] == "llm" and "queued" not in [name for name, _ in first]
        assert llm.requests == 1 and llm.in_flight_max == 1  # the waiting question never reached the model


def test_a_provider_429_waits_in_line_for_its_retry_after(tmp_path):
    with BusyLLM(held=False, rate_limited=(1, None, 600)) as llm, _server(tmp_path, llm, LLM__QUEUE_WAIT_SECONDS="10") as srv:
        assert httpx.post(f"{srv.url}/api/documents", files={"files": ("protocol.md", DOCUMENT)},
                          timeout=TIMEOUT).status_code == 201
        events: Events = []
        _chat(srv, events)
        notices = [data for name, data in events if name == "queued"]
        assert notices and all(n["reason"] == "rate_limited" and n["retry_after_seconds"] == 1 for n in notices)
        done = _done(events)
        assert done["mode"] == "llm", done["degraded_reason"]
        assert done["degraded_reason"] is None and llm.refused == 1 and llm.answered == 1

        answer = httpx.post(f"{srv.url}/api/query", json={"query": QUESTION}, timeout=TIMEOUT).json()
        meta = answer["metadata"]
        assert meta["mode"] == "extractive" and "LLM rate limited" in meta["degraded_reason"]
        assert "asked to wait 600 s" in meta["degraded_reason"] and llm.refused == 2

        # the endpoint was busy, not down: its circuit breaker stayed closed and the next question is answered
        # by the model, here over the WebSocket, which carries the same events
        with connect(srv.url.replace("http", "ws", 1) + "/ws/chat", open_timeout=TIMEOUT) as ws:
            ws.send(json.dumps({"message": QUESTION}))
            while (event := json.loads(ws.recv(timeout=TIMEOUT)))["event"] != "done":
                pass
        assert event["data"]["mode"] == "llm" and llm.answered == 2
