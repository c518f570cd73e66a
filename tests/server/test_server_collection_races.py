"""A collection deleted over HTTP while ``ragstream ingest --collection`` writes into it from another process, on
PostgreSQL (the store several processes share): the delete is refused while the collection holds what the ingest
committed, then deletes it with those documents; the ingest's remaining files fail with ``collection_not_found``;
nothing of the collection is left: no document, no membership, no chunk (docs/collections.md)."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import httpx
from support.folder_corpus import write_text
from support.hash_embedder import HashEmbedder
from support.index_fixtures import FAST_DEFAULTS
from support.polling import WAIT_SECONDS, wait_for
from support.server_process import FAST_SETTINGS, SERVE_WITH_HASH_EMBEDDER, running_server, server_env

from ragstream import Ragstream, load_config

FILES = 150
"""Enough one-chunk files, each its own batch and commit, that the ingest is still writing when the delete lands."""


def test_deleting_a_collection_while_a_cli_ingest_writes_into_it(tmp_path: Path, postgres_url: str):
    folder = tmp_path / "inbox"
    for n in range(FILES):
        write_text(folder / f"note-{n:03d}.md", f"# Note {n}\n\nThe harbour ledger entry {n} records a cargo of tea.\n")
    store = {"STORE__BACKEND": "postgres", "STORE__URL": postgres_url}
    with running_server(tmp_path / "srv", hash_embedder=True, **store) as server, \
            httpx.Client(base_url=server.url, timeout=WAIT_SECONDS) as api:
        assert api.post("/api/collections", json={"name": "inbox", "access": "all"}).status_code == 201
        env = server_env(tmp_path / "cli", **FAST_SETTINGS, **store, INGEST__WRITE_BATCH_CHUNKS="1")
        ingest = subprocess.Popen([sys.executable, "-c", SERVE_WITH_HASH_EMBEDDER, "ingest", str(folder),
                                   "--collection", "inbox", "--json"], env=env, text=True,
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        try:
            wait_for(lambda: api.get("/api/collections/inbox").json()["documents"] > 0 or ingest.poll() is not None,
                     "the ingest's first commit")
            assert ingest.poll() is None, "the ingest ended before the delete: make FILES larger"
            refused = api.delete("/api/collections/inbox")
            assert refused.status_code == 409 and refused.json()["error"]["code"] == "collection_not_empty"
            deadline = time.monotonic() + WAIT_SECONDS
            while (deleted := api.delete("/api/collections/inbox", params={"delete_documents": "true"})).status_code == 409:
                assert time.monotonic() < deadline, deleted.text  # a commit landed between its two steps: again
            assert deleted.status_code == 200, deleted.text
            out, err = ingest.communicate(timeout=WAIT_SECONDS)
        finally:
            if ingest.poll() is None:
                ingest.kill()
        report = json.loads(out)
        failed = report["failures"]
        assert ingest.returncode == 0, err  # some files were committed (and deleted with the collection)
        assert failed and {failure["code"] for failure in failed} == {"collection_not_found"}, failed
        assert report["documents_processed"] + len(failed) == FILES
        assert api.get("/api/collections/inbox").status_code == 404
        assert api.get("/api/documents").json() == []
        assert api.post("/api/search", json={"query": "harbour ledger cargo tea", "mode": "bm25"}).json()["hits"] == []
    with Ragstream(load_config(data_dir=tmp_path / "check", store={"backend": "postgres", "url": postgres_url},
                               **FAST_DEFAULTS), embedder=HashEmbedder()) as rs:
        assert rs.documents() == [] and [c.name for c in rs.collections()] == ["default"]
        assert rs.store.count() == 0  # no chunk of the deleted documents nor of the failed files
