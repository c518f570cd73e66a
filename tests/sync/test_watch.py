"""``ragstream watch`` and ``ragstream serve --watch`` on real folders with real file events (watchfiles), on the
hash embedder: the watcher in process on its own thread, ``ragstream watch`` as a real process while other
``ragstream`` commands (search, docs list) run on the same index, and ``ragstream serve --watch`` as a real
server whose HTTP API sees the folder's changes. Changes are polled for within a bounded wait, never timed.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest
from support.folder_corpus import write_text
from support.hash_embedder import CountingEmbedder, HashEmbedder
from support.index_fixtures import FAST_DEFAULTS
from support.polling import QUICK_SYNC, WAIT_SECONDS, wait_for
from support.server_process import FAST_SETTINGS, SERVE_WITH_HASH_EMBEDDER, STOP_SECONDS, running_server, server_env

from ragstream import Ragstream, load_config

SIGINT_EXIT = 128 + signal.SIGINT
"""How a process stopped by Ctrl-C exits (uvicorn re-raises the signal once it has shut down cleanly)."""
TEMPORARY_NAMES = (".#notes.md", "notes.md~", ".notes.md.swp", "4913", "~$notes.md", ".~lock.notes.md#")




@pytest.fixture
def folder(tmp_path: Path) -> Path:
    docs = tmp_path / "docs"
    write_text(docs / "notes.md", "# Notes\n\nThe lighthouse keeper logs every passing ship.\n")
    write_text(docs / "deep" / "guide.txt", "Harbour pilots board ships outside the breakwater.\n")
    return docs


def _sources(rs: Ragstream) -> set[str]:
    return {Path(record.source).name for record in rs.documents()}


# -- the settle rule, deterministic -----------------------------------------------------------------


def test_a_file_syncs_once_its_size_and_time_hold(tmp_path: Path, folder: Path, hash_embedder: HashEmbedder):
    config = load_config(data_dir=tmp_path / "index", **FAST_DEFAULTS, sync={"stable_seconds": 3600})
    with Ragstream(config, embedder=hash_embedder) as rs:
        watcher = rs.watcher([folder])
        growing = write_text(folder / "growing.md", "# Growing\n\nfirst half")
        old = write_text(folder / "old.md", "# Old\n\nwritten long ago")
        past = time.time() - 7200
        os.utime(old, (past, past))
        gone = str(folder / "gone.md")
        alone: dict[str, Any] = {gone: None}
        assert watcher._settled(alone) == set()  # a path just deleted may be written again (an editor's save)
        pending: dict[str, Any] = {str(growing): None, str(old): None, gone: None}
        assert watcher._settled(pending) == {str(old), gone}  # an old file is ready at once; a deleted one with it
        with growing.open("a") as handle:  # still being written: its size moved since the last look
            handle.write(" and the second half")
        assert watcher._settled(pending) == {str(old), gone}
        assert pending[str(growing)][0] == growing.stat().st_size  # remembered as seen now, waiting to hold


def test_editors_temporary_files_never_count(tmp_path: Path, folder: Path, hash_embedder: HashEmbedder):
    with Ragstream(load_config(data_dir=tmp_path / "index", **FAST_DEFAULTS), embedder=hash_embedder) as rs:
        syncer = rs._syncer()
        for name in TEMPORARY_NAMES:
            assert syncer.ignores(folder / name), name
        assert not syncer.ignores(folder / "notes.md")
        assert syncer.ignores(tmp_path / "index" / "uploads" / "x.md")  # the index's own folders
        assert not syncer.takes(folder.resolve(), folder.resolve() / "image.png")
        assert syncer.takes(folder.resolve(), folder.resolve() / "deep" / "new.md")


# -- the watcher thread, in process ----------------------------------------------------------------


def test_the_watcher_follows_adds_edits_renames_deletes(tmp_path: Path, folder: Path):
    embedder = CountingEmbedder()
    config = load_config(data_dir=tmp_path / "index", **FAST_DEFAULTS, sync=QUICK_SYNC)
    reports = []
    with Ragstream(config, embedder=embedder) as rs:
        watcher = rs.watcher([folder], on_report=reports.append)
        watcher.start()
        try:
            assert watcher.ready.wait(WAIT_SECONDS)
            assert _sources(rs) == {"notes.md", "guide.txt"}
            [root] = rs.roots()
            assert root.watched_until is not None and root.watched_until > time.time()

            for name in TEMPORARY_NAMES:
                write_text(folder / name, "scratch of an editor: albatross\n")
            write_text(folder / "new.md", "# New\n\nThe albatross circles the lighthouse.\n")
            wait_for(lambda: "new.md" in _sources(rs), "a new file")

            write_text(folder / "notes.md", "# Notes\n\nThe keeper now logs cormorants too.\n")
            wait_for(lambda: any("cormorants" in hit.chunk.text for hit in rs.search("cormorants", mode="bm25").hits),
                     "an edited file's new text")

            passages = embedder.passages
            (folder / "deep" / "guide.txt").rename(folder / "pilots.txt")
            [renamed] = wait_for(lambda: [moved for report in reports for moved in report.renamed], "a renamed file")
            assert Path(renamed.source).name == "pilots.txt" and "guide.txt" not in _sources(rs)
            assert embedder.passages == passages

            (folder / "new.md").unlink()
            wait_for(lambda: "new.md" not in _sources(rs), "a deleted file's document removed")

            # a folder moved in whole, then deleted whole
            outside = tmp_path / "outside"
            write_text(outside / "one.md", "# One\n\nGannets dive for herring.\n")
            write_text(outside / "two.md", "# Two\n\nTerns nest on shingle.\n")
            outside.rename(folder / "birds")
            wait_for(lambda: {"one.md", "two.md"} <= _sources(rs), "a folder moved in")
            shutil.rmtree(folder / "birds")
            wait_for(lambda: not {"one.md", "two.md"} & _sources(rs), "a deleted folder's documents removed")

            # a file written in pieces: the document ends up whole
            with (folder / "log.md").open("w") as handle:
                handle.write("# Log\n\nbeginning of the log; ")
                handle.flush()
                time.sleep(QUICK_SYNC["stable_seconds"] / 2)
                handle.write("end of the log marker ospreyfinal\n")
            wait_for(lambda: any("ospreyfinal" in hit.chunk.text for hit in rs.search("ospreyfinal", mode="bm25").hits),
                     "a file written in pieces")
        finally:
            watcher.stop()
        assert _sources(rs) == {"notes.md", "pilots.txt", "log.md"}  # no temporary file made it in
        assert rs.roots()[0].watched_until is None  # the lease goes with the watcher
        assert watcher.error is None


# -- ragstream watch as a process, with other commands on the index ---------------------------------


def _cli(code: str = SERVE_WITH_HASH_EMBEDDER) -> list[str]:
    return [sys.executable, "-c", code]


def _quick_env(data_dir: Path) -> dict[str, str]:
    settings = {**FAST_SETTINGS, **{f"SYNC__{key.upper()}": str(value) for key, value in QUICK_SYNC.items()}}
    return server_env(data_dir, **settings)


@contextmanager
def watching(folder: Path, data_dir: Path, log: Path) -> Iterator[subprocess.Popen]:
    """``ragstream watch FOLDER`` as a real process, stopped with SIGINT (Ctrl-C) after the block."""
    with log.open("wb") as out:
        process = subprocess.Popen([*_cli(), "watch", str(folder)], env=_quick_env(data_dir), stdout=out,
                                   stderr=subprocess.STDOUT)
    try:
        yield process
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGINT)
            try:
                process.wait(STOP_SECONDS)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


def _search(data_dir: Path, query: str) -> list[str]:
    """``ragstream search --json`` as another process: the sources of its hits (empty on an error exit)."""
    done = subprocess.run([*_cli(), "search", query, "--mode", "bm25", "--json"], env=_quick_env(data_dir),
                          capture_output=True, text=True, timeout=WAIT_SECONDS)
    if done.returncode != 0:
        return []
    return [Path(hit["chunk"]["metadata"]["source"]).name for hit in json.loads(done.stdout)["hits"]]


def test_watch_process_while_other_commands_use_the_index(tmp_path: Path, folder: Path):
    data_dir, log = tmp_path / "index", tmp_path / "watch.log"
    with watching(folder, data_dir, log) as process:
        # as a person would: the other commands start once the watch has opened (here: created) the index
        wait_for(lambda: (data_dir / "server.json").is_file() or process.poll() is not None, "the watch listening")
        assert process.poll() is None, log.read_text()
        announced = json.loads((data_dir / "server.json").read_text())
        assert announced["kind"] == "watch" and announced["pid"] == process.pid
        wait_for(lambda: "notes.md" in _search(data_dir, "lighthouse keeper"), "the first sync, searched by another process")

        write_text(folder / "fresh.md", "# Fresh\n\nA puffin colony nests on the cliffs.\n")
        wait_for(lambda: "fresh.md" in _search(data_dir, "puffin colony"), "a new file, searched by another process")
        (folder / "fresh.md").rename(folder / "deep" / "puffins.md")
        wait_for(lambda: _search(data_dir, "puffin colony")[:1] == ["puffins.md"], "a renamed file")
        listed = subprocess.run([*_cli(), "docs", "list", "--json"], env=_quick_env(data_dir), capture_output=True,
                                text=True, timeout=WAIT_SECONDS)
        assert listed.returncode == 0, listed.stderr
        assert "via ragstream watch" in listed.stderr
        assert {Path(doc["source"]).name for doc in json.loads(listed.stdout)} == {"notes.md", "guide.txt", "puffins.md"}

        held = subprocess.run([*_cli(), "watch", str(folder)], env=_quick_env(data_dir), capture_output=True, text=True,
                              timeout=WAIT_SECONDS)
        assert held.returncode == 2 and "serve --watch" in held.stderr  # one watcher per embedded index
    output = log.read_text()
    assert process.returncode in (0, SIGINT_EXIT, -signal.SIGINT) and "Traceback" not in output, output  # Ctrl-C
    assert "watching" in output and "1 renamed" in output and "0 embedded" in output
    assert not (data_dir / "server.json").exists()
    with Ragstream(load_config(data_dir=data_dir, **FAST_DEFAULTS), embedder=HashEmbedder()) as rs:
        [root] = rs.roots()
        assert root.watched_until is None and root.documents == 3


# -- ragstream serve --watch -------------------------------------------------------------------------

ADMIN_KEY = "admin-key-0123456789abcdef"
USER_KEY = "user-key-0123456789abcdef"


def test_serve_watch_makes_new_files_searchable_over_http(tmp_path: Path, folder: Path):
    keys = json.dumps([{"key": ADMIN_KEY, "user": "root", "role": "admin"}, {"key": USER_KEY, "user": "alice"}])
    settings = {f"SYNC__{key.upper()}": str(value) for key, value in QUICK_SYNC.items()}
    with running_server(tmp_path, hash_embedder=True, args=["--watch", str(folder)], SERVER__KEYS=keys,
                        **settings) as server:
        admin = httpx.Client(base_url=server.url, headers={"Authorization": f"Bearer {ADMIN_KEY}"}, timeout=WAIT_SECONDS)
        user = httpx.Client(base_url=server.url, headers={"Authorization": f"Bearer {USER_KEY}"}, timeout=WAIT_SECONDS)

        def hits(client: httpx.Client, query: str) -> list[str]:
            answer = client.post("/api/search", json={"query": query, "mode": "bm25"})
            assert answer.status_code == 200, answer.text
            return [Path(hit["chunk"]["metadata"]["source"]).name for hit in answer.json()["hits"]]

        wait_for(lambda: "notes.md" in hits(user, "lighthouse keeper"), "the first sync")
        write_text(folder / "tides.md", "# Tides\n\nSpring tides flood the estuary marshes twice a month.\n")
        wait_for(lambda: "tides.md" in hits(user, "estuary marshes"), "a file added while serving")
        (folder / "deep" / "guide.txt").unlink()
        wait_for(lambda: "guide.txt" not in hits(user, "harbour pilots breakwater"), "a deleted file")

        roots = user.get("/api/roots").json()["roots"]  # every user sees the roots: their documents are shared
        assert [(root["root"], root["watching"], root["documents"]) for root in roots] == [
            (str(folder.resolve()), True, 2)]
        assert roots[0]["last_sync_at"] and "removed" in roots[0]["last_sync"]

        refused = user.post("/api/roots/sync", json={"root": roots[0]["root"]})
        assert refused.status_code == 403 and refused.json()["error"]["code"] == "forbidden"
        unknown = admin.post("/api/roots/sync", json={"root": "/etc"})
        assert unknown.status_code == 404 and unknown.json()["error"]["code"] == "root_not_found"
        empty = admin.post("/api/roots/sync", json={"root": ""})
        assert empty.status_code == 422

        # the watcher's last batch removed one file; the admin's full sync finds the two left unchanged
        assert roots[0]["last_sync"]["unchanged"] == 0
        accepted = admin.post("/api/roots/sync", json={"root": roots[0]["root"]})
        assert accepted.status_code == 202 and accepted.json()["root"] == roots[0]["root"]
        wait_for(lambda: admin.get("/api/roots").json()["roots"][0]["last_sync"]["unchanged"] == 2, "the admin's sync")
        assert user.delete(f"/api/documents/{_document_id(user, 'tides.md')}").status_code == 403  # shared
        admin.close()
        user.close()


def _document_id(client: httpx.Client, name: str) -> str:
    return next(doc["document_id"] for doc in client.get("/api/documents").json() if Path(doc["source"]).name == name)


def test_watch_on_a_shared_store_holds_nothing(tmp_path: Path, folder: Path, postgres_url: str):
    """On PostgreSQL every process opens the index itself: the watch serves no API, and a search in another
    process, opening the same database, sees the watched folder's changes."""
    data_dir, log = tmp_path / "index", tmp_path / "watch.log"
    env = {**_quick_env(data_dir), "RAGSTREAM_STORE__BACKEND": "postgres", "RAGSTREAM_STORE__URL": postgres_url}

    def search(query: str) -> list[str]:
        done = subprocess.run([*_cli(), "search", query, "--mode", "bm25", "--json"], env=env, capture_output=True,
                              text=True, timeout=WAIT_SECONDS)
        return [Path(hit["chunk"]["metadata"]["source"]).name for hit in json.loads(done.stdout)["hits"]] \
            if done.returncode == 0 else []

    with log.open("wb") as out:
        process = subprocess.Popen([*_cli(), "watch", str(folder)], env=env, stdout=out, stderr=subprocess.STDOUT)
    try:
        wait_for(lambda: "notes.md" in search("lighthouse keeper") or process.poll() is not None, "the first sync")
        assert process.poll() is None, log.read_text()
        assert not (data_dir / "server.json").exists()
        write_text(folder / "gulls.md", "# Gulls\n\nHerring gulls steal chips on the promenade.\n")
        wait_for(lambda: "gulls.md" in search("herring gulls promenade"), "a new file, seen by another process")
    finally:
        process.send_signal(signal.SIGTERM)
        process.wait(STOP_SECONDS)
    assert process.returncode == 0 and "Traceback" not in log.read_text(), log.read_text()


def test_a_missing_root_stops_watch_and_serve_before_they_start(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                hash_embedder_by_default: HashEmbedder):
    from typer.testing import CliRunner

    from ragstream.cli import app

    monkeypatch.setenv("RAGSTREAM_DATA_DIR", str(tmp_path / "index"))
    for command in (["watch", str(tmp_path / "nope")], ["serve", "--watch", str(tmp_path / "nope")]):
        result = CliRunner().invoke(app, command)
        assert result.exit_code == 2 and "root_not_found" in result.output, result.output
    assert not (tmp_path / "index" / "server.json").exists()


def test_serve_watch_into_a_collection_remembers_it(tmp_path: Path, folder: Path):
    """``serve --watch DIR --collection NAME``: the folder's documents, those there at the start and those written
    while serving, join NAME (a search scoped to it over HTTP finds them, one scoped to another does not); the root
    remembers it, so a later ``serve --watch DIR`` without --collection puts new files in NAME too."""
    from support.link_folders import run_cli

    data_dir = tmp_path / "index"
    for name in ("harbour", "other"):
        made = run_cli(data_dir, "collections", "create", name, "--access", "all")
        assert made.returncode == 0, made.stderr
    keys = json.dumps([{"key": USER_KEY, "user": "alice"}])
    settings = {f"SYNC__{key.upper()}": str(value) for key, value in QUICK_SYNC.items()}

    def hits(client: httpx.Client, query: str, collection: str) -> list[str]:
        answer = client.post("/api/search", json={"query": query, "mode": "bm25", "collections": [collection]})
        assert answer.status_code == 200, answer.text
        return [Path(hit["chunk"]["metadata"]["source"]).name for hit in answer.json()["hits"]]

    with running_server(tmp_path / "first", hash_embedder=True, data_dir=data_dir, SERVER__KEYS=keys, **settings,
                        args=["--watch", str(folder), "--collection", "harbour"]) as server, \
            httpx.Client(base_url=server.url, headers={"Authorization": f"Bearer {USER_KEY}"}, timeout=WAIT_SECONDS) as user:
        wait_for(lambda: "notes.md" in hits(user, "lighthouse keeper", "harbour"), "the first sync, into harbour")
        write_text(folder / "tides.md", "# Tides\n\nSpring tides flood the estuary marshes twice a month.\n")
        wait_for(lambda: "tides.md" in hits(user, "estuary marshes", "harbour"), "a file added while serving")
        assert hits(user, "lighthouse keeper", "other") == [] and hits(user, "estuary marshes", "other") == []
        listed = user.get("/api/documents", params={"collection": "harbour"}).json()
        assert sorted(Path(doc["source"]).name for doc in listed) == ["guide.txt", "notes.md", "tides.md"]

    write_text(folder / "gulls.md", "# Gulls\n\nHerring gulls steal chips on the promenade.\n")
    with running_server(tmp_path / "again", hash_embedder=True, data_dir=data_dir, SERVER__KEYS=keys, **settings,
                        args=["--watch", str(folder)]) as server, \
            httpx.Client(base_url=server.url, headers={"Authorization": f"Bearer {USER_KEY}"}, timeout=WAIT_SECONDS) as user:
        wait_for(lambda: "gulls.md" in hits(user, "herring gulls promenade", "harbour"), "the root's remembered collection")
        assert hits(user, "herring gulls promenade", "other") == []


def test_serve_collection_needs_watch(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    from typer.testing import CliRunner

    from ragstream.cli import app

    monkeypatch.setenv("RAGSTREAM_DATA_DIR", str(tmp_path / "index"))
    result = CliRunner().invoke(app, ["serve", "--collection", "harbour"])
    assert result.exit_code == 2 and "--watch" in result.output, result.output
    assert not (tmp_path / "index").exists()
