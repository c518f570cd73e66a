"""The learned ranker (docs/ranking.md): its page features on a real index, the shipped model and its card,
and ranking through the ReRanker stage with it (and back to the blend when it cannot load)."""

from __future__ import annotations

import math

import pytest
from support.index_fixtures import SAMPLES

from ragstream.config import RerankerConfig
from ragstream.errors import ModelUnavailableError
from ragstream.pipeline.stages import RERANKER, RETRIEVAL
from ragstream.pipeline.super_prompt import SuperPrompt
from ragstream.retrieval.learned_ranker import SHIPPED_MODEL, load_ranker, read_card
from ragstream.retrieval.ranker_features import FEATURES, candidates_of, page_key, page_rows

CAPS = {"N0_QUERY_PIECES": 2, "N1_RETR_MAX_CANDIDATES": 20, "N2_RERANK_TOP_K": 12, "N3_FINAL_SELECTION_MAX": 2}
QUESTION = "How do I set a timeout on a request?"
DOCS = [SAMPLES / "httpx-timeouts.md", SAMPLES / "httpx-quickstart.md", SAMPLES / "httpx-exceptions.md"]


def _column(rows, name: str) -> list[float]:
    return rows.matrix[:, FEATURES.index(name)].tolist()


def _candidates(sp: SuperPrompt, logits: list[float]):
    view = sp.views_by_stage[RETRIEVAL.entry]
    retrievers = {cid: (s.dense, s.bm25) for cid, s in sp.retriever_scores.items()}
    return candidates_of(sp.chunks(view), sp.scores_by_stage[RETRIEVAL.entry], retrievers, logits)


def test_retrieval_keeps_each_retrievers_score_of_the_whole_query(make_fast_index):
    rs = make_fast_index(pipeline=CAPS)
    rs.ingest(DOCS)
    sp = rs.run_pipeline(QUESTION, until="Retrieval")
    hits = {hit.chunk.chunk_id: hit for hit in rs.search(QUESTION, mode="hybrid", top_k=CAPS["N1_RETR_MAX_CANDIDATES"]).hits}
    assert sp.retriever_scores and set(sp.retriever_scores) <= set(sp.views_by_stage[RETRIEVAL.entry])
    for chunk_id, scores in sp.retriever_scores.items():
        assert (scores.dense, scores.bm25) == (hits[chunk_id].dense_score, hits[chunk_id].bm25_score)
    assert SuperPrompt.model_validate_json(sp.model_dump_json()).retriever_scores == sp.retriever_scores


def test_page_features_group_the_candidates_by_page(make_fast_index):
    rs = make_fast_index(pipeline=CAPS)
    rs.ingest(DOCS)
    sp = rs.run_pipeline(QUESTION, until="Retrieval")
    head = 4
    cands = _candidates(sp, [3.0, -1.0, 0.5, 1.0])
    rows = page_rows(QUESTION, cands, RerankerConfig(min_logit=2.0, weight=0.4))
    assert rows.matrix.shape == (len(rows.pages), len(FEATURES)) and 1 < len(rows.pages) <= len(DOCS)
    assert sorted(i for members in rows.members for i in members) == list(range(len(cands)))
    for page, members in zip(rows.pages, rows.members, strict=True):
        assert {page_key(cands[i].chunk) for i in members} == {page}
    assert _column(rows, "fused_page_rank") == [float(i) for i in range(len(rows.pages))]
    assert _column(rows, "fused_best")[0] == 1.0 and _column(rows, "fused_chunk_rank")[0] == 0.0
    assert sum(_column(rows, "chunks_candidates")) == len(cands)
    assert sum(_column(rows, "chunks_head")) == head
    assert sum(_column(rows, "ce_scored")) == head
    assert max(v for v in _column(rows, "ce_best") if not math.isnan(v)) == 3.0
    assert min(v for v in _column(rows, "ce_gap") if not math.isnan(v)) == 0.0
    unscored = [p for p, members in enumerate(rows.members) if min(members) >= head]
    assert all(math.isnan(_column(rows, "ce_best")[p]) for p in unscored)
    timeouts = rows.pages.index(next(page_key(c.chunk) for c in cands if c.chunk.metadata.source.endswith("timeouts.md")))
    assert _column(rows, "path_match")[timeouts] > 0  # "timeout" of the question meets the file's name
    assert _column(rows, "path_match")[timeouts] == max(_column(rows, "path_match"))
    assert all(0.0 <= v <= 1.0 for v in _column(rows, "text_match"))
    dense = [c.dense for c in cands if c.dense is not None]
    assert dense and max(v for v in _column(rows, "dense_best") if not math.isnan(v)) == max(dense)


def test_the_shipped_model_matches_its_card():
    card = read_card()
    ranker = load_ranker()
    assert ranker.path == SHIPPED_MODEL and ranker.features == FEATURES
    assert card["features"] == list(FEATURES) == ranker.booster.feature_name()
    assert card["model"] == SHIPPED_MODEL.name and card["sets"] and ranker.base_scale == card["base_scale"] > 0


def test_a_model_that_is_not_a_ranker_is_refused_with_the_reason(tmp_path):
    with pytest.raises(ModelUnavailableError, match="cannot be read"):
        load_ranker(tmp_path / "absent.txt")
    other = tmp_path / "other.txt"
    other.write_text(SHIPPED_MODEL.read_text().replace("feature_names=blend_best", "feature_names=something_else"))
    with pytest.raises(ModelUnavailableError, match="train it again"):
        load_ranker(other)
    cardless = tmp_path / "cardless.txt"
    cardless.write_text(SHIPPED_MODEL.read_text())
    with pytest.raises(ModelUnavailableError, match="card"):
        load_ranker(cardless)


def test_the_reranker_stage_ranks_pages_with_the_shipped_model(make_fast_index):
    rs = make_fast_index(pipeline=CAPS, reranker={"backend": "onnx", "ranking": "learned"})
    rs.ingest(DOCS)
    sp = rs.run_pipeline(QUESTION, until="ReRanker")
    report = sp.stage_reports[RERANKER.entry]
    assert sp.rerank.ranking == "learned" and not report.fallback and SHIPPED_MODEL.name in (report.model or "")
    view, scores = sp.views_by_stage[RERANKER.entry], sp.scores_by_stage[RERANKER.entry]
    assert sorted(view) == sorted(sp.views_by_stage[RETRIEVAL.entry][: CAPS["N2_RERANK_TOP_K"]])
    pages = [page_key(chunk) for chunk in sp.chunks(view)]
    assert len(list(dict.fromkeys(pages))) == len([p for i, p in enumerate(pages) if i == 0 or pages[i - 1] != p])
    assert scores == sorted(scores, reverse=True) and scores[0] == 1.0 and min(scores) >= 0.0
    assert len(sp.rerank.cross_scores) == min(len(view), rs.config.reranker.top_n)
    assert sp.chunk_map()[view[0]].metadata.source.endswith("httpx-timeouts.md")


def test_an_unreadable_model_falls_back_to_the_blend_and_says_why(make_fast_index, tmp_path):
    broken = tmp_path / "broken.txt"
    broken.write_text("not a model")
    rs = make_fast_index(pipeline=CAPS, reranker={"backend": "onnx", "ranking": "learned", "ranker_model": str(broken)})
    rs.ingest(DOCS)
    sp = rs.run_pipeline(QUESTION, until="ReRanker")
    report = sp.stage_reports[RERANKER.entry]
    assert sp.rerank.ranking == "blend" and report.fallback and "learned ranker" in (report.reason or "")
    blend = make_fast_index(data_dir=tmp_path / "blend", pipeline=CAPS, reranker={"backend": "onnx"})
    blend.ingest(DOCS)
    assert blend.run_pipeline(QUESTION, until="ReRanker").views_by_stage[RERANKER.entry] == sp.views_by_stage[RERANKER.entry]
