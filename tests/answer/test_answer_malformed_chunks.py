"""Malformed stored chunks, made for real by writing damaged points into the embedded Qdrant store (a
payload without its text, a metadata field of the wrong type): retrieval leaves them out of the answer's
attachments, the server logs them and the answer's ``metadata.malformed_chunks`` names each with the reason;
in process and over HTTP from a real ``ragstream serve`` on the damaged index."""

from __future__ import annotations

from pathlib import Path

import httpx
import qdrant_edge as qe
from support.edge_shard import local_shard
from support.hash_embedder import HashEmbedder
from support.index_fixtures import FAST_DEFAULTS
from support.server_process import running_server

from ragstream import Ragstream, load_config

QUESTION = "What does the zanzibarquokka protocol require before a launch?"
PAGES = {
    "protocol.md": "# Launch protocol\n\nThe zanzibarquokka protocol requires two signatures before a launch.\n",
    "officer.md": "# Duty officer\n\nEvery zanzibarquokka launch is logged by the duty officer of the protocol.\n",
    "drills.md": "# Drills\n\nThe zanzibarquokka protocol is rehearsed before a launch every month.\n",
}
TIMEOUT = 60.0


def _damaged_index(folder: Path, data_dir: Path) -> tuple[str, str]:
    """Ingest the pages, then damage two stored points (written through the store's own shard, as a bug or a
    foreign writer would): one loses its text, one gets a page number that is a word. Their ids."""
    folder.mkdir()
    for name, text in PAGES.items():
        (folder / name).write_text(text)
    with Ragstream(load_config(data_dir=str(data_dir), **FAST_DEFAULTS), embedder=HashEmbedder()) as rs:
        assert rs.ingest([folder]).documents_processed == 3
        ids = {Path(r.source).name: rs.document_chunks(r.document_id)[0].chunk_id for r in rs.documents()}
        shard = local_shard(rs.store)  # the embedded store's own writer: the only way to store a damaged point
        shard.update(qe.UpdateOperation.delete_payload([ids["officer.md"]], ["text"]))
        shard.update(qe.UpdateOperation.set_payload([ids["drills.md"]], {"page": "seven"}))
        rs.store.flush()
    return ids["officer.md"], ids["drills.md"]


def test_malformed_chunks_are_left_out_and_reported(tmp_path, caplog):
    no_text, bad_page = _damaged_index(tmp_path / "docs", tmp_path / "data")
    with Ragstream(load_config(data_dir=str(tmp_path / "data"), **FAST_DEFAULTS), embedder=HashEmbedder()) as rs:
        with caplog.at_level("WARNING", logger="ragstream.pipeline"):
            answer = rs.ask(QUESTION)
    reported = {entry["chunk_id"]: entry["reason"] for entry in answer.metadata["malformed_chunks"]}
    assert reported == {no_text: "the stored point has no text", bad_page: "the stored point's page is str"}
    assert no_text not in answer.metadata["context_chunk_ids"] and bad_page not in answer.metadata["context_chunk_ids"]
    assert answer.metadata["context_chunk_ids"] and answer.metadata["mode"] == "extractive"
    assert "two signatures" in answer.answer and {s.title for s in answer.sources} == {"Launch protocol"}
    assert any("malformed stored chunk" in record.message and no_text in record.message for record in caplog.records)


def test_over_http_the_answer_reports_malformed_chunks(tmp_path):
    no_text, bad_page = _damaged_index(tmp_path / "docs", tmp_path / "data")
    with running_server(tmp_path / "server", hash_embedder=True, data_dir=tmp_path / "data") as server:
        response = httpx.post(f"{server.url}/api/query", json={"query": QUESTION}, timeout=TIMEOUT)
        log = server.log.read_text()
    assert response.status_code == 200
    meta = response.json()["metadata"]
    assert {entry["chunk_id"] for entry in meta["malformed_chunks"]} == {no_text, bad_page}
    assert no_text not in meta["context_chunk_ids"] and bad_page not in meta["context_chunk_ids"]
    assert "malformed stored chunk" in log
