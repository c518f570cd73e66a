"""A real PostgreSQL stopped under a running ``ragstream serve``: questions answer 200 without retrieval,
marked as such (``degraded_reason``, Low confidence, no citations), on /api/query, /api/chat, /ws/chat,
/v1/chat/completions and MCP ``ask`` (a user's, scoped or not, as an admin's), and in a running ``ragstream chat``;
/api/search, /api/retrieve and MCP
``search`` answer 503 (a tool error) ``vector_db_unavailable`` with the cause; the server logs the outage at
ERROR. Started again, PostgreSQL serves the next question from the documents.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from support.answer_fixtures import MARKDOWN_SAMPLES
from support.hash_embedder import HashEmbedder
from support.index_fixtures import FAST_DEFAULTS
from support.mcp_client import connected, http_session
from support.server_process import FAST_SETTINGS, SERVE_WITH_HASH_EMBEDDER, running_server, server_env
from support.user_keys import BOB_KEY, key_client, keys_json
from websockets.sync.client import connect

from ragstream import Ragstream, load_config

QUESTION = "How far can an operative move during the movement phase?"
ASYNC_QUESTION = "How do I make asynchronous requests with an AsyncClient in HTTPX?"
TIMEOUT = 60.0


@pytest.fixture
def own_postgres() -> Iterator[Path]:
    """A PostgreSQL of this test alone (the session's one must stay up for the others): its data dir."""
    from ragstream.store.postgres import server

    root = Path(tempfile.mkdtemp(prefix="ragstream-test-pg-down-"))
    try:
        server.start(root / "db")
        yield root / "db"
    finally:
        server.stop(root / "db")
        shutil.rmtree(root, ignore_errors=True)


def _sse(text: str) -> list[tuple[str, dict]]:
    events = []
    for block in text.strip().split("\n\n"):
        lines = dict(line.split(": ", 1) for line in block.splitlines() if ": " in line)
        if "event" in lines:
            events.append((lines["event"], json.loads(lines["data"])))
    return events


def _ingested(tmp_path: Path, own_postgres: Path) -> str:
    """Ingest the samples into the test's PostgreSQL; its URL."""
    from ragstream.store.postgres import server

    url = server.status(own_postgres).url
    store = {"backend": "postgres", "url": url, "connect_timeout_seconds": 2}
    with Ragstream(load_config(data_dir=str(tmp_path / "data"), store=store, **FAST_DEFAULTS),
                   embedder=HashEmbedder()) as rs:
        assert rs.ingest(MARKDOWN_SAMPLES[:2]).documents_failed == 0
    return url


def _handbook_for_bob(tmp_path: Path, own_postgres: Path) -> dict[str, str]:
    """The samples ingested into a collection ``handbook`` everyone may read, in the test's PostgreSQL; the settings
    of a server on it that knows bob's key."""
    from ragstream.store.postgres import server

    url = server.status(own_postgres).url
    store = {"backend": "postgres", "url": url, "connect_timeout_seconds": 2}
    with Ragstream(load_config(data_dir=str(tmp_path / "data"), store=store, **FAST_DEFAULTS),
                   embedder=HashEmbedder()) as rs:
        rs.create_collection("handbook", access="all")
        assert rs.ingest(MARKDOWN_SAMPLES[:2], collection="handbook").documents_failed == 0
    return {"STORE__BACKEND": "postgres", "STORE__URL": url, "STORE__CONNECT_TIMEOUT_SECONDS": "2",
            "SERVER__KEYS": keys_json("bob")}


def test_questions_answer_without_retrieval_while_postgres_is_stopped(tmp_path, own_postgres):
    from ragstream.store.postgres import server

    url = _ingested(tmp_path, own_postgres)
    settings = {"STORE__BACKEND": "postgres", "STORE__URL": url, "STORE__CONNECT_TIMEOUT_SECONDS": "2"}
    with running_server(tmp_path / "srv", hash_embedder=True, data_dir=tmp_path / "data", **settings) as srv:
        healthy = httpx.post(f"{srv.url}/api/query", json={"query": QUESTION}, timeout=TIMEOUT).json()
        assert healthy["metadata"]["degraded_reason"] is None

        server.stop(own_postgres)  # the real fault
        response = httpx.post(f"{srv.url}/api/query", json={"query": QUESTION}, timeout=TIMEOUT)
        assert response.status_code == 200
        answer = response.json()
        assert answer["metadata"]["mode"] == "no_retrieval"
        assert "vector_db_unavailable" in answer["metadata"]["degraded_reason"]
        assert answer["answer"].startswith("The documents could not be searched (")
        assert answer["confidence"]["level"] == "Low" and answer["citations"] == [] and answer["sources"] == []

        chat = httpx.post(f"{srv.url}/api/chat", json={"message": QUESTION}, timeout=TIMEOUT)
        assert chat.status_code == 200
        events = _sse(chat.text)
        assert [name for name, _ in events if name != "token"] == ["done"]
        done = events[-1][1]
        assert done["mode"] == "no_retrieval" and "vector_db_unavailable" in done["degraded_reason"]

        with connect(srv.url.replace("http://", "ws://") + "/ws/chat", open_timeout=TIMEOUT) as ws:
            ws.send(json.dumps({"message": QUESTION}))
            while (event := json.loads(ws.recv(timeout=TIMEOUT)))["event"] == "token":
                pass
        assert event["event"] == "done" and event["data"]["mode"] == "no_retrieval" and event["data"]["degraded_reason"]

        completion = httpx.post(f"{srv.url}/v1/chat/completions", timeout=TIMEOUT,
                                json={"model": "ragstream", "messages": [{"role": "user", "content": QUESTION}]})
        assert completion.status_code == 200
        assert "could not be searched" in completion.json()["choices"][0]["message"]["content"]
        assert "vector_db_unavailable" in completion.json()["ragstream"]["degraded_reason"]

        for path, body in (("/api/search", {"query": QUESTION}), ("/api/retrieve", {"query": QUESTION})):
            failed = httpx.post(f"{srv.url}{path}", json=body, timeout=TIMEOUT)
            assert failed.status_code == 503, path
            error = failed.json()["error"]
            assert error["code"] == "vector_db_unavailable" and "PostgreSQL" in error["message"], error

        with connected(http_session(srv.url)) as mcp:
            asked = mcp.ok("ask", {"question": QUESTION})
            assert asked["metadata"]["mode"] == "no_retrieval" and asked["confidence"]["level"] == "Low"
            assert "vector_db_unavailable" in asked["metadata"]["degraded_reason"] and asked["citations"] == []
            assert mcp.error("search", {"query": QUESTION})["code"] == "vector_db_unavailable"

        log = srv.log_text()
        assert "ERROR" in log and "answering without retrieval" in log

        server.start(own_postgres)  # back up: the pool reconnects (its backoff may take a few questions)
        deadline = time.monotonic() + TIMEOUT
        while True:
            again = httpx.post(f"{srv.url}/api/query", json={"query": QUESTION}, timeout=TIMEOUT).json()
            if again["metadata"]["mode"] != "no_retrieval" or time.monotonic() > deadline:
                break
            time.sleep(1.0)
        assert again["metadata"]["mode"] != "no_retrieval" and again["metadata"]["degraded_reason"] is None, again


def test_a_running_cli_chat_answers_without_retrieval_once_postgres_stops(tmp_path, own_postgres):
    """``ragstream chat`` opened the index while PostgreSQL ran; the next question after it stopped is answered
    without retrieval. (``ragstream ask`` started while it is down cannot open the index: the catalog is in it.)"""
    from ragstream.store.postgres import server

    url = _ingested(tmp_path, own_postgres)
    env = server_env(tmp_path / "data", **FAST_SETTINGS, STORE__BACKEND="postgres", STORE__URL=url,
                     STORE__CONNECT_TIMEOUT_SECONDS="2")
    chat = subprocess.Popen([sys.executable, "-c", SERVE_WITH_HASH_EMBEDDER, "chat"], env=env, text=True,
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    out: list[str] = []
    err: list[str] = []  # both pipes read by threads: communicate() would race the stdout reader for the answer
    reader = threading.Thread(target=lambda: out.extend(iter(lambda: chat.stdout.read(1), "")), daemon=True)
    err_reader = threading.Thread(target=lambda: err.extend(iter(chat.stderr.readline, "")), daemon=True)
    reader.start()
    err_reader.start()
    try:
        chat.stdin.write(QUESTION + "\n")
        chat.stdin.flush()
        deadline = time.monotonic() + TIMEOUT
        while "".join(out).count("you> ") < 2 and time.monotonic() < deadline and chat.poll() is None:
            time.sleep(0.1)  # the first answer, from the documents, is printed and the prompt is back
        assert "".join(out).count("you> ") == 2, "".join(out)
        healthy = "".join(out)
        server.stop(own_postgres)  # the real fault, under the running chat
        chat.stdin.write(QUESTION + "\n\n")
        chat.stdin.close()
        chat.wait(timeout=TIMEOUT)
    finally:
        if chat.poll() is None:
            chat.kill()
    reader.join(TIMEOUT)
    err_reader.join(TIMEOUT)
    later, errors = "".join(out)[len(healthy):], "".join(err)
    assert chat.returncode == 0, errors
    assert "could not be searched" not in healthy
    assert later.lstrip().startswith("The documents could not be searched (") and "vector_db_unavailable" not in errors


def test_a_users_scoped_questions_answer_without_retrieval_while_postgres_is_stopped(tmp_path, own_postgres):
    """A user's (not an admin's) questions read the collections they may read from the catalog, which is in the
    stopped PostgreSQL too: that read is part of the answer's retried attempt, so /api/query, /api/chat, /ws/chat
    and /v1/chat/completions answer 200 without retrieval, scoped or not, instead of 503. With PostgreSQL up, an
    unknown collection is still 404 ``collection_not_found`` (``model_not_found`` as a /v1 model)."""
    from ragstream.store.postgres import server

    settings = _handbook_for_bob(tmp_path, own_postgres)
    with running_server(tmp_path / "srv", hash_embedder=True, data_dir=tmp_path / "data", **settings) as srv, \
            key_client(srv.url, BOB_KEY, timeout=httpx.Timeout(TIMEOUT)) as bob:
        healthy = bob.post("/api/query", json={"query": ASYNC_QUESTION, "collections": ["handbook"]}).json()
        assert healthy["metadata"]["degraded_reason"] is None and healthy["sources"], healthy
        assert healthy["sources"][0]["collections"] == ["handbook"]
        for path, body in (("/api/query", {"query": QUESTION, "collections": ["no-such"]}),
                           ("/api/chat", {"message": QUESTION, "collections": ["no-such"]})):
            missing = bob.post(path, json=body)
            assert missing.status_code == 404 and missing.json()["error"]["code"] == "collection_not_found", path
        for stream in (False, True):
            unknown = bob.post("/v1/chat/completions", json={"model": "ragstream/no-such", "stream": stream,
                                                             "messages": [{"role": "user", "content": QUESTION}]})
            assert unknown.status_code == 404 and unknown.json()["error"]["code"] == "model_not_found", stream

        server.stop(own_postgres)  # the real fault
        for scope in ({}, {"collections": ["handbook"]}):
            response = bob.post("/api/query", json={"query": QUESTION, **scope})
            assert response.status_code == 200, response.text
            assert response.json()["metadata"]["mode"] == "no_retrieval", scope
            assert "vector_db_unavailable" in response.json()["metadata"]["degraded_reason"]

            chat = bob.post("/api/chat", json={"message": QUESTION, **scope})
            assert chat.status_code == 200, chat.text
            done = _sse(chat.text)[-1]
            assert done[0] == "done" and done[1]["mode"] == "no_retrieval" and done[1]["degraded_reason"], scope

            ws_url = srv.url.replace("http://", "ws://") + f"/ws/chat?key={BOB_KEY}"
            with connect(ws_url, open_timeout=TIMEOUT) as ws:
                ws.send(json.dumps({"message": QUESTION, **scope}))
                while (event := json.loads(ws.recv(timeout=TIMEOUT)))["event"] == "token":
                    pass
            assert event["event"] == "done" and event["data"]["mode"] == "no_retrieval", event

        for model in ("ragstream", "ragstream/handbook"):
            for stream in (False, True):
                completion = bob.post("/v1/chat/completions", json={
                    "model": model, "stream": stream, "messages": [{"role": "user", "content": QUESTION}]})
                assert completion.status_code == 200, (model, stream, completion.text)
                assert "could not be searched" in completion.text, (model, stream)


def test_a_users_mcp_ask_answers_without_retrieval_while_postgres_is_stopped(tmp_path, own_postgres):
    """MCP ``ask`` as a user (not an admin) over /mcp: the collections the user may read come from the catalog, in the
    stopped PostgreSQL too; that read is part of the answer's retried attempt, as on /api/chat, so the question is
    answered without retrieval (``degraded_reason``), scoped or not, instead of a ``vector_db_unavailable`` tool
    error. With PostgreSQL up, an unknown collection is still ``collection_not_found``."""
    from ragstream.store.postgres import server

    settings = _handbook_for_bob(tmp_path, own_postgres)
    with running_server(tmp_path / "srv", hash_embedder=True, data_dir=tmp_path / "data", **settings) as srv, \
            connected(http_session(srv.url, BOB_KEY)) as mcp:
        healthy = mcp.ok("ask", {"question": ASYNC_QUESTION, "collections": ["handbook"]})
        assert healthy["metadata"]["degraded_reason"] is None and healthy["sources"], healthy
        assert mcp.error("ask", {"question": QUESTION, "collections": ["no-such"]})["code"] == "collection_not_found"

        server.stop(own_postgres)  # the real fault
        for scope in ({}, {"collections": ["handbook"]}):
            asked = mcp.ok("ask", {"question": QUESTION, **scope})
            assert asked["metadata"]["mode"] == "no_retrieval" and asked["confidence"]["level"] == "Low", scope
            assert "vector_db_unavailable" in asked["metadata"]["degraded_reason"] and asked["citations"] == [], scope
            assert asked["answer"].startswith("The documents could not be searched ("), scope
