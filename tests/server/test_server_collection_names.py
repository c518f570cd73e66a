"""Collection NAMES on every surface (docs/collections.md, "Instructions and sources"): an index the CLI made (the
collection ``specs``, owned by no user, and the default one), then served by a real ``ragstream serve`` (hash
embedder) with an admin key and two user keys. The admin also puts the spec into ``team`` (every user reads it).
Each answer route, scoped and not, must label a source or citation with the names of its collections among those
of the scope (unscoped: those the caller may read): the admin sees ``specs`` and ``team``, Bob only ``team``, never
an id and never ``specs``. Document records (HTTP, ``ragstream docs list`` through the server and opened directly)
show names too."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from support.link_folders import run_cli
from support.mcp_client import connected, http_session
from support.server_process import RunningServer, running_server
from support.user_keys import ADMIN_KEY, BOB_KEY, key_client, keys_json
from support.ws_chat import ws_chat

OPERATOR_KEY = "operator-key-0123456789abcdef"
"""``server.api_key``: the admin key the CLI presents to the running server (as an operator's config would)."""
SPEC_WORD, NOTE_WORD = "xylophonegantry", "quillmeadow"
SPEC_QUESTION = f"What does the {SPEC_WORD} rule require?"
SPEC_TEXT = (f"# The {SPEC_WORD} rule\n\nThe {SPEC_WORD} rule requires three inspections before a release. "
             f"Every {SPEC_WORD} release is signed by the lead.\n")
TABLE_COLUMNS = 400
DRAFT_TEXT = "# A draft spec\n\nThe draft spec waits for its first review.\n"
NOTE_TEXT = f"# The {NOTE_WORD} note\n\nThe {NOTE_WORD} note lists the lunch menu for the offsite.\n"


@dataclass(frozen=True)
class Index:
    """The data dir the CLI built, the spec's document id, and what ``docs list`` printed opened directly."""

    data_dir: Path
    spec_id: str
    draft_id: str
    direct_table: subprocess.CompletedProcess[str]
    direct_json: list[dict[str, Any]]
    direct_answer: dict[str, Any]
    direct_search: dict[str, Any]


def _run(data_dir: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """``ragstream ARGS`` on ``data_dir`` (through the server when one runs on it), its tables wide enough to
    keep each cell on one line."""
    with pytest.MonkeyPatch.context() as env:
        env.setenv("COLUMNS", str(TABLE_COLUMNS))
        return run_cli(data_dir, *args, SERVER__API_KEY=OPERATOR_KEY)


def _cli(data_dir: Path, *args: str) -> str:
    done = _run(data_dir, *args)
    assert done.returncode == 0, (args, done.stdout, done.stderr)
    return done.stdout


@pytest.fixture(scope="module")
def index(tmp_path_factory: pytest.TempPathFactory) -> Index:
    """``collections create specs``, the spec ingested into it and a note into the default collection, by the CLI;
    then ``docs list`` (table and --json) on the index opened directly (no server runs yet)."""
    tmp = tmp_path_factory.mktemp("collection-names")
    data_dir = tmp / "data"
    (tmp / "spec.md").write_text(SPEC_TEXT)
    (tmp / "note.md").write_text(NOTE_TEXT)
    (tmp / "draft.md").write_text(DRAFT_TEXT)
    _cli(data_dir, "collections", "create", "specs")
    _cli(data_dir, "ingest", str(tmp / "spec.md"), "--collection", "specs")
    _cli(data_dir, "ingest", str(tmp / "draft.md"), "--collection", "specs")
    _cli(data_dir, "ingest", str(tmp / "note.md"))
    listed = json.loads(_cli(data_dir, "docs", "list", "--json"))
    spec_id = next(d["document_id"] for d in listed if SPEC_WORD in d["title"])
    draft_id = next(d["document_id"] for d in listed if "draft" in d["title"])
    answer = json.loads(_cli(data_dir, "ask", SPEC_QUESTION, "--collection", "specs", "--json"))
    found = json.loads(_cli(data_dir, "search", SPEC_WORD, "--mode", "bm25", "--json"))
    return Index(data_dir, spec_id, draft_id, _run(data_dir, "docs", "list"), listed, answer, found)


@pytest.fixture(scope="module")
def server(index: Index, tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    with running_server(tmp_path_factory.mktemp("collection-names-server"), hash_embedder=True, data_dir=index.data_dir,
                        SERVER__API_KEY=OPERATOR_KEY, SERVER__KEYS=keys_json()) as running:
        with key_client(running.url, ADMIN_KEY) as admin:
            assert admin.post("/api/collections", json={"name": "team", "access": "all"}).status_code == 201
            assert admin.put(f"/api/collections/team/documents/{index.spec_id}").json()["changed"] is True
        yield running


CASES = {  # (key, scope) -> the names the spec's sources and citations must carry
    "admin scoped to specs": (ADMIN_KEY, ["specs"], ["specs"]),
    "admin unscoped": (ADMIN_KEY, None, ["specs", "team"]),
    "user unscoped": (BOB_KEY, None, ["team"]),
    "user scoped to team": (BOB_KEY, ["team"], ["team"]),
}


def _sse(text: str) -> list[tuple[str, Any]]:
    """``(event, data)`` of each Server-Sent Event (``data`` parsed as JSON, or the raw text)."""
    events, kind = [], "message"
    for line in text.splitlines():
        if line.startswith("event:"):
            kind = line.partition(":")[2].strip()
        elif line.startswith("data:"):
            raw = line.partition(":")[2].strip()
            events.append((kind, raw if raw == "[DONE]" else json.loads(raw)))
            kind = "message"
    return events


def _spec_labels(items: list[dict[str, Any]], spec_id: str) -> list[list[str]]:
    """The ``collections`` of each source or citation of the spec (at least one must be there)."""
    labels = [item["collections"] for item in items if item.get("document_id") == spec_id]
    assert labels, items
    return labels


def _answer_routes(server: RunningServer, key: str, scope: list[str] | None) -> dict[str, list[dict[str, Any]]]:
    """Route -> the sources and citations of its answer to the spec question (citation events included)."""
    extra = {} if scope is None else {"collections": scope}
    found: dict[str, list[dict[str, Any]]] = {}
    with key_client(server.url, key) as api:
        query = api.post("/api/query", json={"query": SPEC_QUESTION, **extra})
        assert query.status_code == 200, query.text
        found["query sources"] = query.json()["sources"]
        found["query citations"] = query.json()["citations"]
        chat = api.post("/api/chat", json={"message": SPEC_QUESTION, **extra})
        assert chat.status_code == 200, chat.text
        events = _sse(chat.text)
        found["chat citation events"] = [data for kind, data in events if kind == "citation"]
        found["chat done sources"] = next(data for kind, data in events if kind == "done")["response"]["sources"]
        model = "ragstream" if scope is None else f"ragstream/{scope[0]}"
        completion = {"model": model, "messages": [{"role": "user", "content": SPEC_QUESTION}]}
        v1 = api.post("/v1/chat/completions", json=completion)
        assert v1.status_code == 200, v1.text
        found["v1 sources"] = v1.json()["ragstream"]["sources"]
        streamed = api.post("/v1/chat/completions", json={**completion, "stream": True})
        assert streamed.status_code == 200, streamed.text
        last = [data for _, data in _sse(streamed.text) if isinstance(data, dict) and "ragstream" in data][-1]
        found["v1 streamed sources"] = last["ragstream"]["sources"]
    ws = ws_chat(server, key, {"message": SPEC_QUESTION, **extra})
    found["ws citation events"] = [e["data"] for e in ws if e["event"] == "citation"]
    found["ws done sources"] = ws[-1]["data"]["response"]["sources"]
    with connected(http_session(server.url, key)) as mcp:
        asked = mcp.ok("ask", {"question": SPEC_QUESTION, **extra})
    found["mcp ask sources"] = asked["sources"]
    found["mcp ask citations"] = asked["citations"]
    return found


@pytest.mark.parametrize("case", list(CASES))
def test_every_answer_surface_labels_sources_with_readable_collection_names(server, index, case):
    key, scope, expected = CASES[case]
    labels = {surface: _spec_labels(items, index.spec_id) for surface, items in _answer_routes(server, key, scope).items()}
    assert {surface: found for surface, found in labels.items() if found != [expected] * len(found)} == {}


def _records(api: httpx.Client, document_id: str) -> dict[str, Any]:
    """What each document route shows of ``document_id``'s collections (its status when it is not 200)."""
    listed = {d["document_id"]: d["collections"] for d in api.get("/api/documents").json()}
    page = {d["document_id"]: d["collections"] for d in api.get("/api/documents/page").json()["items"]}
    one = api.get(f"/api/documents/{document_id}")
    chunks = api.get(f"/api/documents/{document_id}", params={"include_chunks": "true"})
    return {"list": listed.get(document_id), "page": page.get(document_id),
            "record": one.json()["document"]["collections"] if one.status_code == 200 else one.status_code,
            "record with chunks": chunks.json()["document"]["collections"] if chunks.status_code == 200 else chunks.status_code}


def test_document_records_over_http_show_readable_collection_names(server, index):
    with key_client(server.url, ADMIN_KEY) as admin, key_client(server.url, BOB_KEY) as bob:
        expected = {"spec (admin)": (_records(admin, index.spec_id), ["specs", "team"]),
                    "draft (admin)": (_records(admin, index.draft_id), ["specs"]),  # only in a collection of no user
                    "spec (user)": (_records(bob, index.spec_id), ["team"])}
        assert {case: shown for case, (shown, names) in expected.items()
                if any(value != names for value in shown.values())} == {}
        assert [d["collections"] for d in bob.get("/api/documents", params={"collection": "team"}).json()] == [["team"]]
        assert ["default"] in [d["collections"] for d in bob.get("/api/documents").json()]
        assert bob.get(f"/api/documents/{index.draft_id}").status_code == 404  # specs is no collection of Bob's


def _hit_labels(result: dict[str, Any], document_id: str) -> list[list[str]]:
    """The ``collections`` of each search hit of ``document_id`` (at least one must be there)."""
    return _spec_labels([hit["chunk"]["metadata"] for hit in result["hits"]], document_id)


def test_search_hits_and_chunks_name_readable_collections(server, index):
    """A hit's or a chunk's ``collections`` are the names of the collections the reader may read (as a record's)."""
    shown = {}
    for who, key in (("admin", ADMIN_KEY), ("user", BOB_KEY)):
        with key_client(server.url, key) as api:
            for scope in (None, ["team"]):
                body = {"query": SPEC_WORD, "mode": "bm25", **({} if scope is None else {"collections": scope})}
                shown[f"{who} search {scope}"] = _hit_labels(api.post("/api/search", json=body).json(), index.spec_id)
            detail = api.get(f"/api/documents/{index.spec_id}", params={"include_chunks": "true"}).json()
            shown[f"{who} record chunks"] = [chunk["metadata"]["collections"] for chunk in detail["chunks"]]
            listed = api.get(f"/api/documents/{index.spec_id}/chunks").json()
            shown[f"{who} chunks"] = [chunk["metadata"]["collections"] for chunk in listed]
            created = api.post("/api/pipeline", json={"text": SPEC_QUESTION}).json()
            ran = api.post(f"/api/pipeline/{created['id']}/auto", json={"until": "retrieval"}).json()
            shown[f"{who} pipeline chunks"] = _spec_labels(
                [chunk["metadata"] for chunk in ran["superprompt"]["base_context_chunks"]], index.spec_id)
    shown["cli search through the server"] = _hit_labels(
        json.loads(_cli(index.data_dir, "search", SPEC_WORD, "--mode", "bm25", "--json")), index.spec_id)
    shown["cli search opened directly"] = _hit_labels(index.direct_search, index.spec_id)
    expected = {surface: ["team"] if surface.startswith("user") else ["specs"] if "directly" in surface
                else ["specs", "team"] for surface in shown}
    assert {surface: found for surface, found in shown.items() if found != [expected[surface]] * len(found)} == {}


def test_cli_ask_names_collections_opened_directly_and_through_a_running_server(server, index):
    through = json.loads(_cli(index.data_dir, "ask", SPEC_QUESTION, "--collection", "specs", "--json"))
    unscoped = json.loads(_cli(index.data_dir, "ask", SPEC_QUESTION, "--json"))
    assert _spec_labels(index.direct_answer["sources"], index.spec_id)[0] == ["specs"]
    assert _spec_labels(through["sources"], index.spec_id)[0] == ["specs"]
    assert _spec_labels(unscoped["sources"], index.spec_id)[0] == ["specs", "team"]


def test_docs_list_opened_directly_shows_collection_names(index):
    direct = index.direct_table
    assert direct.returncode == 0, direct.stderr
    assert "specs" in direct.stdout and "default" in direct.stdout
    assert sorted(d["collections"] for d in index.direct_json) == [["default"], ["specs"], ["specs"]]


def test_docs_list_through_a_running_server_shows_collection_names(server, index):
    remote_json = json.loads(_cli(index.data_dir, "docs", "list", "--json"))
    assert sorted(d["collections"] for d in remote_json) == [["default"], ["specs"], ["specs", "team"]]
    remote_table = _cli(index.data_dir, "docs", "list")
    assert "specs, team" in remote_table and "default" in remote_table


def test_an_admin_reads_and_deletes_a_document_only_in_a_collection_of_no_user(server, index):
    """The draft is only in ``specs``, which the CLI made (no owner): an admin reaches it on every document route,
    as in the list (the last test here: it deletes the draft)."""
    with connected(http_session(server.url, ADMIN_KEY)) as mcp:
        assert mcp.ok("read", {"document_id": index.draft_id})["document"]["document_id"] == index.draft_id
        assert "first review" in mcp.read_resource(f"ragstream://documents/{index.draft_id}")
    with key_client(server.url, ADMIN_KEY) as admin:
        assert admin.get(f"/api/documents/{index.draft_id}/chunks").status_code == 200
        deleted = admin.delete(f"/api/documents/{index.draft_id}")
        assert deleted.status_code == 200, deleted.text
        assert index.draft_id not in {d["document_id"] for d in admin.get("/api/documents").json()}
