"""The same scoped question on every surface (docs/collections.md): HTTP ``/api/search`` and ``/api/query``, MCP
``search`` and ``ask`` over ``/mcp``, and the CLI's ``search`` and ``ask`` (on the index itself, then through the
running server it finds) each build one Scope at their edge and the facade resolves it the same way, so they name the
same sources: the scoped collection's document only, where the unscoped question finds the others too."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
from support.hash_embedder import HashEmbedder
from support.index_fixtures import FAST_DEFAULTS
from support.link_folders import run_cli
from support.mcp_client import connected, http_session
from support.server_process import running_server

from ragstream import Ragstream, load_config

QUESTION = "How long is the notice period for leaving?"
TEXTS = {  # three documents that answer it, in three collections
    "handbook": "# Leaving\n\nThe notice period for leaving is three months, given in writing.\n",
    "minutes": "# Board minutes\n\nThe board kept the notice period for leaving at three months.\n",
    None: "# Contract\n\nThe notice period for leaving the contract is three months.\n",
}
TIMEOUT = 60.0


def _index(tmp_path: Path) -> dict[str | None, str]:
    """The three documents ingested, each into its collection (None: the default one); collection -> document id."""
    ids: dict[str | None, str] = {}
    with Ragstream(load_config(data_dir=str(tmp_path / "data"), **FAST_DEFAULTS), embedder=HashEmbedder()) as rs:
        for collection, text in TEXTS.items():
            if collection:
                rs.create_collection(collection, access="all")
            path = tmp_path / f"{collection or 'contract'}.md"
            path.write_text(text)
            ids[collection] = rs.ingest([path], collection=collection).document_ids[0]
    return ids


def _cli(data_dir: Path, via_serve: bool, *args: str) -> dict:
    done = run_cli(data_dir, *args, "--collection", "handbook", "--json")
    assert done.returncode == 0, done.stderr
    assert ("via ragstream serve" in done.stderr) == via_serve, done.stderr  # the index itself, or the server on it
    return json.loads(done.stdout)


def _cli_sources(data_dir: Path, via_serve: bool) -> dict[str, set[str]]:
    searched = _cli(data_dir, via_serve, "search", QUESTION, "--mode", "bm25")
    answered = _cli(data_dir, via_serve, "ask", QUESTION)
    return {"search": {hit["chunk"]["metadata"]["document_id"] for hit in searched["hits"]},
            "ask": {source["document_id"] for source in answered["sources"]}}


def test_one_scoped_question_names_the_same_sources_on_every_surface(tmp_path: Path):
    ids = _index(tmp_path)
    found = {f"cli {kind}": sources for kind, sources in _cli_sources(tmp_path / "data", False).items()}
    with running_server(tmp_path / "srv", hash_embedder=True, data_dir=tmp_path / "data") as srv:
        with httpx.Client(base_url=srv.url, timeout=TIMEOUT) as http:
            searched = http.post("/api/search", json={"query": QUESTION, "mode": "bm25", "collections": ["handbook"]})
            asked = http.post("/api/query", json={"query": QUESTION, "collections": ["handbook"]})
            unscoped = http.post("/api/search", json={"query": QUESTION, "mode": "bm25"})
        assert searched.status_code == asked.status_code == unscoped.status_code == 200, (searched.text, asked.text)
        found["http search"] = {hit["chunk"]["metadata"]["document_id"] for hit in searched.json()["hits"]}
        found["http query"] = {source["document_id"] for source in asked.json()["sources"]}
        with connected(http_session(srv.url)) as mcp:
            passages = mcp.ok("search", {"query": QUESTION, "mode": "bm25", "collections": ["handbook"]})["passages"]
            found["mcp search"] = {passage["document_id"] for passage in passages}
            found["mcp ask"] = {s["document_id"] for s in mcp.ok("ask", {"question": QUESTION,
                                                                          "collections": ["handbook"]})["sources"]}
        found |= {f"cli {kind} via serve": sources for kind, sources in _cli_sources(tmp_path / "data", True).items()}
    assert found == {key: {ids["handbook"]} for key in found}
    assert {hit["chunk"]["metadata"]["document_id"] for hit in unscoped.json()["hits"]} == set(ids.values())
