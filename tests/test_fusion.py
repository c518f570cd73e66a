"""The fusion functions of hybrid search: pure, no store, no model."""

from __future__ import annotations

import pytest

from ragstream.config import RetrievalConfig
from ragstream.retrieval.fusion import (
    alpha_blend,
    best_per_group,
    fuse,
    min_max_normalise,
    ranked_ids,
    reciprocal_rank_fusion,
)

# Two documents: A has chunks a1 (strong on BM25) and a2 (strong on dense); B has b1, middling on both.
DENSE = {"a2": 0.9, "b1": 0.6, "a1": 0.1}
BM25 = {"a1": 12.0, "b1": 7.0, "a2": 2.0}
DOCUMENT_OF = {"a1": "A", "a2": "A", "b1": "B"}


def test_reciprocal_rank_fusion_sums_weighted_reciprocal_ranks():
    fused = reciprocal_rank_fusion([["x", "y"], ["y", "z"]], [1.0, 2.0], k=10)
    assert fused == pytest.approx({"x": 1 / 11, "y": 1 / 12 + 2 / 11, "z": 2 / 12})


def test_min_max_normalise_maps_to_unit_range_and_constant_to_one():
    assert min_max_normalise({"x": 2.0, "y": 4.0, "z": 3.0}) == {"x": 0.0, "y": 1.0, "z": 0.5}
    assert min_max_normalise({"x": 5.0, "y": 5.0}) == {"x": 1.0, "y": 1.0}
    assert min_max_normalise({}) == {}


def test_alpha_blend_counts_a_missing_score_as_zero():
    fused = alpha_blend({"x": 1.0, "y": 0.0}, {"y": 3.0, "z": 1.0}, alpha=0.25)
    assert fused == pytest.approx({"x": 0.25, "y": 0.75, "z": 0.0})


def test_best_per_group_keeps_each_documents_best_chunk():
    assert best_per_group(DENSE, DOCUMENT_OF) == {"A": 0.9, "B": 0.6}
    assert best_per_group(BM25, DOCUMENT_OF) == {"A": 12.0, "B": 7.0}


def test_ranked_ids_orders_by_score_then_id():
    assert ranked_ids({"b": 1.0, "a": 1.0, "c": 2.0}) == ["c", "a", "b"]


def test_chunk_level_alpha_blends_each_chunks_own_scores():
    fused = dict(fuse(DENSE, BM25, DOCUMENT_OF, method="alpha", level="chunk", alpha=0.5))
    assert fused == pytest.approx({"a2": 0.5, "b1": 0.5 * 0.625 + 0.5 * 0.5, "a1": 0.5})


def test_document_level_gives_every_chunk_its_documents_fused_score():
    """A's best dense chunk (a2) and best BM25 chunk (a1) both count: A is first on both retrievers."""
    ranked = fuse(DENSE, BM25, DOCUMENT_OF, method="alpha", level="document", alpha=0.5)
    assert [chunk for chunk, _ in ranked] == ["a1", "a2", "b1"]  # a1, a2 tie at chunk level too: by id
    scores = dict(ranked)
    assert scores["a1"] == scores["a2"] == pytest.approx(1.0)
    assert scores["b1"] == pytest.approx(0.0)


def test_document_level_orders_chunks_inside_a_document_by_their_chunk_fusion():
    dense = {"a1": 0.9, "a2": 0.8, "b1": 0.5}
    bm25 = {"a1": 5.0, "a2": 1.0, "b1": 3.0}
    ranked = fuse(dense, bm25, DOCUMENT_OF, method="alpha", level="document", alpha=0.5)
    assert [chunk for chunk, _ in ranked] == ["a1", "a2", "b1"]


def test_document_level_rrf_ranks_documents_by_their_best_chunk():
    ranked = fuse(DENSE, BM25, DOCUMENT_OF, method="rrf", level="document", rrf_k=60)
    scores = dict(ranked)
    assert scores["a1"] == scores["a2"] == pytest.approx(2 / 61)
    assert scores["b1"] == pytest.approx(2 / 62)
    assert [chunk for chunk, _ in ranked][-1] == "b1"


@pytest.mark.parametrize("method", ["alpha", "rrf"])
@pytest.mark.parametrize("level", ["chunk", "document"])
def test_scores_never_increase_down_the_list_and_every_candidate_is_kept(method, level):
    dense = {f"c{i}": 1.0 - i / 20 for i in range(12)}
    bm25 = {f"c{i}": float((i * 7) % 11) for i in range(4, 16)}
    document_of = {f"c{i}": f"d{i // 3}" for i in range(16)}
    ranked = fuse(dense, bm25, document_of, method=method, level=level, alpha=0.4, rrf_k=10, weights=(1.0, 2.0))
    scores = [score for _, score in ranked]
    assert scores == sorted(scores, reverse=True)
    assert {chunk for chunk, _ in ranked} == set(dense) | set(bm25)
    assert fuse(dense, bm25, document_of, method=method, level=level, alpha=0.4, rrf_k=10, weights=(1.0, 2.0)) == ranked


def test_one_retriever_empty_still_ranks_the_other():
    ranked = fuse({}, BM25, DOCUMENT_OF, method="alpha", level="document", alpha=0.5)
    assert [chunk for chunk, _ in ranked][-1] == "b1" and len(ranked) == 3
    assert fuse({}, {}, {}, method="alpha", level="document", alpha=0.5) == []


def test_alpha_scores_stay_in_the_unit_range():
    for level in ("chunk", "document"):
        assert all(0.0 <= score <= 1.0 for _, score in fuse(DENSE, BM25, DOCUMENT_OF, level=level, alpha=0.7))


def test_the_default_hybrid_is_document_level_alpha_fusion():
    config = RetrievalConfig()
    assert (config.fusion, config.fusion_level) == ("alpha", "document")
