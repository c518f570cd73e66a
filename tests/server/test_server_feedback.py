"""Feedback on answers over HTTP (issue 32, row 4): one real ``ragstream serve`` process (hash embedder) with
two users and an admin. An answer's message id from the ``done`` event (SSE) or ``metadata`` (JSON) is rated
by its asker only; citation opens are counted; the admin reads the summary; the counters show in /metrics."""

from __future__ import annotations

import json
from collections.abc import Iterator

import httpx
import pytest
from support.mcp_client import connected, http_session
from support.server_process import RunningServer, running_server

ALICE_KEY = "alice-key-0123456789abcdef"
BOB_KEY = "bob-key-0123456789abcdef"
ADMIN_KEY = "admin-key-0123456789abcdef"
TIMEOUT = httpx.Timeout(180.0)
PAGE = (b"# Timeouts\n\nThe client waits five seconds for a response before it raises a timeout error. "
        b"You can change the timeout on every request or on the client.\n")


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    tmp = tmp_path_factory.mktemp("feedback")
    keys = json.dumps([{"key": ALICE_KEY, "user": "alice"}, {"key": BOB_KEY, "user": "bob"},
                       {"key": ADMIN_KEY, "user": "root", "role": "admin"}])
    with running_server(tmp, hash_embedder=True, SERVER__KEYS=keys) as running:
        with client(running, ADMIN_KEY) as admin:
            response = admin.post("/api/documents", files={"files": ("timeouts.md", PAGE)}, params={"shared": "true"})
            assert response.status_code in (200, 201, 202), response.text
        yield running


def client(server: RunningServer, key: str) -> httpx.Client:
    return httpx.Client(base_url=server.url, timeout=TIMEOUT, headers={"Authorization": f"Bearer {key}"})


def streamed_message_id(api: httpx.Client, question: str) -> str:
    streamed = api.post("/api/chat", json={"message": question})
    done = [json.loads(line.removeprefix("data: ")) for line in streamed.text.splitlines()
            if line.startswith("data: ")][-1]
    assert done["message_id"] == done["response"]["metadata"]["message_id"]
    return str(done["message_id"])


def test_an_answer_is_rated_by_its_asker_and_only_by_them(server: RunningServer) -> None:
    with client(server, ALICE_KEY) as alice, client(server, BOB_KEY) as bob, client(server, ADMIN_KEY) as admin:
        streamed = streamed_message_id(alice, "How long does the client wait for a response?")
        answered = alice.post("/api/query", json={"query": "How do I change the timeout?"}).json()
        asked = answered["metadata"]["message_id"]
        rated = alice.post("/api/feedback", json={"message_id": streamed, "rating": "helpful"})
        assert rated.status_code == 200 and rated.json() == {"message_id": streamed, "rating": "helpful", "comment": ""}
        again = alice.post("/api/feedback", json={"message_id": asked, "rating": "not_helpful",
                                                   "comment": "it does not say how"})
        assert again.status_code == 200 and again.json()["comment"] == "it does not say how"
        assert alice.post("/api/feedback/citation-open", json={"message_id": streamed}).status_code == 200

        foreign = bob.post("/api/feedback", json={"message_id": streamed, "rating": "not_helpful"})
        assert foreign.status_code == 404 and foreign.json()["error"]["code"] == "message_not_found"
        assert bob.post("/api/feedback/citation-open", json={"message_id": streamed}).status_code == 404
        unknown = alice.post("/api/feedback", json={"message_id": "no-such-message", "rating": "helpful"})
        assert unknown.status_code == 404 and unknown.json()["error"]["code"] == "message_not_found"
        bad = alice.post("/api/feedback", json={"message_id": streamed, "rating": "great"})
        assert bad.status_code == 422 and bad.json()["error"]["code"] == "invalid_feedback"
        long_comment = alice.post("/api/feedback", json={"message_id": streamed, "rating": "helpful",
                                                         "comment": "x" * 2001})
        assert long_comment.status_code == 422 and long_comment.json()["error"]["code"] == "invalid_feedback"
        assert alice.post("/api/feedback", json={"rating": "helpful"}).status_code == 422

        assert alice.get("/api/feedback/summary").status_code == 403
        summary = admin.get("/api/feedback/summary", params={"days": 7}).json()
        assert summary["answers"] == 2 and summary["helpful_rate"] == 0.5 and summary["citation_open_rate"] == 0.5
        [today] = summary["days"]
        assert (today["answers"], today["rated"], today["helpful"], today["not_helpful"], today["citation_opens"]) == \
            (2, 2, 1, 1, 1)
        assert summary["worst_questions"] == [{"question": "How do I change the timeout?", "answers": 1, "helpful": 0,
                                               "not_helpful": 1}]
        assert admin.get("/api/feedback/summary", params={"days": 0}).json()["error"]["code"] == "invalid_feedback"

        metrics = admin.get("/metrics").text
        assert 'ragstream_answer_ratings_total{rating="helpful"} 1.0' in metrics
        assert 'ragstream_answer_ratings_total{rating="not_helpful"} 1.0' in metrics
        assert "ragstream_citation_opens_total 1.0" in metrics
        assert "ragstream_answers_given_total 2.0" in metrics


def test_the_mcp_ask_result_carries_the_message_id_its_asker_rates(server: RunningServer) -> None:
    with connected(http_session(server.url, BOB_KEY)) as mcp:
        result = mcp.ok("ask", {"question": "How long does the client wait for a response?"})
    assert result["message_id"] == result["metadata"]["message_id"]
    with client(server, BOB_KEY) as bob, client(server, ALICE_KEY) as alice:
        assert alice.post("/api/feedback", json={"message_id": result["message_id"], "rating": "helpful"}
                          ).status_code == 404
        rated = bob.post("/api/feedback", json={"message_id": result["message_id"], "rating": "helpful"})
        assert rated.status_code == 200, rated.text


def test_a_citation_opened_again_counts_once(server: RunningServer) -> None:
    """Issue 41 item 5: hundreds of opens of one citation by its asker count once, over HTTP; each other citation
    once more; an open naming no citation (an older client) counts as one citation; a bad citation is 422."""
    with client(server, ALICE_KEY) as alice, client(server, ADMIN_KEY) as admin:
        message_id = alice.post("/api/query", json={"query": "Can I change the timeout?"}).json()["metadata"]["message_id"]
        before = _citation_opens(admin)
        for _ in range(HTTP_OPENS):
            assert alice.post("/api/feedback/citation-open", json={"message_id": message_id}).status_code == 200
        assert _citation_opens(admin) - before == 1
        for _ in range(HTTP_OPENS):
            opened = alice.post("/api/feedback/citation-open", json={"message_id": message_id, "citation": 1})
            assert opened.status_code == 200, opened.text
        assert opened.json() == {"message_id": message_id, "citation": 1, "recorded": False}
        second = alice.post("/api/feedback/citation-open", json={"message_id": message_id, "citation": 2}).json()
        assert second == {"message_id": message_id, "citation": 2, "recorded": True}
        assert _citation_opens(admin) - before == 3
        for bad, code in ((0, "invalid_feedback"), (-1, "invalid_feedback"), (101, "invalid_feedback"),
                          (True, "validation_error"), ("1", "validation_error"), (1.5, "validation_error")):
            refused = alice.post("/api/feedback/citation-open", json={"message_id": message_id, "citation": bad})
            assert refused.status_code == 422 and refused.json()["error"]["code"] == code, (bad, refused.text)
        assert _citation_opens(admin) - before == 3


HTTP_OPENS = 300


def _citation_opens(admin: httpx.Client) -> int:
    return sum(day["citation_opens"] for day in admin.get("/api/feedback/summary").json()["days"])
