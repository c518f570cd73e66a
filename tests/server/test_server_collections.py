"""Collections over HTTP (docs/collections.md): a real ``ragstream serve`` process (hash embedder) with two user
keys (Alice, Bob) and an admin key, on SQLite and on PostgreSQL. Alice owns a private collection, one Bob may read
and one Bob may edit; every route is asked about the private collection's word by Bob and must neither answer from
it nor reveal it, and every scoped route is asked about another collection's word and must not answer from it
(so a route that forgets the scope fails). Each "Bob cannot" is paired with Alice or the admin succeeding."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from support.server_process import RunningServer, running_server
from support.user_keys import ADMIN_KEY, ALICE_KEY, BOB_KEY, key_client, keys_json
from support.ws_chat import ws_chat

WORDS = {"private": "zanzibarquokka", "read": "pelicanharbour", "edit": "marmosetlantern"}
COLLECTIONS = {"private": "alice-private", "read": "team-read", "edit": "team-edit"}


def _text(kind: str) -> bytes:
    word = WORDS[kind]
    return (f"# The {word} protocol\n\nThe {word} protocol requires two signatures before a launch. "
            f"Every {word} launch is logged by the duty officer.\n").encode()


@pytest.fixture(scope="module", params=["sqlite", "postgres"])
def server(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    tmp = tmp_path_factory.mktemp(f"collections-{request.param}")
    settings = {"SERVER__KEYS": keys_json()}
    if request.param == "postgres":
        settings.update(STORE__BACKEND="postgres", STORE__URL=_database(request))
    with running_server(tmp, hash_embedder=True, **settings) as running:
        yield running


def _database(request: pytest.FixtureRequest) -> str:
    """A fresh database on the session's PostgreSQL, dropped after the module."""
    import psycopg

    server_url: str = request.getfixturevalue("postgres_server")
    name = f"test_{uuid.uuid4().hex[:12]}"
    admin = server_url.rsplit("/", 1)[0] + "/postgres"
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {name}")

    def drop() -> None:
        with psycopg.connect(admin, autocommit=True) as conn:
            conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")

    request.addfinalizer(drop)
    return server_url.rsplit("/", 1)[0] + f"/{name}"


def _client(server: RunningServer, key: str) -> httpx.Client:
    return key_client(server.url, key)


@pytest.fixture(scope="module")
def alice(server: RunningServer) -> Iterator[httpx.Client]:
    with _client(server, ALICE_KEY) as api:
        yield api


@pytest.fixture(scope="module")
def bob(server: RunningServer) -> Iterator[httpx.Client]:
    with _client(server, BOB_KEY) as api:
        yield api


@pytest.fixture(scope="module")
def admin(server: RunningServer) -> Iterator[httpx.Client]:
    with _client(server, ADMIN_KEY) as api:
        yield api


def _upload(api: httpx.Client, name: str, data: bytes, **params: str) -> httpx.Response:
    return api.post("/api/documents", files={"files": (name, data)}, params=params)


@pytest.fixture(scope="module")
def docs(alice: httpx.Client) -> dict[str, str]:
    """Alice's three collections (private; Bob reads; Bob edits), each with one document: kind -> document id."""
    for kind, access in (("private", {}), ("read", {"access": "readers", "readers": ["bob"]}),
                         ("edit", {"editors": ["bob"]})):
        created = alice.post("/api/collections", json={"name": COLLECTIONS[kind], "instructions": f"Answer as {kind}.",
                                                       **access})
        assert created.status_code == 201, created.text
    found = {}
    for kind, name in COLLECTIONS.items():
        response = _upload(alice, f"{kind}.md", _text(kind), collection=name)
        assert response.status_code == 201, response.text
        found[kind] = response.json()["files"][0]["document_id"]
    return found


def _error(response: httpx.Response, status: int, code: str) -> None:
    assert response.status_code == status, response.text
    assert response.json()["error"]["code"] == code


def _search(api: httpx.Client, kind: str, **extra: object) -> set[str]:
    response = api.post("/api/search", json={"query": f"{WORDS[kind]} protocol", "mode": "bm25", "top_k": 10, **extra})
    assert response.status_code == 200, response.text
    return {hit["chunk"]["metadata"]["document_id"] for hit in response.json()["hits"]}


def _answered_from(answer: dict) -> set[str]:
    return ({s["document_id"] for s in answer["sources"]} | {d["document_id"] for d in answer["relatedDocs"]}
            | {c["document_id"] for c in answer["citations"] if c["document_id"]})


def _routes(api: httpx.Client, kind: str, scope: list[str] | None) -> dict[str, httpx.Response]:
    """Every read route asked about ``kind``'s word, with ``scope`` (None: unscoped)."""
    question = f"What does the {WORDS[kind]} protocol require before a launch?"
    extra = {} if scope is None else {"collections": scope}
    return {
        "search": api.post("/api/search", json={"query": question, "top_k": 10, **extra}),
        "retrieve": api.post("/api/retrieve", json={"query": question, "min_relevance": 0.0, **extra}),
        "query": api.post("/api/query", json={"query": question, **extra}),
        "chat": api.post("/api/chat", json={"message": question, **extra}),
        "pipeline": api.post("/api/pipeline", json={"text": question, **extra}),
    }


def _documents_read(api: httpx.Client, route: str, response: httpx.Response) -> set[str]:
    """The documents a route's answer drew on."""
    assert response.status_code in (200, 201), (route, response.text)
    if route == "search":
        return {hit["chunk"]["metadata"]["document_id"] for hit in response.json()["hits"]}
    if route == "retrieve":
        return {chunk["document_id"] for chunk in response.json()["document_chunks"]}
    if route == "query":
        return _answered_from(response.json())
    if route == "chat":
        done = [json.loads(line.removeprefix("data: ")) for line in response.text.splitlines() if line.startswith("data: ")][-1]
        return _answered_from(done["response"])
    ran = api.post(f"/api/pipeline/{response.json()['id']}/auto", json={"until": "retrieval"})
    assert ran.status_code == 200, ran.text
    return {chunk["metadata"]["document_id"] for chunk in ran.json()["superprompt"]["base_context_chunks"]}


def test_listing_and_reading_collections_follows_access(alice, bob, admin, docs):
    names = {who: [c["name"] for c in api.get("/api/collections").json()] for who, api in
             (("alice", alice), ("bob", bob), ("admin", admin))}
    assert names["alice"] == names["admin"] == ["alice-private", "default", "team-edit", "team-read"]
    assert names["bob"] == ["default", "team-edit", "team-read"]
    assert alice.get("/api/collections/alice-private").json()["documents"] == 1
    _error(bob.get("/api/collections/alice-private"), 404, "collection_not_found")
    _error(bob.get("/api/collections/no-such-thing"), 404, "collection_not_found")  # the same answer
    assert bob.get("/api/collections/team-read").json()["documents"] == 1


def test_every_route_keeps_an_unreadable_collection_out(alice, bob, docs):
    for route, response in _routes(bob, "private", None).items():
        assert docs["private"] not in _documents_read(bob, route, response), route
    for route, response in _routes(alice, "private", None).items():  # the control: Alice's routes find it
        if route != "pipeline":
            assert docs["private"] in _documents_read(alice, route, response), route
    for response in _routes(bob, "private", ["alice-private"]).values():
        _error(response, 404, "collection_not_found")


def test_every_scoped_route_reads_only_its_collections(alice, bob, docs):
    for api in (alice, bob):
        for route, response in _routes(api, "edit", ["team-read"]).items():
            read = _documents_read(api, route, response)
            assert docs["edit"] not in read and docs["private"] not in read, route
        for route, response in _routes(api, "edit", ["team-edit"]).items():
            if route in ("search", "retrieve", "query"):
                assert docs["edit"] in _documents_read(api, route, response), route
    answer = alice.post("/api/query", json={"query": f"{WORDS['read']} protocol", "collections": ["team-read"]}).json()
    assert {tuple(s["collections"]) for s in answer["sources"]} == {("team-read",)}
    created = alice.post("/api/pipeline", json={"text": f"{WORDS['read']} protocol", "collections": ["team-read"]}).json()
    ran = alice.post(f"/api/pipeline/{created['id']}/auto", json={}).json()["superprompt"]
    assert "Answer as read." in ran["System_MD"] and "Answer as edit." not in ran["System_MD"]


def test_documents_and_duplicates_do_not_leak(alice, bob, admin, docs):
    def listed(api: httpx.Client, **params: object) -> set[str]:
        return {d["document_id"] for d in api.get("/api/documents", params=params).json()}

    assert docs["private"] in listed(alice) and docs["private"] not in listed(bob)
    assert listed(bob, collection="team-read") == {docs["read"]}
    page = bob.get("/api/documents/page", params={"limit": 50}).json()
    assert docs["private"] not in {d["document_id"] for d in page["items"]} and page["total"] == 2
    assert alice.get("/api/documents/page", params={"limit": 50}).json()["total"] == 3
    _error(bob.get(f"/api/documents/{docs['private']}"), 404, "document_not_found")
    _error(bob.get(f"/api/documents/{docs['private']}/chunks"), 404, "document_not_found")
    assert WORDS["private"] not in json.dumps(bob.get("/api/ui").json())
    again = _upload(bob, "mine.md", _text("private"))  # the same bytes: not reported as a duplicate of Alice's
    assert again.status_code == 201 and again.json()["files"][0]["duplicate_of"] == []
    assert docs["private"] in listed(admin, collection="alice-private")


def test_readers_cannot_change_and_editors_can(alice, bob, docs):
    _error(_upload(bob, "r.md", b"# r\n\nreader text\n", collection="team-read"), 403, "forbidden")
    _error(bob.put(f"/api/collections/team-read/documents/{docs['edit']}"), 403, "forbidden")
    _error(bob.delete(f"/api/documents/{docs['read']}"), 403, "forbidden")
    _error(bob.patch("/api/collections/team-read", json={"access": "all"}), 403, "forbidden")
    _error(bob.delete("/api/collections/team-read"), 403, "forbidden")
    _error(bob.patch("/api/collections/team-edit", json={"instructions": "x"}), 403, "forbidden")  # editors don't manage
    added = _upload(bob, "bob.md", b"# Bob's addition\n\nThe quasarwaffle rule applies to every launch.\n",
                    collection="team-edit")
    assert added.status_code == 201, added.text
    assert added.json()["files"][0]["document_id"] in _search(alice, "edit") | {
        hit["chunk"]["metadata"]["document_id"] for hit in alice.post(
            "/api/search", json={"query": "quasarwaffle", "mode": "bm25", "collections": ["team-edit"]}).json()["hits"]}
    moved = bob.put(f"/api/collections/team-edit/documents/{docs['read']}")  # Bob edits team-edit, only reads team-read
    _error(moved, 403, "forbidden")
    assert alice.put(f"/api/collections/team-edit/documents/{docs['read']}").json()["changed"] is True
    assert docs["read"] in _search(bob, "read", collections=["team-edit"])
    assert alice.delete(f"/api/collections/team-edit/documents/{docs['read']}").json()["changed"] is True
    assert docs["read"] not in _search(bob, "read", collections=["team-edit"])
    _error(alice.delete(f"/api/collections/team-read/documents/{docs['read']}"), 422, "invalid_collection")
    assert bob.delete(f"/api/documents/{added.json()['files'][0]['document_id']}").status_code == 200


def test_an_upload_naming_the_default_collection_stays_the_callers_own(alice, bob, docs):
    uploaded = _upload(bob, "own.md", b"# Own\n\nThe wombatcompass note is Bob's alone.\n", collection="default")
    assert uploaded.status_code == 201, uploaded.text
    document_id = uploaded.json()["files"][0]["document_id"]
    assert bob.get(f"/api/documents/{document_id}").json()["document"]["owner"] == "bob"
    _error(alice.get(f"/api/documents/{document_id}"), 404, "document_not_found")


def test_an_upload_to_a_collection_lands_in_its_own_folder(server: RunningServer, alice, docs):
    folders = {path.name for path in (Path(server.data_dir) / "uploads").iterdir()}
    assert any(name.startswith("collection-") for name in folders)


def test_the_openai_endpoint_lists_each_readable_collection_as_a_model(alice, bob, docs):
    def models(api: httpx.Client) -> list[str]:
        return [card["id"] for card in api.get("/v1/models").json()["data"]]

    assert models(bob) == ["ragstream", "ragstream/default", "ragstream/team-edit", "ragstream/team-read"]
    assert "ragstream/alice-private" in models(alice)
    assert alice.get("/v1/models/ragstream/alice-private").json()["id"] == "ragstream/alice-private"
    _error(bob.get("/v1/models/ragstream/alice-private"), 404, "model_not_found")
    question = {"role": "user", "content": f"What does the {WORDS['edit']} protocol require?"}
    scoped = bob.post("/v1/chat/completions", json={"model": "ragstream/team-read", "messages": [question]}).json()
    assert docs["edit"] not in {s["document_id"] for s in scoped["ragstream"]["sources"]}
    assert docs["edit"] not in {d["document_id"] for d in scoped["ragstream"]["relatedDocs"]}
    edit = bob.post("/v1/chat/completions", json={"model": "ragstream/team-edit", "messages": [question]}).json()
    assert docs["edit"] in {d["document_id"] for d in edit["ragstream"]["relatedDocs"]}
    _error(bob.post("/v1/chat/completions", json={"model": "ragstream/alice-private", "messages": [question]}), 404,
           "model_not_found")


def test_deleting_a_collection(alice, bob, admin, docs):
    _error(alice.post("/api/collections", json={"name": "team-read"}), 409, "collection_exists")
    _error(alice.post("/api/collections", json={"name": "bad name"}), 422, "invalid_collection")
    _error(alice.delete("/api/collections/alice-private"), 409, "collection_not_empty")
    gone = admin.delete("/api/collections/alice-private", params={"delete_documents": "true"})
    assert gone.status_code == 200 and gone.json()["documents_deleted"] == [docs["private"]]
    _error(alice.get(f"/api/documents/{docs['private']}"), 404, "document_not_found")
    assert "alice-private" not in [c["name"] for c in alice.get("/api/collections").json()]


def test_the_websocket_keeps_the_scope_of_api_chat(server: RunningServer, docs):
    question = f"What does the {WORDS['edit']} protocol require before a launch?"
    scoped = ws_chat(server, BOB_KEY, {"message": question, "collections": ["team-read"]})
    assert scoped[-1]["event"] == "done"
    read = _answered_from(scoped[-1]["data"]["response"])
    assert docs["edit"] not in read and docs["private"] not in read
    private = ws_chat(server, BOB_KEY, {"message": f"{WORDS['private']} protocol", "collections": ["alice-private"]})
    assert [e["event"] for e in private] == ["error"] and private[0]["data"]["code"] == "collection_not_found"
    unscoped = ws_chat(server, BOB_KEY, {"message": f"What does the {WORDS['private']} protocol require?"})
    assert docs["private"] not in _answered_from(unscoped[-1]["data"]["response"])


def test_a_user_can_neither_hide_nor_delete_a_shared_document(alice, bob, admin, docs):
    """The sequence of issue 41: an admin shares a document; Bob puts it in a collection of his, takes it out of the
    default collection and deletes it. Only the harmless first step may succeed; Alice still finds it afterwards."""
    shared = _upload(admin, "handbook.md", b"# Handbook\n\nThe okapiharvest rule binds every team.\n", shared="true")
    assert shared.status_code == 201, shared.text
    document_id = shared.json()["files"][0]["document_id"]

    def alice_finds() -> bool:
        hits = alice.post("/api/search", json={"query": "okapiharvest rule", "mode": "bm25", "top_k": 10}).json()["hits"]
        return document_id in {hit["chunk"]["metadata"]["document_id"] for hit in hits}

    assert bob.post("/api/collections", json={"name": "bob-hide"}).status_code == 201
    assert bob.put(f"/api/collections/bob-hide/documents/{document_id}").status_code == 200  # adding hides nothing
    _error(bob.delete(f"/api/collections/default/documents/{document_id}"), 403, "forbidden")
    _error(bob.delete(f"/api/documents/{document_id}"), 403, "forbidden")
    assert alice_finds()
    # Bob curates his own collection: the document leaves it and stays where the admin put it
    assert bob.delete(f"/api/collections/bob-hide/documents/{document_id}").json()["changed"] is True
    assert alice_finds()
    # a move by the admin does not make it Bob's either
    assert admin.put(f"/api/collections/bob-hide/documents/{document_id}").status_code == 200
    assert admin.delete(f"/api/collections/default/documents/{document_id}").json()["changed"] is True
    _error(bob.delete(f"/api/documents/{document_id}"), 403, "forbidden")
    _error(bob.delete("/api/collections/bob-hide", params={"delete_documents": "true"}), 403, "forbidden")
    assert admin.put(f"/api/collections/default/documents/{document_id}").status_code == 200
    assert bob.delete("/api/collections/bob-hide", params={"delete_documents": "true"}).json()["documents_deleted"] == []
    assert alice_finds()
    assert admin.delete(f"/api/documents/{document_id}").status_code == 200


def test_another_users_private_name_reveals_nothing_and_stays_theirs(alice, bob, admin, docs):
    """Bob taking the name of Alice's private collection gets what a free name gets (201): names are per owner.
    Each one's bare name then means their own; the admin, who reads both, must name one (409 lists both)."""
    hers = alice.post("/api/collections", json={"name": "alice-notes"})
    assert hers.status_code == 201, hers.text
    assert _upload(alice, "notes.md", _text("private").replace(b"zanzibarquokka", b"okapiweather"),
                   collection="alice-notes").status_code == 201
    free = bob.post("/api/collections", json={"name": "bob-free-name"})
    taken = bob.post("/api/collections", json={"name": "alice-notes"})
    assert (taken.status_code, free.status_code) == (201, 201), taken.text
    assert taken.json()["qualified_name"] == "bob:alice-notes" and taken.json()["name"] == "alice-notes"
    theirs = _upload(bob, "bob-notes.md", b"# Bob's notes\n\nThe okapiweather report is Bob's.\n", collection="alice-notes")
    assert theirs.status_code == 201, theirs.text

    def hits(api: httpx.Client, scope: str) -> set[str]:
        response = api.post("/api/search", json={"query": "okapiweather", "mode": "bm25", "collections": [scope]})
        assert response.status_code == 200, response.text
        return {hit["chunk"]["metadata"]["document_id"] for hit in response.json()["hits"]}

    bobs = theirs.json()["files"][0]["document_id"]
    assert bobs not in hits(alice, "alice-notes") and hits(alice, "alice-notes")
    assert hits(bob, "alice-notes") == {bobs}
    assert alice.get("/api/collections/alice-notes").json()["owner"] == "alice"
    ambiguous = admin.get("/api/collections/alice-notes")
    _error(ambiguous, 409, "collection_ambiguous")
    assert "alice:alice-notes" in ambiguous.text and "bob:alice-notes" in ambiguous.text
    _error(bob.get("/api/collections/alice:alice-notes"), 404, "collection_not_found")
    assert admin.get("/api/collections/bob:alice-notes").json()["owner"] == "bob"
    models = [card["id"] for card in admin.get("/v1/models").json()["data"]]
    assert {"ragstream/alice:alice-notes", "ragstream/bob:alice-notes"} <= set(models)
    assert "ragstream/alice-notes" in [card["id"] for card in bob.get("/v1/models").json()["data"]]
    for api in (alice, bob):
        assert api.delete("/api/collections/alice-notes", params={"delete_documents": "true"}).status_code == 200
    assert bob.delete("/api/collections/bob-free-name").status_code == 200


def test_look_alike_names_are_refused_over_http(alice, bob, docs):
    for name, status, code in (("DEFAULT", 409, "collection_exists"), ("Team-Read", 409, "collection_exists"),
                               ("team-read.", 422, "invalid_collection"), ("team-read ", 422, "invalid_collection")):
        _error(bob.post("/api/collections", json={"name": name}), status, code)
    _error(alice.patch("/api/collections/team-edit", json={"name": "TEAM-READ"}), 409, "collection_exists")
    assert [c["name"] for c in bob.get("/api/collections").json()].count("default") == 1


def test_only_an_admin_shares_with_everyone(alice, bob, admin, docs):
    refused = bob.post("/api/collections", json={"name": "bob-everyone", "access": "all"})
    _error(refused, 403, "forbidden")
    assert "admin" in refused.json()["error"]["message"]
    named = bob.post("/api/collections", json={"name": "bob-everyone", "access": "readers", "readers": ["alice"]})
    assert named.status_code == 201, named.text
    _error(bob.patch("/api/collections/bob-everyone", json={"access": "all"}), 403, "forbidden")
    assert "bob-everyone" not in [c["name"] for c in admin.get("/api/collections").json() if c["access"] == "all"]
    assert admin.patch("/api/collections/bob-everyone", json={"access": "all"}).json()["access"] == "all"
    assert admin.delete("/api/collections/bob-everyone").status_code == 200
