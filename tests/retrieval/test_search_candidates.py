"""Search results carry ``num_candidates``: how many candidates each retriever that ran produced before fusion,
the score threshold and the cut to ``top_k`` (facade, HTTP and MCP search)."""

from __future__ import annotations

import httpx
from support.index_fixtures import SAMPLES
from support.server_process import running_server

QUESTION = "How do I set a timeout on a request?"
DOCS = [SAMPLES / "httpx-timeouts.md", SAMPLES / "httpx-quickstart.md"]


def test_each_mode_reports_its_retrievers_candidates(make_fast_index):
    rs = make_fast_index(retrieval={"candidates": 12})
    rs.ingest(DOCS)
    total = sum(record.chunk_count for record in rs.documents())
    assert total > 3
    hybrid = rs.search(QUESTION, mode="hybrid", top_k=2)
    assert set(hybrid.num_candidates) == {"dense", "bm25"} and len(hybrid.hits) == 2
    assert hybrid.num_candidates["dense"] == min(12, total)  # every chunk has a cosine: the whole depth
    assert 2 <= hybrid.num_candidates["bm25"] <= min(12, total)  # only chunks sharing a term
    dense = rs.search(QUESTION, mode="dense", top_k=3, score_threshold=0.99)
    assert dense.num_candidates == {"dense": 3} and dense.hits == []  # counted before the threshold
    bm25 = rs.search(QUESTION, mode="bm25", top_k=3)
    assert bm25.num_candidates == {"bm25": len(bm25.hits)}


def test_the_http_search_response_carries_it(tmp_path):
    with running_server(tmp_path, hash_embedder=True) as srv:
        for path in DOCS:
            httpx.post(f"{srv.url}/api/documents", files={"files": (path.name, path.read_bytes())}, timeout=60)
        found = httpx.post(f"{srv.url}/api/search", json={"query": QUESTION, "top_k": 2}, timeout=60).json()
    assert set(found["num_candidates"]) == {"dense", "bm25"} and found["num_candidates"]["dense"] >= len(found["hits"])
