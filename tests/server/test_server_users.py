"""Users are isolated (issue 9, item 4): API keys map to users, documents have owners or are shared,
and one user never lists, reads, searches, cites, deletes or converses over another's documents.

One real ``ragstream serve`` process (hash embedder) with three keys: Alice and an admin from a
TOML keys file, Bob from a config entry (``RAGSTREAM_SERVER__KEYS``). Every check that Bob cannot
see something is paired with Alice (or the admin) seeing it, so none of them can pass vacuously.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from support.server_process import STARTUP_SECONDS, RunningServer, free_port, running_server, serve_command, server_env
from support.user_keys import ADMIN_KEY, ALICE_KEY, BOB_KEY, key_client, keys_file, keys_json

from ragstream.writes.upload_store import user_folder

SECRET_WORD = "zanzibarquokka"
SHARED_WORD = "pelicanharbour"
QUESTION = f"What does the {SECRET_WORD} protocol require before a launch?"
ALICE_TEXT = (f"# The {SECRET_WORD} protocol\n\nThe {SECRET_WORD} protocol requires two signatures before a launch. "
              f"Every {SECRET_WORD} launch is logged by the duty officer.\n").encode()
BOB_TEXT = b"# Bob's notes\n\nBob keeps notes about gardening, tomatoes and compost heaps.\n"
SHARED_TEXT = (f"# Handbook\n\nThe {SHARED_WORD} handbook is shared with every employee of the company.\n").encode()


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    tmp = tmp_path_factory.mktemp("users")
    alice_and_admin = keys_file(tmp / "keys.toml", "alice", "root")
    with running_server(tmp, hash_embedder=True, SERVER__KEYS_FILE=str(alice_and_admin),
                        SERVER__KEYS=keys_json("bob")) as running:
        yield running


def client(server: RunningServer, key: str, **headers: str) -> httpx.Client:
    return key_client(server.url, key, **headers)


@pytest.fixture(scope="module")
def alice(server: RunningServer) -> Iterator[httpx.Client]:
    with client(server, ALICE_KEY) as api:
        yield api


@pytest.fixture(scope="module")
def bob(server: RunningServer) -> Iterator[httpx.Client]:
    with client(server, BOB_KEY) as api:
        yield api


@pytest.fixture(scope="module")
def admin(server: RunningServer) -> Iterator[httpx.Client]:
    with client(server, ADMIN_KEY) as api:
        yield api


def upload(api: httpx.Client, name: str, data: bytes, **params: str) -> dict:
    response = api.post("/api/documents", files={"files": (name, data)}, params=params)
    assert response.status_code in (200, 201), response.text
    return response.json()["files"][0]


@pytest.fixture(scope="module")
def docs(alice: httpx.Client, bob: httpx.Client, admin: httpx.Client) -> dict[str, dict]:
    """Alice's secret, Bob's notes and a shared handbook (uploaded by the admin with shared=true)."""
    return {"alice": upload(alice, "protocol.md", ALICE_TEXT), "bob": upload(bob, "notes.md", BOB_TEXT),
            "shared": upload(admin, "handbook.md", SHARED_TEXT, shared="true")}


def assert_error(response: httpx.Response, status: int, code: str) -> None:
    assert response.status_code == status, response.text
    assert response.json()["error"]["code"] == code


def ids(documents: list[dict]) -> set[str]:
    return {doc["document_id"] for doc in documents}


def test_every_request_needs_a_key_even_on_loopback(server: RunningServer):
    assert httpx.get(f"{server.url}/api/documents").status_code == 401
    assert httpx.get(f"{server.url}/api/documents", headers={"X-User-ID": "alice"}).status_code == 401
    assert httpx.get(f"{server.url}/healthz").status_code == 200


def test_listing_shows_own_and_shared_documents_without_server_paths(alice: httpx.Client, bob: httpx.Client,
                                                                    docs: dict[str, dict]):
    assert {item["status"] for item in docs.values()} == {"ingested"}
    mine = {doc["document_id"]: doc for doc in alice.get("/api/documents").json()}
    assert set(mine) == {docs["alice"]["document_id"], docs["shared"]["document_id"]}
    assert ids(bob.get("/api/documents").json()) == {docs["bob"]["document_id"], docs["shared"]["document_id"]}
    assert mine[docs["alice"]["document_id"]]["owner"] == "alice"
    assert mine[docs["shared"]["document_id"]]["owner"] is None
    for doc in mine.values():
        assert set(doc["metadata"]) == {"filename"}, doc["metadata"]
        assert doc["source"] == f"upload://{doc['metadata']['filename']}"
    detail = alice.get(f"/api/documents/{docs['alice']['document_id']}", params={"include_chunks": True}).json()
    assert set(detail["document"]["metadata"]) == {"filename"}
    assert all(set(chunk["metadata"]["extra"]) == {"filename"} for chunk in detail["chunks"])


def test_document_pages_and_ui_counts_are_per_user(alice: httpx.Client, bob: httpx.Client, docs: dict[str, dict]):
    for client, own in ((alice, "alice"), (bob, "bob")):
        page = client.get("/api/documents/page", params={"limit": 50}).json()
        assert ids(page["items"]) == {docs[own]["document_id"], docs["shared"]["document_id"]}
        assert page["total"] == 2
        assert all(item["source"].startswith("upload://") for item in page["items"])  # no server paths
        assert client.get("/api/ui").json()["documents"] == 2


def test_another_users_document_is_not_found(alice: httpx.Client, bob: httpx.Client, docs: dict[str, dict]):
    secret = docs["alice"]["document_id"]
    for path, params in ((f"/api/documents/{secret}", {}), (f"/api/documents/{secret}", {"include_chunks": True}),
                         (f"/api/documents/{secret}/chunks", {})):
        assert_error(bob.get(path, params=params), 404, "document_not_found")
        assert alice.get(path, params=params).status_code == 200
    assert_error(bob.delete(f"/api/documents/{secret}"), 404, "document_not_found")
    assert alice.get(f"/api/documents/{secret}").status_code == 200  # still there


def test_search_sees_own_and_shared_documents_only(alice: httpx.Client, bob: httpx.Client, docs: dict[str, dict]):
    def found(api: httpx.Client, query: str, **extra: object) -> set[str]:
        body = {"query": query, "mode": "bm25", "top_k": 10, **extra}
        response = api.post("/api/search", json=body)
        assert response.status_code == 200, response.text
        return {hit["chunk"]["metadata"]["document_id"] for hit in response.json()["hits"]}

    assert docs["alice"]["document_id"] in found(alice, SECRET_WORD)
    assert docs["alice"]["document_id"] not in found(bob, SECRET_WORD)
    assert docs["alice"]["document_id"] not in found(bob, SECRET_WORD, mode="hybrid")
    assert docs["alice"]["document_id"] not in found(bob, SECRET_WORD, filters={"owner": "alice"})
    assert docs["shared"]["document_id"] in found(alice, SHARED_WORD) & found(bob, SHARED_WORD)


def _cited_documents(answer: dict) -> set[str]:
    """Every document an answer drew on: sources, related documents and citations."""
    return ({source["document_id"] for source in answer["sources"]}
            | {doc["document_id"] for doc in answer["relatedDocs"]}
            | {citation["document_id"] for citation in answer["citations"]})


def _chunk_ids(api: httpx.Client, document_id: str) -> set[str]:
    return {chunk["chunk_id"] for chunk in api.get(f"/api/documents/{document_id}/chunks").json()}


def test_answers_never_cite_another_users_document(alice: httpx.Client, bob: httpx.Client, docs: dict[str, dict]):
    secret = docs["alice"]["document_id"]
    secret_chunks = _chunk_ids(alice, secret)
    assert secret_chunks
    own = alice.post("/api/query", json={"query": QUESTION}).json()
    assert secret in _cited_documents(own)  # the control: the question does find Alice's document for Alice
    answer = bob.post("/api/query", json={"query": QUESTION}).json()
    assert secret not in _cited_documents(answer)
    assert not secret_chunks & set(answer["metadata"]["context_chunk_ids"])
    assert SECRET_WORD not in answer["answer"].replace(QUESTION, "")

    context = bob.post("/api/retrieve", json={"query": QUESTION, "min_relevance": 0.0}).json()
    assert secret not in {chunk["document_id"] for chunk in context["document_chunks"]}
    assert secret in {chunk["document_id"] for chunk in
                      alice.post("/api/retrieve", json={"query": QUESTION, "min_relevance": 0.0}).json()["document_chunks"]}

    streamed = bob.post("/api/chat", json={"message": QUESTION})
    done = [json.loads(line.removeprefix("data: ")) for line in streamed.text.splitlines()
            if line.startswith("data: ")][-1]
    assert secret not in _cited_documents(done["response"])

    request = {"model": "ragstream", "messages": [{"role": "user", "content": QUESTION}]}
    completion = bob.post("/v1/chat/completions", json=request).json()
    assert secret not in {source["document_id"] for source in completion["ragstream"]["sources"]}
    assert secret not in {doc["document_id"] for doc in completion["ragstream"]["relatedDocs"]}


def test_pipeline_sessions_and_searches_are_per_user(alice: httpx.Client, bob: httpx.Client, docs: dict[str, dict]):
    created = bob.post("/api/pipeline", json={"text": QUESTION}).json()
    assert_error(alice.get(f"/api/pipeline/{created['id']}"), 404, "pipeline_not_found")
    ran = bob.post(f"/api/pipeline/{created['id']}/auto", json={"until": "retrieval"}).json()
    retrieved = {chunk["metadata"]["document_id"] for chunk in ran["superprompt"]["base_context_chunks"]}
    assert docs["alice"]["document_id"] not in retrieved
    mine = alice.post("/api/pipeline", json={"text": QUESTION}).json()
    ran = alice.post(f"/api/pipeline/{mine['id']}/auto", json={"until": "retrieval"}).json()
    assert docs["alice"]["document_id"] in {chunk["metadata"]["document_id"]
                                            for chunk in ran["superprompt"]["base_context_chunks"]}


def test_conversations_are_per_user(alice: httpx.Client, bob: httpx.Client, docs: dict[str, dict]):
    conversation = "shared-looking-conversation-id"
    alice.post("/api/query", json={"query": QUESTION, "conversation_id": conversation})
    turns = alice.get(f"/api/conversations/{conversation}").json()
    assert [turn["user"] for turn in turns] == [QUESTION]
    assert_error(bob.get(f"/api/conversations/{conversation}"), 404, "conversation_not_found")
    # Bob reusing the id starts a conversation of his own: he never continues (or reads) Alice's.
    bob.post("/api/query", json={"query": "What do Bob's notes say about compost?", "conversation_id": conversation})
    assert [turn["user"] for turn in bob.get(f"/api/conversations/{conversation}").json()] == [
        "What do Bob's notes say about compost?"]
    assert len(alice.get(f"/api/conversations/{conversation}").json()) == 1


def test_duplicate_detection_never_reveals_another_users_document(server: RunningServer, alice: httpx.Client,
                                                                  bob: httpx.Client, docs: dict[str, dict]):
    copy = upload(bob, "protocol.md", ALICE_TEXT)
    assert copy["status"] == "ingested" and copy["duplicate_of"] == []
    assert copy["document_id"] != docs["alice"]["document_id"]
    assert copy["stored_as"].startswith(f"{user_folder('bob')}/")
    again = upload(alice, "protocol-copy.md", ALICE_TEXT)
    assert again["status"] == "duplicate" and again["duplicate_of"] == [docs["alice"]["document_id"]]
    assert docs["alice"]["document_id"] in ids(alice.get("/api/documents").json())
    assert bob.delete(f"/api/documents/{copy['document_id']}").json()["upload_removed"] is True


def test_user_header_acts_as_another_user_only_for_an_admin(server: RunningServer, admin: httpx.Client,
                                                            docs: dict[str, dict]):
    with client(server, BOB_KEY, **{"X-User-ID": "alice"}) as impostor:
        assert_error(impostor.get("/api/documents"), 403, "forbidden")
    with client(server, BOB_KEY, **{"X-User-ID": "bob"}) as himself:
        assert docs["bob"]["document_id"] in ids(himself.get("/api/documents").json())
    assert docs["alice"]["document_id"] not in ids(admin.get("/api/documents").json())
    as_alice = admin.get("/api/documents", headers={"X-User-ID": "alice"}).json()
    assert docs["alice"]["document_id"] in ids(as_alice)
    assert_error(admin.get("/api/documents", headers={"X-User-ID": "x" * 65}), 422, "invalid_user_id")


def test_shared_documents_and_reindex_need_an_admin(admin: httpx.Client, bob: httpx.Client, docs: dict[str, dict]):
    assert_error(bob.post("/api/documents", files={"files": ("s.md", b"# S\n\nshared?")}, params={"shared": "true"}),
                 403, "forbidden")
    assert_error(bob.delete(f"/api/documents/{docs['shared']['document_id']}"), 403, "forbidden")
    assert_error(bob.post("/api/documents/reindex"), 403, "forbidden")
    report = admin.post("/api/documents/reindex").json()
    assert report["documents_processed"] >= 3 and report["documents_failed"] == 0
    extra = upload(admin, "extra.md", b"# Extra\n\nA second shared page to delete.", shared="true")
    assert bob.get(f"/api/documents/{extra['document_id']}").status_code == 200
    assert admin.delete(f"/api/documents/{extra['document_id']}").status_code == 200


def test_upload_folders_are_one_per_user(server: RunningServer, admin: httpx.Client):
    folders = {}
    for user in ("carol@example.com", "carol.example@com"):
        item = admin.post("/api/documents", files={"files": ("carol.md", f"# Carol\n\nNotes of {user}.".encode())},
                          headers={"X-User-ID": user}).json()["files"][0]
        folders[user] = item["stored_as"].split("/")[0]
        assert (server.data_dir / "uploads" / item["stored_as"]).is_file()
    assert folders["carol@example.com"] != folders["carol.example@com"]
    assert user_folder("carol@example.com") != user_folder("carol.example@com")


@pytest.mark.parametrize("bad_key, message", [
    ("k", "has 1 characters"),
    ("   ", "blank"),
    (" padded-key-0123456789 ", "leading or trailing blanks"),
])
def test_short_or_blank_keys_refuse_to_start(tmp_path: Path, bad_key: str, message: str):
    entries = json.dumps([{"key": bad_key, "user": "mallory"}])
    result = subprocess.run(serve_command("127.0.0.1", free_port(), hash_embedder=True),
                            env=server_env(tmp_path / "data", SERVER__KEYS=entries),
                            capture_output=True, text=True, timeout=STARTUP_SECONDS)
    assert result.returncode == 2, result.stderr
    assert message in " ".join(result.stderr.split())  # the console wraps long lines


def test_short_operator_key_refuses_to_start(tmp_path: Path):
    result = subprocess.run(serve_command("0.0.0.0", free_port(), hash_embedder=True),
                            env=server_env(tmp_path / "data", SERVER__API_KEY="x"),
                            capture_output=True, text=True, timeout=STARTUP_SECONDS)
    assert result.returncode == 2 and "server.min_api_key_chars" in " ".join(result.stderr.split())
