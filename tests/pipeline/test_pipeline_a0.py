"""A0_PreProcessing: the header-mapping ladder, MUST keys and the TASK/CONTEXT rule."""

from __future__ import annotations

import pytest

from ragstream.agents.factory import AgentFactory
from ragstream.config import load_config
from ragstream.errors import ConfigError, MissingTaskError
from ragstream.pipeline import SuperPrompt
from ragstream.pipeline.a0_preprocessing import Inputs, run
from ragstream.pipeline.agent_call import StageAgent
from ragstream.pipeline.header_mapping import HeaderMapper
from ragstream.pipeline.prompt_schema import load_prompt_schema
from ragstream.providers.deadline import Deadline
from ragstream.providers.tokens import make_token_counter


class _Ctx:
    """What A0 receives: the prompt schema, the pipeline limits and its (LLM-less) agent."""

    schema = load_prompt_schema()
    config = load_config()
    inputs = Inputs(schema, config.pipeline, config.agents.a0,
                    StageAgent("a0", AgentFactory(config), make_token_counter(config.llm), Deadline.unbounded()))


def _a0(text: str) -> SuperPrompt:
    return run(SuperPrompt(user_text=text), _Ctx.inputs)


def _step(sp: SuperPrompt, header: str) -> str:
    return next(d["step"] for d in sp.extras["a0"]["decisions"] if d["header"] == header)


def test_plain_prompt_is_the_task_and_must_keys_get_defaults():
    sp = _a0("How do I set a timeout?\nNote: I use httpx.")
    assert sp.body["task"] == "How do I set a timeout?\nNote: I use httpx."
    defaults = _Ctx.schema.defaults
    assert {key: sp.body[key] for key in defaults} == defaults
    assert sp.extras["a0"]["sources"]["task"] == "untitled_text"
    assert sp.unknown_attributes == {}
    assert sp.stage == "preprocessed" and sp.history_of_stages == ["preprocessed"]
    assert sp.base_context_chunks == [] and sp.views_by_stage == {} and sp.final_selection_ids == []
    assert "## System" in sp.prompt_ready and "How do I set a timeout?" in sp.prompt_ready


@pytest.mark.parametrize(("header", "key", "step"), [
    ("TASK", "task", "exact"),
    ("Question", "task", "alias"),
    ("Contxt", "context", "tiny-typo"),
    ("Purpse", "purpose", "tiny-typo"),
    ("Zielgruppe", "audience", "bilingual"),
    ("Zweck", "purpose", "bilingual"),
    ("My task is", "task", "templates"),
    ("Background story", "context", "keyword"),
])
def test_ladder_maps_headers(header, key, step):
    sp = _a0(f"{header}: the value\nTASK: fallback task" if key != "task" else f"{header}: the value")
    assert sp.body[key].startswith("the value")
    assert _step(sp, header) == step
    assert sp.extras["a0"]["normalized_map"][header] == key


def test_german_headers_and_markdown_headings():
    sp = _a0("## Aufgabe\nErkläre Timeouts.\n\n## Kontext\nIch nutze httpx.\n\nStil: formell")
    assert sp.body["task"] == "Erkläre Timeouts."
    assert sp.body["context"] == "Ich nutze httpx."
    assert sp.body["tone"] == "formell" and sp.extras["a0"]["sources"]["tone"] == "user"


def test_unknown_headers_go_to_unknown_attributes_not_body():
    sp = _a0("TASK: explain pools\nBUDGET: two hours\n## Deadline\nFriday\nNote: this line is just text")
    assert sp.unknown_attributes == {"BUDGET": "two hours", "Deadline": "Friday\nNote: this line is just text"}
    assert "two hours" not in " ".join(sp.body.values())
    assert _step(sp, "BUDGET") == "unknown"


def test_task_context_rule():
    asked = _a0("CONTEXT: We run httpx behind a proxy. Why do requests hang? They never time out.")
    assert asked.body["task"] == "Why do requests hang?"
    assert asked.extras["a0"]["sources"]["task"] == "context_question"
    statement = _a0("Kontext: We run httpx behind a proxy.")
    assert statement.body["task"] == _Ctx.schema.task_from_context
    extra_text = _a0("Some pasted text.\nTASK: summarise it")
    assert extra_text.body["task"] == "summarise it" and extra_text.body["text"] == "Some pasted text."
    with pytest.raises(MissingTaskError):
        _a0("BUDGET: none")
    with pytest.raises(MissingTaskError):
        _a0("   ")


def test_headers_inside_code_fences_are_text():
    sp = _a0("TASK: fix this\n```python\n# Context\nTONE: x\n```")
    assert "context" not in sp.body and "# Context" in sp.body["task"]


def test_mapper_is_case_and_mark_insensitive():
    mapper = HeaderMapper(_Ctx.schema)
    assert mapper.map("**Output_Format**").key == "format"
    assert mapper.map("Deadline").key is None


def test_invalid_schema_is_a_config_error(tmp_path):
    bad = tmp_path / "schema.json"
    bad.write_text('{"version": 1}')
    with pytest.raises(ConfigError):
        load_prompt_schema(bad)
