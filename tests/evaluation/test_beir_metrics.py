"""``ragstream eval``'s scores: NDCG@5 beside NDCG@10, and the query latency p50/p95/p99, on the httpx
documentation questions (bench/datasets/httpx-docs) with the hash embedder, BM25 only (its dense ranks mean
nothing; the slow CLI test scores SciFact with the real model)."""

from __future__ import annotations

from pathlib import Path

from ragstream.evaluation.beir import METRICS, evaluate_retrieval, load_beir

DATASET = Path(__file__).resolve().parents[2] / "bench" / "datasets" / "httpx-docs"


def test_eval_reports_ndcg_at_5_beside_ndcg_at_10_and_p99(make_fast_index):
    result = evaluate_retrieval(make_fast_index(), load_beir(DATASET, "test"), modes=("bm25",), max_queries=10)
    scores = result.metrics["bm25"]
    assert METRICS[:2] == ("ndcg@5", "ndcg@10") and set(scores) == set(METRICS)
    assert 0.0 < scores["ndcg@5"] <= 1.0 and 0.0 < scores["ndcg@10"] <= 1.0
    assert scores["ndcg@5"] != scores["ndcg@10"] or scores["hit_rate@1"] == 1.0  # two cut-offs, not one copied
    latency = result.query_latency_ms["bm25"]
    assert set(latency) == {"p50", "p95", "p99"} and latency["p50"] <= latency["p95"] <= latency["p99"]
