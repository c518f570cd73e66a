"""The coverage rule of the final selection (pipeline/coverage.py): a pure reordering of ranked candidates."""

from __future__ import annotations

import pytest
from support.index_fixtures import SAMPLES

from ragstream.pipeline.coverage import cover_files

Candidate = tuple[str, str]
"""(chunk, file)"""


def files(ranked: list[Candidate], scores: list[float], margin: float) -> list[str]:
    return [chunk for chunk, _ in cover_files(ranked, scores, lambda c: c[1], margin)]


RANKED = [("a1", "A"), ("a2", "A"), ("b1", "B"), ("a3", "A"), ("c1", "C")]
SCORES = [0.90, 0.85, 0.80, 0.79, 0.40]


def test_off_keeps_the_order():
    assert files(RANKED, SCORES, 0.0) == ["a1", "a2", "b1", "a3", "c1"]
    assert files(RANKED, SCORES, -1.0) == ["a1", "a2", "b1", "a3", "c1"]


def test_a_close_candidate_of_a_new_file_comes_before_a_second_chunk_of_a_covered_one():
    assert files(RANKED, SCORES, 0.05) == ["a1", "b1", "a2", "a3", "c1"]


def test_outside_the_margin_the_order_stands():
    assert files(RANKED, SCORES, 0.04) == ["a1", "a2", "b1", "a3", "c1"]


def test_a_wide_margin_covers_every_file_first_best_first():
    assert files(RANKED, SCORES, 1.0) == ["a1", "b1", "c1", "a2", "a3"]


def test_the_margin_is_measured_from_the_candidate_passed_over():
    # a2 (0.85) is passed over for b1 (0.80); then a3 (0.79) is next after a2 and c1 (0.40) is far below both
    assert files(RANKED, SCORES, 0.1) == ["a1", "b1", "a2", "a3", "c1"]


def test_among_fresh_files_the_best_scored_wins_and_ties_keep_rank():
    ranked = [("a1", "A"), ("a2", "A"), ("c1", "C"), ("b1", "B")]
    assert files(ranked, [0.9, 0.8, 0.75, 0.78], 0.1) == ["a1", "b1", "c1", "a2"]
    assert files(ranked, [0.9, 0.8, 0.78, 0.78], 0.1) == ["a1", "c1", "b1", "a2"]


def test_nothing_is_dropped_or_duplicated():
    ranked = [(f"x{i}", "ABC"[i % 3]) for i in range(30)]
    scores = [1.0 - i / 40 for i in range(30)]
    for margin in (0.0, 0.01, 0.1, 1.0):
        ordered = files(ranked, scores, margin)
        assert sorted(ordered) == sorted(chunk for chunk, _ in ranked)


def test_one_file_or_no_candidates():
    assert files([("a1", "A"), ("a2", "A")], [0.9, 0.1], 1.0) == ["a1", "a2"]
    assert files([], [], 1.0) == []


def test_scores_must_match_the_candidates():
    with pytest.raises(ValueError, match="2 candidates but 1 scores"):
        cover_files([("a1", "A"), ("b1", "B")], [0.9], lambda c: c[1], 0.1)


QUESTION = "How do I set a timeout on a request?"


def test_a4_selects_across_documents_within_the_margin(make_fast_index):
    """The bundled samples: the timeouts page has the three best chunks; a wide margin lets two other pages in."""
    rs = make_fast_index()
    rs.ingest([SAMPLES])
    gated = rs.run_pipeline(QUESTION, until="A3_NLI_Gate")

    def selection(margin: float) -> list[str]:
        rs.config.pipeline.coverage_margin = margin
        final = rs.run_stage(gated, "A4_Condenser")
        return [chunk.metadata.document_id for chunk in final.chunks(final.final_selection_ids)]

    off, wide = selection(0.0), selection(1.0)
    assert len(set(off)) == 1 and len(off) == 3  # the default: three chunks of the timeouts page
    assert len(set(wide)) == 3 and wide[0] == off[0]
    scores = dict(zip(gated.views_by_stage["reranked"], gated.scores_by_stage["reranked"], strict=True))
    candidates = gated.chunks(gated.final_selection_ids)
    expected = cover_files(candidates, [scores[c.chunk_id] for c in candidates], lambda c: c.metadata.document_id, 1.0)
    assert wide == [chunk.metadata.document_id for chunk in expected[:3]]
    assert rs.ask(QUESTION).metadata["context_chunk_ids"] == [c.chunk_id for c in expected[:3]]  # what the answer reads
