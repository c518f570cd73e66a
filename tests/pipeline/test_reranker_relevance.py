"""The ReRanker's 0..1 relevance per scored chunk (the sigmoid of the cross-encoder's logit; a bi-encoder's cosine
clipped to 0..1) and the min/max/mean of the scores it saw, in ``sp.rerank`` (the stage's typed output, which the
pipeline inspector reads)."""

from __future__ import annotations

import math

import pytest
from support.index_fixtures import SAMPLES

from ragstream.pipeline.super_prompt import SuperPrompt
from ragstream.retrieval.rerank import relevance, summary

CAPS = {"N0_QUERY_PIECES": 2, "N1_RETR_MAX_CANDIDATES": 10, "N2_RERANK_TOP_K": 8, "N3_FINAL_SELECTION_MAX": 2}
QUESTION = "How do I set a timeout on a request?"
DOCS = [SAMPLES / "httpx-timeouts.md", SAMPLES / "httpx-quickstart.md"]


def _check_distribution(sp: SuperPrompt) -> None:
    details = sp.rerank
    raw = list(details.cross_scores.values())
    assert details.score_summary.count == len(raw) == details.candidates_scored > 1
    assert details.score_summary.min == pytest.approx(min(raw), abs=1e-6)
    assert details.score_summary.max == pytest.approx(max(raw), abs=1e-6)
    assert details.score_summary.mean == pytest.approx(sum(raw) / len(raw), abs=1e-6)
    values = list(details.relevance.values())
    assert set(details.relevance) == set(details.cross_scores) and all(0.0 <= v <= 1.0 for v in values)
    assert details.relevance_summary.min <= details.relevance_summary.mean <= details.relevance_summary.max
    # the relevance keeps the model's order
    by_raw = sorted(details.cross_scores, key=details.cross_scores.__getitem__)
    assert [details.relevance[c] for c in by_raw] == sorted(values)
    # and it survives the SuperPrompt's JSON round trip (the pipeline page reads it)
    assert SuperPrompt.model_validate_json(sp.model_dump_json()).rerank == details


def test_cross_encoder_relevance_is_the_sigmoid_of_its_logit(make_fast_index):
    rs = make_fast_index(pipeline=CAPS, reranker={"backend": "onnx", "top_n": 6, "min_logit": -100})
    rs.ingest(DOCS)
    sp = rs.run_pipeline(QUESTION, until="ReRanker")
    assert sp.rerank.backend == "cross_encoder"
    for chunk_id, logit in sp.rerank.cross_scores.items():
        assert sp.rerank.relevance[chunk_id] == pytest.approx(1 / (1 + math.exp(-logit)), abs=1e-5)
    _check_distribution(sp)
    best = max(sp.rerank.relevance, key=sp.rerank.relevance.__getitem__)
    assert "timeout" in sp.chunk_map()[best].text.lower()


def test_bi_encoder_relevance_is_its_cosine_clipped(make_fast_index):
    rs = make_fast_index(pipeline=CAPS, reranker={"backend": "bi_encoder", "top_n": 6, "skip_margin": 1.0})
    rs.ingest(DOCS)
    sp = rs.run_pipeline(QUESTION, until="ReRanker")
    assert sp.rerank.backend == "bi_encoder"
    for chunk_id, cosine in sp.rerank.cross_scores.items():
        assert sp.rerank.relevance[chunk_id] == pytest.approx(min(1.0, max(0.0, cosine)), abs=1e-5)
    _check_distribution(sp)


def test_relevance_and_summary_bounds():
    assert relevance(0.0, "cross_encoder") == 0.5
    assert relevance(1e6, "cross_encoder") == 1.0 and relevance(-1e6, "cross_encoder") < 1e-20  # no overflow
    assert relevance(-0.2, "bi_encoder") == 0.0 and relevance(0.7, "bi_encoder") == 0.7
    assert summary([]) == {"count": 0, "min": 0.0, "max": 0.0, "mean": 0.0}
    assert summary([1.0, -1.0, 3.0]) == {"count": 3, "min": -1.0, "max": 3.0, "mean": 1.0}
