"""MCP over streamable HTTP at ``/mcp`` of a real ``ragstream serve`` (issue 23), driven by the MCP SDK's own
client: the same keys, users and isolation as the HTTP API.

One server (hash embedder) with three keys: Alice and Bob (users) and an admin. The admin shares the
bundled samples; Alice uploads a secret document. Every check that Bob cannot see something is paired
with Alice seeing it, so none passes vacuously.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from fastapi.testclient import TestClient
from mcp.shared.exceptions import MCPError
from support.index_fixtures import SAMPLES
from support.mcp_client import Mcp, connected, http_session, text_of, wait_for
from support.recording_llm import RecordingLLM
from support.server_process import RunningServer, running_server

from ragstream.server import create_app

ALICE_KEY = "alice-key-0123456789abcdef"
BOB_KEY = "bob-key-0123456789abcdef"
ADMIN_KEY = "admin-key-0123456789abcdef"
SECRET_WORD = "zanzibarquokka"
SECRET = (f"# The {SECRET_WORD} protocol\n\nThe {SECRET_WORD} protocol requires two signatures before a launch. "
          f"Every {SECRET_WORD} launch is logged by the duty officer.\n").encode()
SECRET_QUESTION = f"What does the {SECRET_WORD} protocol require before a launch?"
TIMEOUT = httpx.Timeout(120.0)
INITIALIZE = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
              "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                         "clientInfo": {"name": "curl", "version": "1"}}}
MCP_HEADERS = {"Accept": "application/json, text/event-stream"}


def keys() -> str:
    return json.dumps([{"key": ALICE_KEY, "user": "alice"}, {"key": BOB_KEY, "user": "bob"},
                       {"key": ADMIN_KEY, "user": "root", "role": "admin"}])


def upload(server: RunningServer, key: str, name: str, data: bytes, **params: str) -> str:
    response = httpx.post(f"{server.url}/api/documents", files={"files": (name, data)}, params=params,
                          headers={"Authorization": f"Bearer {key}"}, timeout=TIMEOUT)
    assert response.status_code in (200, 201), response.text
    return response.json()["files"][0]["document_id"]


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    with running_server(tmp_path_factory.mktemp("mcp-http"), hash_embedder=True, SERVER__KEYS=keys()) as running:
        for path in sorted(SAMPLES.iterdir()):
            upload(running, ADMIN_KEY, path.name, path.read_bytes(), shared="true")
        yield running


@pytest.fixture(scope="module")
def secret(server: RunningServer) -> str:
    """Alice's own document: its id."""
    return upload(server, ALICE_KEY, "protocol.md", SECRET)


@pytest.fixture(scope="module")
def alice(server: RunningServer, secret: str) -> Iterator[Mcp]:
    with connected(http_session(server.url, ALICE_KEY)) as client:
        yield client


@pytest.fixture(scope="module")
def bob(server: RunningServer, secret: str) -> Iterator[Mcp]:
    with connected(http_session(server.url, BOB_KEY)) as client:
        yield client


@pytest.fixture(scope="module")
def admin(server: RunningServer) -> Iterator[Mcp]:
    with connected(http_session(server.url, ADMIN_KEY)) as client:
        yield client


def test_without_a_key_mcp_is_401_like_every_route(server: RunningServer):
    for headers in ({}, {"Authorization": "Bearer not-a-known-key-0123456789"}):
        response = httpx.post(f"{server.url}/mcp", json=INITIALIZE, headers={**MCP_HEADERS, **headers}, timeout=TIMEOUT)
        assert response.status_code == 401 and response.headers["WWW-Authenticate"] == "Bearer"
        assert response.json()["error"]["code"] == "unauthorized"
    response = httpx.post(f"{server.url}/mcp", json=INITIALIZE, headers={**MCP_HEADERS, "X-API-Key": ALICE_KEY},
                          timeout=TIMEOUT)
    assert response.status_code == 200 and "X-Request-ID" in response.headers


def test_tools_are_listed_per_role(alice: Mcp, admin: Mcp):
    assert set(alice.tools()) == {"search", "ask", "rate_answer", "list_documents", "read"}
    assert set(admin.tools()) == {"search", "ask", "rate_answer", "list_documents", "read", "ingest", "delete"}


def test_only_the_asker_rates_an_answer(alice: Mcp, bob: Mcp, admin: Mcp):
    message_id = alice.ok("ask", {"question": "How do I set a timeout on a request?"})["message_id"]
    assert bob.error("rate_answer", {"message_id": message_id, "rating": "not_helpful"})["code"] == "message_not_found"
    assert admin.error("rate_answer", {"message_id": message_id, "rating": "not_helpful"})["code"] == "message_not_found"
    assert alice.ok("rate_answer", {"message_id": message_id, "rating": "helpful", "comment": "clear"}) == {
        "message_id": message_id, "rating": "helpful", "comment": "clear"}


def test_search_ask_list_and_read_the_shared_samples(alice: Mcp):
    passages = alice.ok("search", {"query": "set a timeout on a client", "top_k": 3})["passages"]
    assert passages[0]["source"] == "upload://httpx-timeouts.md" and "timeout" in passages[0]["text"].lower()
    progress: list[str] = []
    answer = alice.ok("ask", {"question": "How do I set a timeout on a request?"}, progress)
    assert "[1]" in answer["answer"] and any(c["matched"] for c in answer["citations"])
    assert progress[0].startswith("retrieving") and progress[-1] == "done"
    listed = alice.ok("list_documents", {"limit": 50})
    shared = [doc for doc in listed["documents"] if doc["shared"]]
    assert len(shared) == 5 and not any("upload_path" in json.dumps(doc["metadata"]) for doc in listed["documents"])
    around = alice.ok("read", {"document_id": passages[0]["document_id"], "chunk_id": passages[0]["chunk_id"]})
    assert passages[0]["chunk_id"] in {c["chunk_id"] for c in around["chunks"]}
    assert passages[0]["text"] in alice.read_resource(f"ragstream://documents/{passages[0]['document_id']}"
                                                      f"/chunks/{passages[0]['chunk_id']}")


def test_a_second_user_cannot_see_the_first_users_uploads(server: RunningServer, alice: Mcp, bob: Mcp, admin: Mcp,
                                                         secret: str):
    query = {"query": f"{SECRET_WORD} protocol signatures"}
    assert alice.ok("search", query)["passages"][0]["document_id"] == secret
    assert secret not in {p["document_id"] for p in bob.ok("search", query)["passages"]}
    assert secret in {d["document_id"] for d in alice.ok("list_documents", {"limit": 50})["documents"]}
    assert secret not in {d["document_id"] for d in bob.ok("list_documents", {"limit": 50})["documents"]}
    assert alice.ok("read", {"document_id": secret})["document"]["shared"] is False
    assert bob.error("read", {"document_id": secret})["code"] == "document_not_found"
    uri = f"ragstream://documents/{secret}"
    assert SECRET_WORD in alice.read_resource(uri)
    with pytest.raises(MCPError) as caught:
        bob.read_resource(uri)
    assert caught.value.data["code"] == "document_not_found"
    assert uri in _all_uris(alice)
    assert uri not in _all_uris(bob)
    alice_answer = alice.ok("ask", {"question": SECRET_QUESTION})
    assert secret in {c["document_id"] for c in alice_answer["citations"]}
    bob_answer = bob.ok("ask", {"question": SECRET_QUESTION})
    assert secret not in {c["document_id"] for c in bob_answer["citations"]} and SECRET_WORD + " launch" not in bob_answer["answer"]
    assert SECRET_WORD + " protocol requires" in alice.prompt("answer_from_documents", {"question": SECRET_QUESTION})
    assert SECRET_WORD + " protocol requires" not in bob.prompt("answer_from_documents", {"question": SECRET_QUESTION})
    # Bob may not pose as Alice; the admin may.
    with connected(http_session(server.url, BOB_KEY, **{"X-User-ID": "alice"})) as posing:
        assert posing.error("search", query)["code"] == "forbidden"
    with connected(http_session(server.url, ADMIN_KEY, **{"X-User-ID": "alice"})) as acting:
        assert acting.ok("search", query)["passages"][0]["document_id"] == secret
    assert secret not in {p["document_id"] for p in admin.ok("search", query)["passages"]}  # the admin's own view


def test_admin_only_tools_are_refused_to_a_user_key(alice: Mcp, admin: Mcp, secret: str):
    inline = {"documents": [{"name": "memo.md", "text": "# Memo\n\nThe quarterly pelicanharbour memo is due Friday.\n"}]}
    for tool, arguments in (("ingest", inline), ("delete", {"document_id": secret})):
        refused = alice.error(tool, arguments)
        assert refused["code"] == "forbidden" and f"the {tool} tool needs an admin key" in refused["message"]
        assert "--admin-tools" not in refused["message"]  # the stdio advice means nothing over HTTP
    assert alice.ok("read", {"document_id": secret})  # refused, not deleted
    done = admin.ok("ingest", inline)
    assert done["ingested"] == 1 and done["failed"] == 0
    [memo] = done["document_ids"]
    assert admin.ok("search", {"query": "quarterly pelicanharbour memo"})["passages"][0]["document_id"] == memo
    assert alice.error("read", {"document_id": memo})["code"] == "document_not_found"  # the admin's own document
    assert admin.error("ingest", {"paths": ["/etc"]})["code"] == "forbidden"  # no server files over HTTP
    assert admin.ok("delete", {"document_id": memo})["deleted"] == memo
    assert admin.error("read", {"document_id": memo})["code"] == "document_not_found"


@pytest.mark.parametrize(("tool", "arguments", "code"), [
    ("search", {"query": "timeout", "page": 2}, "invalid_arguments"),
    ("search", {"query": "timeout " * 400}, "invalid_query"),
    ("search", {"query": "timeout", "filters": {"colour": "red"}}, "unknown_filter_field"),
    ("read", {"document_id": "no-such-document"}, "document_not_found"),
    ("read", {"document_id": "no-such-document", "neighbours": -1}, "invalid_arguments"),
    ("delete", {"document_id": "x"}, "forbidden"),
])
def test_bad_input_over_http_gets_a_tool_error_with_its_code(alice: Mcp, tool: str, arguments: dict[str, Any], code: str):
    assert alice.error(tool, arguments)["code"] == code
    assert alice.ok("search", {"query": "timeout", "top_k": 1})["passages"]


def test_a_body_past_the_json_limit_is_413_before_mcp(server: RunningServer):
    call = {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
            "params": {"name": "search", "arguments": {"query": "x" * 2_000_000}}}
    response = httpx.post(f"{server.url}/mcp", json=call, timeout=TIMEOUT,
                          headers={**MCP_HEADERS, "Authorization": f"Bearer {ALICE_KEY}"})
    assert response.status_code == 413 and response.json()["error"]["code"] == "request_too_large"


def test_a_client_that_leaves_mid_answer_stops_the_llm_call(tmp_path: Path):
    reply = " ".join(["Timeouts are set on the client [1]."] * 60)
    conversation = "left-over-http"
    with RecordingLLM(reply, word_seconds=0.02) as llm, \
            running_server(tmp_path, hash_embedder=True, SERVER__KEYS=keys(), LLM__BASE_URL=llm.base_url,
                           LLM__MODEL="recorder") as running:
        upload(running, ALICE_KEY, "httpx-timeouts.md", (SAMPLES / "httpx-timeouts.md").read_bytes())

        async def ask_and_leave() -> list[str]:
            seen: list[str] = []
            with anyio.CancelScope() as scope:
                async with http_session(running.url, ALICE_KEY) as session:
                    async def progress(value: float, total: float | None, message: str | None) -> None:
                        seen.append(message or "")
                        if "tokens written" in (message or ""):
                            scope.cancel()  # leaves the block: the session and its HTTP connection close
                    await session.call_tool("ask", {"question": "How do I set a timeout?", "conversation_id": conversation},
                                            progress_callback=progress)
            return seen

        seen = anyio.run(ask_and_leave)
        assert "done" not in seen and any("tokens written" in message for message in seen)
        wait_for(lambda: llm.disconnects == 1, "the LLM stream to be closed")
        wait_for(lambda: "ask ended before its answer was done" in running.log_text(), "the server to log it")
        turns = httpx.get(f"{running.url}/api/conversations/{conversation}", timeout=TIMEOUT,
                          headers={"Authorization": f"Bearer {ALICE_KEY}"}).json()
        assert len(turns) == 1 and turns[0]["incomplete"] is True
        with connected(http_session(running.url, ALICE_KEY)) as client:  # the server goes on
            assert client.ok("ask", {"question": "How do I set a timeout?"})["mode"] == "llm"


def test_without_the_sdk_mcp_is_503_naming_the_extra(make_fast_index, monkeypatch: pytest.MonkeyPatch):
    # The SDK is installed here: reporting it missing is the only way to produce its absence.
    monkeypatch.setattr("ragstream.server.mcp.sdk_available", lambda: False)
    with TestClient(create_app(make_fast_index())) as client:
        response = client.post("/mcp", json=INITIALIZE, headers=MCP_HEADERS)
    assert response.status_code == 503 and response.json()["error"]["code"] == "config_error"
    assert "pip install 'ragstream[mcp]'" in response.json()["error"]["message"]


def test_text_content_names_the_passages(alice: Mcp):
    result = alice.call("search", {"query": "async client", "top_k": 2})
    assert all(p["document_id"] in text_of(result) for p in (result.structured_content or {})["passages"])


def _all_uris(client: Mcp) -> set[str]:
    uris: set[str] = set()
    cursor = None
    while True:
        page = client.resources(cursor)
        uris |= {str(resource.uri) for resource in page.resources}
        if not page.next_cursor:
            return uris
        cursor = page.next_cursor
