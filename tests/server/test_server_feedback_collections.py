"""Feedback per collection over HTTP (issues 31 and 32): one real ``ragstream serve`` process (hash embedder) with
two users and an admin, on SQLite and on PostgreSQL; answers scoped to a collection (``/api/query`` and the SSE ``/api/chat``) are rated by
their askers, and the admin's ``GET /api/feedback/summary`` gives the helpful rate of each collection."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest
from support.server_process import RunningServer, running_server

ALICE_KEY = "alice-key-0123456789abcdef"
BOB_KEY = "bob-key-0123456789abcdef"
ADMIN_KEY = "admin-key-0123456789abcdef"
TIMEOUT = httpx.Timeout(180.0)
HANDBOOK = (b"# Leave\n\nThe notice period for leaving the company is three months, given in writing to your "
            b"manager. Holidays are twenty-five days a year.\n")
MANUAL = (b"# Installing the widget\n\nThe widget installer needs Python 3.12 and a writable folder. Run the "
          b"installer and restart the widget service afterwards.\n")
NOTICE = "What is the notice period for leaving the company?"
INSTALL = "What does the widget installer need?"


def _client(server: RunningServer, key: str) -> httpx.Client:
    return httpx.Client(base_url=server.url, timeout=TIMEOUT, headers={"Authorization": f"Bearer {key}"})


def _streamed(api: httpx.Client, question: str, collections: list[str]) -> dict:
    streamed = api.post("/api/chat", json={"message": question, "collections": collections})
    assert streamed.status_code == 200, streamed.text
    return [json.loads(line.removeprefix("data: ")) for line in streamed.text.splitlines()
            if line.startswith("data: ")][-1]


@pytest.mark.parametrize("catalog", ["sqlite", "postgres"])
def test_the_admin_summary_rates_each_collection(catalog: str, tmp_path: Path, request: pytest.FixtureRequest) -> None:
    settings = {"SERVER__KEYS": json.dumps([{"key": ALICE_KEY, "user": "alice"}, {"key": BOB_KEY, "user": "bob"},
                                            {"key": ADMIN_KEY, "user": "root", "role": "admin"}])}
    if catalog == "postgres":  # a real PostgreSQL (support/backend_fixtures.py): its catalog and store
        settings.update(STORE__BACKEND="postgres", STORE__URL=request.getfixturevalue("postgres_url"))
    with running_server(tmp_path, hash_embedder=True, **settings) as server, \
            _client(server, ADMIN_KEY) as admin, _client(server, ALICE_KEY) as alice, _client(server, BOB_KEY) as bob:
        assert admin.post("/api/collections", json={"name": "hr", "access": "all"}).status_code == 201
        assert admin.post("/api/collections", json={"name": "product", "access": "readers",
                                                    "readers": ["alice"]}).status_code == 201
        for name, filename, body in (("hr", "handbook.md", HANDBOOK), ("product", "manual.md", MANUAL)):
            uploaded = admin.post("/api/documents", files={"files": (filename, body)}, data={"collection": name})
            assert uploaded.status_code in (200, 201, 202), uploaded.text

        asked = alice.post("/api/query", json={"query": NOTICE, "collections": ["hr"]})
        assert asked.status_code == 200, asked.text
        notice = asked.json()["metadata"]["message_id"]
        install = _streamed(alice, INSTALL, ["product"])
        assert {tuple(c["collections"]) for c in install["response"]["citations"] if c["matched"]} == {("product",)}
        by_bob = bob.post("/api/query", json={"query": NOTICE}).json()  # unscoped: bob reads hr only
        assert {tuple(c["collections"]) for c in by_bob["citations"] if c["matched"]} == {("hr",)}
        for api, message_id, rating in ((alice, notice, "helpful"), (alice, install["message_id"], "not_helpful"),
                                        (bob, by_bob["metadata"]["message_id"], "not_helpful")):
            rated = api.post("/api/feedback", json={"message_id": message_id, "rating": rating})
            assert rated.status_code == 200, rated.text
        assert alice.post("/api/feedback/citation-open", json={"message_id": notice}).status_code in (200, 204)

        assert alice.get("/api/feedback/summary").status_code == 403
        summary = admin.get("/api/feedback/summary")
        assert summary.status_code == 200, summary.text
        rates = {c["name"]: (c["answers"], c["helpful"], c["not_helpful"], c["helpful_rate"], c["citation_open_rate"])
                 for c in summary.json()["collections"]}
        assert rates == {"hr": (2, 1, 1, 0.5, 0.5), "product": (1, 0, 1, 0.0, 0.0)}
