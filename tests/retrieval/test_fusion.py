"""The fusion functions of hybrid search: pure, no store, no model."""

from __future__ import annotations

import pytest

from ragstream.config import RetrievalConfig
from ragstream.retrieval.fusion import (
    alpha_blend,
    contributions,
    dense_ranks,
    fuse,
    min_max_normalise,
    neighbourhoods,
    reciprocal_rank_fusion,
)

# Document A: a0 (the title chunk, strong on BM25), a1 (the finding, strong on dense), a2, a3 (weak).
# Document B: b0, middling on both retrievers.
DENSE = {"a1": 0.9, "b0": 0.7, "a0": 0.3, "a2": 0.2, "a3": 0.1}
BM25 = {"a0": 11.0, "b0": 8.0, "a1": 2.0, "a2": 1.5, "a3": 1.0}
DOCUMENT_OF = {"a0": "A", "a1": "A", "a2": "A", "a3": "A", "b0": "B"}
POSITION_OF = {"a0": 0, "a1": 1, "a2": 2, "a3": 3, "b0": 0}


def ids(ranked: list[tuple[str, float]]) -> list[str]:
    return [chunk for chunk, _ in ranked]


def test_reciprocal_rank_fusion_sums_weighted_reciprocal_ranks():
    fused = reciprocal_rank_fusion([{"x": 1, "y": 2}, {"y": 1, "z": 2}], [1.0, 2.0], k=10)
    assert fused == pytest.approx({"x": 1 / 11, "y": 1 / 12 + 2 / 11, "z": 2 / 12})


def test_dense_ranks_share_a_rank_on_ties():
    assert dense_ranks({"a": 3.0, "b": 3.0, "c": 1.0, "d": 2.0}) == {"a": 1, "b": 1, "d": 2, "c": 3}


def test_min_max_normalise_maps_to_unit_range_and_constant_to_one():
    assert min_max_normalise({"x": 2.0, "y": 4.0, "z": 3.0}) == {"x": 0.0, "y": 1.0, "z": 0.5}
    assert min_max_normalise({"x": 5.0, "y": 5.0}) == {"x": 1.0, "y": 1.0}
    assert min_max_normalise({}) == {}


def test_alpha_blend_counts_a_missing_score_as_zero():
    fused = alpha_blend({"x": 1.0, "y": 0.0}, {"y": 3.0, "z": 1.0}, alpha=0.25)
    assert fused == pytest.approx({"x": 0.25, "y": 0.75, "z": 0.0})


def test_contributions_sum_to_the_chunk_level_fusion():
    dense_part, bm25_part = contributions(DENSE, BM25, method="alpha", alpha=0.4, rrf_k=60, weights=(1.0, 1.0))
    blend = alpha_blend(DENSE, BM25, 0.4)
    assert {c: dense_part.get(c, 0) + bm25_part.get(c, 0) for c in blend} == pytest.approx(blend)
    dense_part, bm25_part = contributions(DENSE, BM25, method="rrf", alpha=0.4, rrf_k=10, weights=(2.0, 1.0))
    assert dense_part["a1"] == pytest.approx(2 / 11) and bm25_part["a0"] == pytest.approx(1 / 11)


def test_neighbourhoods_stay_inside_a_document_and_the_window():
    near = neighbourhoods(sorted(DOCUMENT_OF), DOCUMENT_OF, POSITION_OF, window=1)
    assert near["a0"] == ("a0", "a1") and near["a2"] == ("a1", "a2", "a3") and near["b0"] == ("b0",)
    whole = neighbourhoods(sorted(DOCUMENT_OF), DOCUMENT_OF, POSITION_OF, window=None)
    assert set(whole["a3"]) == {"a0", "a1", "a2", "a3"}


def test_neighbourhoods_skip_positions_that_are_not_candidates():
    near = neighbourhoods(["a0", "a2"], DOCUMENT_OF, POSITION_OF, window=1)
    assert near == {"a0": ("a0",), "a2": ("a2",)}


def test_chunk_level_fuses_each_chunks_own_scores():
    ranked = fuse(DENSE, BM25, DOCUMENT_OF, POSITION_OF, level="chunk", alpha=0.5)
    assert dict(ranked) == pytest.approx(alpha_blend(DENSE, BM25, 0.5))
    assert ids(ranked)[0] == "b0"  # middling on both beats one strong retriever each


def test_neighbours_pool_evidence_split_by_a_chunk_boundary():
    """a0 matches BM25, a1 matches dense: the better of the two takes both and outranks b0."""
    ranked = fuse(DENSE, BM25, DOCUMENT_OF, POSITION_OF, level="neighbours", window=1, alpha=0.5)
    scores, own = dict(ranked), alpha_blend(DENSE, BM25, 0.5)
    assert ids(ranked)[0] in {"a0", "a1"}
    assert scores[ids(ranked)[0]] == pytest.approx(1.0)  # best dense (a1) + best BM25 (a0), both normalised to 1
    assert ids(ranked)[1] == "b0"
    for chunk in ("a2", "a3"):  # not the best of their neighbourhoods: their own scores, not lifted
        assert scores[chunk] == pytest.approx(own[chunk])


def test_only_the_best_chunk_of_a_neighbourhood_is_lifted():
    ranked = fuse(DENSE, BM25, DOCUMENT_OF, POSITION_OF, level="neighbours", window=1, alpha=0.5)
    own = alpha_blend(DENSE, BM25, 0.5)
    lifted = [chunk for chunk, score in ranked if score > own[chunk] + 1e-12]
    assert len(lifted) == 1


def test_neighbours_out_of_the_window_do_not_pool():
    dense = {"a0": 0.1, "a3": 0.9, "b0": 0.5}
    bm25 = {"a0": 9.0, "a3": 1.0, "b0": 5.0}
    apart = dict(fuse(dense, bm25, DOCUMENT_OF, POSITION_OF, level="neighbours", window=1, alpha=0.5))
    assert apart == pytest.approx(alpha_blend(dense, bm25, 0.5))
    whole = dict(fuse(dense, bm25, DOCUMENT_OF, POSITION_OF, level="document", alpha=0.5))
    assert max(whole["a0"], whole["a3"]) == pytest.approx(1.0)


def test_document_level_needs_no_positions_and_neighbours_do():
    assert ids(fuse(DENSE, BM25, DOCUMENT_OF, level="document"))[1] == "b0"
    with pytest.raises(ValueError):
        fuse(DENSE, BM25, DOCUMENT_OF, level="neighbours")


@pytest.mark.parametrize("method", ["alpha", "rrf"])
@pytest.mark.parametrize("level", ["chunk", "neighbours", "document"])
def test_scores_never_increase_down_the_list_and_every_candidate_is_kept(method, level):
    dense = {f"c{i}": 1.0 - i / 20 for i in range(12)}
    bm25 = {f"c{i}": float((i * 7) % 11) for i in range(4, 16)}
    document_of = {f"c{i}": f"d{i // 5}" for i in range(16)}
    position_of = {f"c{i}": i % 5 for i in range(16)}
    settings = {"method": method, "level": level, "window": 1, "alpha": 0.4, "rrf_k": 10, "weights": (1.0, 2.0)}
    ranked = fuse(dense, bm25, document_of, position_of, **settings)
    scores = [score for _, score in ranked]
    assert scores == sorted(scores, reverse=True)
    assert set(ids(ranked)) == set(dense) | set(bm25)
    assert fuse(dense, bm25, document_of, position_of, **settings) == ranked


def test_one_retriever_empty_still_ranks_the_other():
    ranked = fuse({}, BM25, DOCUMENT_OF, POSITION_OF)
    assert ids(ranked) == ["a0", "b0", "a1", "a2", "a3"]
    assert fuse({}, {}, {}, {}) == []


def test_alpha_scores_stay_in_the_unit_range():
    for level in ("chunk", "neighbours", "document"):
        ranked = fuse(DENSE, BM25, DOCUMENT_OF, POSITION_OF, level=level, alpha=0.7)
        assert all(0.0 <= score <= 1.0 + 1e-12 for _, score in ranked)


def test_the_default_hybrid_is_neighbour_pooled_alpha_fusion():
    config = RetrievalConfig()
    assert (config.fusion, config.fusion_level, config.fusion_window) == ("alpha", "neighbours", 1)


def test_dbsf_normalise_maps_three_deviations_to_the_unit_range_and_clips():
    from ragstream.retrieval.fusion import dbsf_normalise

    scores = {"x": 1.0, "y": 2.0, "z": 3.0}
    mapped = dbsf_normalise(scores, width=1.0)  # mean 2, std sqrt(2/3): 2 +- 0.816
    assert mapped["y"] == pytest.approx(0.5)
    assert mapped["x"] == 0.0 and mapped["z"] == 1.0  # beyond one deviation: clipped
    assert dbsf_normalise({"a": 5.0, "b": 5.0}) == {"a": 1.0, "b": 1.0}
    assert dbsf_normalise({}) == {}


def test_fuse_with_dbsf_keeps_scores_in_the_unit_range():
    ranked = fuse(DENSE, BM25, DOCUMENT_OF, POSITION_OF, normalisation="dbsf")
    assert set(ids(ranked)) == set(DENSE) | set(BM25)
    assert all(0.0 <= score <= 1.0 + 1e-12 for _, score in ranked)
