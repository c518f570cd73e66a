"""The MCP tools take collections (docs/collections.md): ``search``, ``ask`` and ``list_documents`` a scope,
``ingest`` the collection its documents join; over streamable HTTP on a real ``ragstream serve`` with a user key
that may read the collection, one that may not, and an admin key. Each refusal is paired with a success."""

from __future__ import annotations

import json
from collections.abc import Iterator

import httpx
import pytest
from support.mcp_client import Mcp, connected, http_session
from support.server_process import RunningServer, running_server

ALICE_KEY = "alice-key-0123456789abcdef"
BOB_KEY = "bob-key-0123456789abcdef"
ADMIN_KEY = "admin-key-0123456789abcdef"
WORD = "zanzibarquokka"
MEMO = {"name": "memo.md", "text": f"# Memo\n\nThe {WORD} memo says the launch needs two signatures.\n"}


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    keys = json.dumps([{"key": ALICE_KEY, "user": "alice"}, {"key": BOB_KEY, "user": "bob"},
                       {"key": ADMIN_KEY, "user": "root", "role": "admin"}])
    with running_server(tmp_path_factory.mktemp("mcp-collections"), hash_embedder=True, SERVER__KEYS=keys) as running:
        created = httpx.post(f"{running.url}/api/collections", json={"name": "alice-team"},
                             headers={"Authorization": f"Bearer {ALICE_KEY}"}, timeout=60)
        assert created.status_code == 201, created.text
        yield running


@pytest.fixture(scope="module")
def memo(server: RunningServer) -> str:
    with connected(http_session(server.url, ADMIN_KEY)) as admin:
        done = admin.ok("ingest", {"documents": [MEMO], "collection": "alice-team"})
        assert done["ingested"] == 1
        return str(done["document_ids"][0])


def _clients(server: RunningServer, key: str) -> Iterator[Mcp]:
    with connected(http_session(server.url, key)) as client:
        yield client


@pytest.fixture(scope="module")
def alice(server: RunningServer, memo: str) -> Iterator[Mcp]:
    yield from _clients(server, ALICE_KEY)


@pytest.fixture(scope="module")
def bob(server: RunningServer, memo: str) -> Iterator[Mcp]:
    yield from _clients(server, BOB_KEY)


def test_tools_read_only_collections_the_caller_may_read(alice: Mcp, bob: Mcp, memo: str):
    query = {"query": f"{WORD} memo", "mode": "bm25"}
    assert [p["document_id"] for p in alice.ok("search", {**query, "collections": ["alice-team"]})["passages"]] == [memo]
    assert memo in {p["document_id"] for p in alice.ok("search", query)["passages"]}
    assert memo not in {p["document_id"] for p in bob.ok("search", query)["passages"]}
    assert bob.error("search", {**query, "collections": ["alice-team"]})["code"] == "collection_not_found"
    assert alice.ok("search", {**query, "collections": ["default"]})["passages"] == []  # the scope holds
    listed = alice.ok("list_documents", {"collections": ["alice-team"]})["documents"]
    assert [d["document_id"] for d in listed] == [memo]
    assert bob.error("list_documents", {"collections": ["alice-team"]})["code"] == "collection_not_found"
    answer = alice.ok("ask", {"question": f"What does the {WORD} memo say?", "collections": ["alice-team"]})
    assert memo in {c["document_id"] for c in answer["citations"]}
    assert bob.error("ask", {"question": "What does the memo say?", "collections": ["alice-team"]})["code"] == (
        "collection_not_found")


def test_the_same_name_ingested_into_two_collections_is_two_documents(server: RunningServer, memo: str):
    """Inline documents are keyed by their collection, as uploads into one are: the same name and text into a
    second collection is a second document, in that collection only, and a new text for it replaces neither the
    first collection's document nor its text; the same name into the same collection again is that document."""
    with connected(http_session(server.url, ADMIN_KEY)) as admin:
        created = httpx.post(f"{server.url}/api/collections", json={"name": "root-team"},
                             headers={"Authorization": f"Bearer {ADMIN_KEY}"}, timeout=60)
        assert created.status_code == 201, created.text
        again = admin.ok("ingest", {"documents": [MEMO], "collection": "alice-team"})
        assert again["unchanged"] == 1 and again["document_ids"] == [memo]
        other = admin.ok("ingest", {"documents": [MEMO], "collection": "root-team"})
        assert other["ingested"] == 1 and other["document_ids"] != [memo]
        changed = admin.ok("ingest", {"documents": [{**MEMO, "text": "# Memo\n\nThe root team memo is about lunch.\n"}],
                                      "collection": "root-team"})
        assert changed["ingested"] == 1 and changed["document_ids"] == other["document_ids"]
        listed = {name: [d["document_id"] for d in admin.ok("list_documents", {"collections": [name]})["documents"]]
                  for name in ("alice-team", "root-team")}
        assert listed == {"alice-team": [memo], "root-team": other["document_ids"]}
        passages = admin.ok("search", {"query": f"{WORD} memo signatures", "collections": ["alice-team"]})["passages"]
        assert passages and all(p["document_id"] == memo for p in passages) and WORD in passages[0]["text"]


def test_moves_do_not_let_a_user_hide_or_delete_a_shared_document(server: RunningServer, alice: Mcp, bob: Mcp):
    """Issue 41's sequence with MCP beside HTTP: the admin shares a document over MCP; Bob's collection moves over
    HTTP cannot take it out of the default collection, Bob's MCP ``delete`` is refused, and Alice's MCP search still
    finds it."""
    with connected(http_session(server.url, ADMIN_KEY)) as admin:
        shared = admin.ok("ingest", {"documents": [{"name": "rule.md", "text": "# Rule\n\nThe okapiharvest rule.\n"}],
                                     "shared": True})
    [document_id] = shared["document_ids"]
    headers = {"Authorization": f"Bearer {BOB_KEY}"}
    with httpx.Client(base_url=server.url, headers=headers, timeout=60) as http:
        assert http.post("/api/collections", json={"name": "bob-hide"}).status_code == 201
        assert http.put(f"/api/collections/bob-hide/documents/{document_id}").status_code == 200
        assert http.delete(f"/api/collections/default/documents/{document_id}").status_code == 403
    assert bob.error("delete", {"document_id": document_id})["code"] == "forbidden"
    found = alice.ok("search", {"query": "okapiharvest rule", "mode": "bm25"})["passages"]
    assert document_id in {p["document_id"] for p in found}
