"""The facade's pipeline (api_pipeline.py): selected text on a new SuperPrompt and the Answer step without an
LLM (the extractive answer over the attachments Prompt_Builder numbered), on a real index (hash embedder)."""

from __future__ import annotations

import pytest

from ragstream.errors import InvalidQueryError, InvalidUnicodeError, PromptNotBuiltError

QUESTION = "How long does the client wait for a response?"
PAGE = ("# Timeouts\n\nThe client waits five seconds for a response before it raises a timeout error. "
        "You can change the timeout on every request or on the client.\n")
SELECTED = "raises a timeout error"
MAX_SELECTED = 100


@pytest.fixture
def rs(make_fast_index, tmp_path):
    index = make_fast_index(answer={"max_selected_text_chars": MAX_SELECTED})
    page = tmp_path / "timeouts.md"
    page.write_text(PAGE)
    index.ingest([page])
    return index


def test_extractive_answer_step_reads_the_built_prompt(rs) -> None:
    sp = rs.run_pipeline(rs.new_prompt(QUESTION, selected_text=SELECTED))
    assert f"### Selected text\n```text\n{SELECTED}\n```" in sp.prompt_ready
    before = sp.model_dump()
    events = list(rs.stream_prompt_answer(sp))
    assert sp.model_dump() == before  # the SuperPrompt is not changed: the step can run again
    done = events[-1]
    assert done.type == "done" and done.data["mode"] == "extractive"
    text = "".join(event.data["token"] for event in events if event.type == "token")
    assert "five seconds" in text and "[1]" in text
    citations = [event.data for event in events if event.type == "citation"]
    assert citations and citations[0]["chunk_id"] == sp.final_selection_ids[0]  # attachment [1]
    assert [event for event in events if event.type == "support"]
    assert done.data["response"]["metadata"]["context_chunk_ids"] == sp.final_selection_ids


def test_answer_step_needs_prompt_builder(rs) -> None:
    with pytest.raises(PromptNotBuiltError) as raised:
        rs.stream_prompt_answer(rs.run_pipeline(QUESTION, until="A5_Format_Enforcer"))
    assert raised.value.code == "prompt_not_built" and "Prompt_Builder" in raised.value.message
    with pytest.raises(PromptNotBuiltError):
        rs.stream_prompt_answer(rs.new_prompt(QUESTION))


def test_selected_text_is_checked(rs) -> None:
    with pytest.raises(InvalidQueryError):
        rs.new_prompt(QUESTION, selected_text="x" * (MAX_SELECTED + 1))
    with pytest.raises(InvalidUnicodeError):
        rs.new_prompt(QUESTION, selected_text="\ud800")
