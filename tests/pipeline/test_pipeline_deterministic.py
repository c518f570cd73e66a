"""The SuperPrompt pipeline with every LLM off, on a real index of the bundled samples (docs/pipeline.md)."""

from __future__ import annotations

import json
from itertools import pairwise

import pytest
from support.index_fixtures import SAMPLES

from ragstream import Ragstream, load_config
from ragstream.agents.prompts import A2_ENUMS
from ragstream.errors import (
    InvariantViolationError,
    NoRelevantContextError,
    NoRetrievalResultsError,
    StageOrderError,
    UnknownStageError,
)
from ragstream.pipeline import SuperPrompt
from ragstream.pipeline.invariants import check_state
from ragstream.pipeline.stages import STAGE_NAMES

CAPS = {"N0_QUERY_PIECES": 3, "N1_RETR_MAX_CANDIDATES": 12, "N2_RERANK_TOP_K": 6,
        "N3_FINAL_SELECTION_MAX": 3, "N4_RECENT_CONV_MAX_PAIRS": 2}
PROMPT = (
    "TASK: How do I set a timeout on a request? Which exception is raised when it expires?\n"
    "Kontext: I use httpx with an AsyncClient and a connection pool.\n"
    "Zweck: make a slow service fail fast.\n"
    "FORMAT: bullet list\n"
    "BUDGET: two hours"
)
CONVERSATION = [
    ("What is httpx?", "A Python HTTP client with sync and async APIs."),
    ("Does it support HTTP/2?", "Yes, with the http2 extra installed."),
    ("How do I stream a response?", "Use client.stream() as a context manager."),
    ("Can I set a timeout for the connect phase only?", "Yes: httpx.Timeout(10.0, connect=60.0)."),
]


@pytest.fixture(scope="module")
def rs(tmp_path_factory, hash_embedder):
    index = Ragstream(load_config(data_dir=tmp_path_factory.mktemp("pipeline"), pipeline=CAPS), embedder=hash_embedder)
    assert index.ingest([SAMPLES]).documents_failed == 0
    yield index
    index.close()


@pytest.fixture(scope="module")
def full(rs):
    """One full manual run, stage by stage, with every intermediate SuperPrompt kept."""
    states = [rs.new_prompt(PROMPT, conversation=CONVERSATION)]
    for _ in STAGE_NAMES:
        states.append(rs.run_stage(states[-1]))
    return states


def _fingerprint(sp: SuperPrompt) -> str:
    return json.dumps([sp.body, sp.views_by_stage, sp.final_selection_ids, sp.S_CTX_MD, sp.prompt_ready],
                      sort_keys=True, ensure_ascii=False)


def test_two_full_runs_are_byte_identical(rs, full):
    again = rs.run_pipeline(rs.new_prompt(PROMPT, conversation=CONVERSATION))
    assert _fingerprint(again) == _fingerprint(full[-1])
    assert again.model_dump_json() == full[-1].model_dump_json()


def test_stages_advance_in_order(full):
    assert [sp.stage for sp in full] == ["raw", "preprocessed", "a2", "retrieval", "reranked", "a3", "a4", "a5", "a5"]
    assert full[-1].history_of_stages == ["preprocessed", "a2", "retrieval", "reranked", "a3", "a4", "a5",
                                          "prompt_builder"]
    for before, after in pairwise(full):
        assert after.history_of_stages[:-1] == before.history_of_stages  # append-only


def test_unique_ids_and_no_chunk_mutated(full):
    after_retrieval = full[3]
    snapshot = [chunk.model_dump_json() for chunk in after_retrieval.base_context_chunks]
    ids = [chunk.chunk_id for chunk in full[-1].base_context_chunks]
    assert len(ids) == len(set(ids))
    assert [chunk.model_dump_json() for chunk in full[-1].base_context_chunks] == snapshot
    assert full[3].extras["retrieval"]["conversation_candidates"] == len(CONVERSATION), "conversation pairs compete"
    for view in full[-1].views_by_stage.values():
        assert len(view) == len(set(view)) and set(view) <= set(ids)


def test_every_cap_is_respected(full):
    sp = full[-1]
    assert len(sp.extras["retrieval"]["pieces"]) <= CAPS["N0_QUERY_PIECES"]
    assert len(sp.views_by_stage["retrieval"]) <= CAPS["N1_RETR_MAX_CANDIDATES"]
    assert len(sp.base_context_chunks) <= CAPS["N1_RETR_MAX_CANDIDATES"]
    assert sp.extras["reranker"]["candidates_scored"] <= CAPS["N2_RERANK_TOP_K"]
    assert len(sp.views_by_stage["reranked"]) <= CAPS["N2_RERANK_TOP_K"]
    assert 0 < len(sp.final_selection_ids) <= CAPS["N3_FINAL_SELECTION_MAX"]
    assert sp.extras["prompt_builder"]["conversation_pairs"] == CAPS["N4_RECENT_CONV_MAX_PAIRS"]
    assert sp.prompt_ready.count("**User:**") == CAPS["N4_RECENT_CONV_MAX_PAIRS"]
    assert CONVERSATION[0][0] not in sp.prompt_ready.split("## Recent Conversation")[1]


def test_views_narrow_stage_by_stage(full):
    views = full[-1].views_by_stage
    assert set(views["reranked"]) <= set(views["retrieval"][: CAPS["N2_RERANK_TOP_K"]])
    assert set(views["a3"]) <= set(views["reranked"])
    assert views["a4"] == full[-1].final_selection_ids and set(views["a4"]) <= set(views["a3"])
    assert full[5].final_selection_ids == views["a3"] and full[4].final_selection_ids == []


def test_without_llm_every_agent_records_its_deterministic_fallback(full):
    extras = full[-1].extras
    for key in ("a2", "a3", "a4", "format_enforcer"):
        assert extras[key]["mode"] == "deterministic"
        assert "no LLM configured" in extras[key]["reason"]
    assert "contradiction" in extras["a3"]["checks_skipped"]
    reranked = full[-1].stage_reports["reranked"]  # the packaged ONNX cross-encoder of a default install
    assert full[-1].rerank.backend == "cross_encoder" and not reranked.fallback and reranked.reason is None
    assert sorted(full[-1].views_by_stage["reranked"]) == sorted(full[-1].views_by_stage["retrieval"][: CAPS["N2_RERANK_TOP_K"]])
    reports = full[-1].stage_reports
    assert set(reports) == set(full[-1].history_of_stages)
    assert all(reports[key].mode == "deterministic" and not reports[key].fallback for key in ("a2", "a4", "a5"))
    assert extras["a0"]["semantic_used"] is False
    body = full[-1].body
    for name, allowed in A2_ENUMS.items():
        assert body[name] in allowed
    assert extras["a2_decisions"]["system"] == {"value": "technical_expert", "source": "rule", "keyword": "exception"}
    assert extras["format_enforcer"]["format_kind"] == "bullet_list"
    assert body["format"].startswith("Answer as a Markdown bullet list")


def test_prompt_ready_holds_every_block_in_order(full):
    sp = full[-1]
    text = sp.prompt_ready
    positions = [text.index(heading) for heading in
                 ("## System", "## Prompt", "## S_CTX", "## Attachments", "## Recent Conversation")]
    assert positions == sorted(positions)
    assert text.count("SOURCE: ") == len(sp.final_selection_ids) == text.count("SPAN: ")
    for chunk in sp.chunks(sp.final_selection_ids):
        assert chunk.text in text  # raw, unedited excerpts
    assert sp.S_CTX_MD in text and "[1]" in sp.S_CTX_MD and "Sources:" in sp.S_CTX_MD
    attachments = sp.Attachments_MD.split("\n\n", 1)[1]
    assert attachments.startswith("```")


def test_best_last_order_moves_the_attachments_but_keeps_their_numbers(tmp_path, hash_embedder, full):
    config = load_config(data_dir=tmp_path, pipeline=CAPS, answer={"attachment_order": "best_last"})
    with Ragstream(config, embedder=hash_embedder) as index:
        assert index.ingest([SAMPLES]).documents_failed == 0
        sp = index.run_pipeline(index.new_prompt(PROMPT, conversation=CONVERSATION))
    best_first = full[-1]
    assert sp.final_selection_ids == best_first.final_selection_ids and len(sp.final_selection_ids) > 1
    chunks = sp.chunks(sp.final_selection_ids)
    placed = [sp.Attachments_MD.index(chunk.text) for chunk in chunks]
    assert placed == sorted(placed, reverse=True)  # [1], the best, is written last
    for number, chunk in enumerate(chunks, start=1):
        block = sp.Attachments_MD[sp.Attachments_MD.index(f"[{number}] SOURCE: "):]
        assert block.split("\n---\n", 1)[1].startswith(chunk.text)  # [n] still holds final_selection_ids[n-1]
    assert sorted(sp.Attachments_MD.split("\n\n")) == sorted(best_first.Attachments_MD.split("\n\n"))
    user = sp.messages[1].content
    assert user.index("## Attachments") < user.index("[1] SOURCE: ") < user.rindex(PROMPT.splitlines()[0][6:20])


def test_json_round_trip_is_lossless(full):
    for sp in full:
        text = sp.model_dump_json()
        back = SuperPrompt.model_validate_json(text)
        assert back == sp and back.model_dump_json() == text


def test_manual_order_is_enforced_and_failures_leave_the_input_unchanged(rs, full):
    fresh = rs.new_prompt(PROMPT)
    with pytest.raises(StageOrderError, match="needs A2_PromptShaper"):
        rs.run_stage(full[1], "Retrieval")
    with pytest.raises(StageOrderError):
        rs.run_stage(fresh, "ReRanker")
    with pytest.raises(UnknownStageError):
        rs.run_stage(fresh, "A1_Nothing")
    with pytest.raises(StageOrderError, match="already ran"):
        rs.run_stage(full[-1])
    assert rs.run_stage(fresh, "a0").stage == "preprocessed"
    assert fresh.stage == "raw" and fresh.body == {}
    assert rs.run_pipeline(full[3], until="a3").stage == "a3"


@pytest.mark.parametrize(("tamper", "invariant"), [
    (lambda sp: sp.base_context_chunks.append(sp.base_context_chunks[0]), "I1_unique_chunk_ids"),
    (lambda sp: sp.views_by_stage["reranked"].append("no-such-id"), "I2_views"),
    (lambda sp: sp.final_selection_ids.append(sp.views_by_stage["retrieval"][0]), "I3_final_selection"),
    (lambda sp: setattr(sp, "S_CTX_MD", "## S_CTX\n\ninvented"), "I5_rendered_blocks"),
    (lambda sp: setattr(sp, "stage", "a4"), "stage_order"),
])
def test_broken_invariants_are_named(rs, full, tamper, invariant):
    broken = full[4].model_copy(deep=True)  # after ReRanker
    tamper(broken)
    with pytest.raises(InvariantViolationError) as caught:
        rs.run_stage(broken)
    assert caught.value.invariant == invariant and caught.value.code == "invariant_violation"


def test_caps_breach_is_caught(rs, full):
    tight = rs.config.pipeline.model_copy(update={"N1_RETR_MAX_CANDIDATES": 1})
    with pytest.raises(InvariantViolationError) as caught:
        check_state(full[3], tight)
    assert caught.value.invariant == "caps"


def test_no_retrieval_results_is_a_typed_error(make_index):
    empty = make_index()
    with pytest.raises(NoRetrievalResultsError) as caught:
        empty.run_pipeline("How do I set a timeout?")
    assert caught.value.code == "no_retrieval_results"


def test_gate_that_keeps_nothing_raises_instead_of_half_filling(tmp_path, embedder):
    strict = load_config(data_dir=tmp_path / "strict", pipeline=CAPS, agents={"a3": {"offtopic_cosine": 0.99}})
    with Ragstream(strict, embedder=embedder) as index:
        index.ingest([SAMPLES / "httpx-timeouts.md"])
        with pytest.raises(NoRelevantContextError):
            index.run_pipeline("How do I set a timeout?")


def test_the_retrieval_ranking_is_the_plain_hybrid_ranking_for_a_one_sentence_question(rs):
    question = "How do I set a timeout on a request?"
    sp = rs.run_pipeline(question, until="ReRanker")
    hybrid = [hit.chunk.chunk_id for hit in rs.search(question, mode="hybrid", top_k=CAPS["N2_RERANK_TOP_K"]).hits]
    assert sp.query_pieces == [question]
    assert sp.views_by_stage["retrieval"][: len(hybrid)] == hybrid
    assert sorted(sp.views_by_stage["reranked"]) == sorted(hybrid)  # the cross-encoder re-orders the same candidates
