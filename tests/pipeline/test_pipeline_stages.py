"""The stage registry (pipeline/stages.py) is the one description of the stages, and it is true: every
stage, run for real (deterministic and with an LLM), reads and writes only the SuperPrompt fields it
declares, and the controller refuses a stage that changes anything else."""

from __future__ import annotations

import dataclasses
import inspect
import json
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler
from typing import Any, get_args

import pytest
from support.index_fixtures import SAMPLES
from support.loopback import LoopbackServer
from support.recording_llm import RecordingLLM

from ragstream import Ragstream, load_config
from ragstream.config import PipelineLimits
from ragstream.errors import InvariantViolationError
from ragstream.pipeline import controller
from ragstream.pipeline.agent_call import stage_agent
from ragstream.pipeline.invariants import check_transition, check_writes
from ragstream.pipeline.stages import (
    BOOKKEEPING,
    HISTORY_ORDER,
    LLM_STAGE_KEYS,
    LOGS,
    RETRIEVAL,
    STAGE_NAMES,
    STAGE_ORDER,
    STAGES,
    VIEW_STAGES,
    HistoryEntry,
    LLMStageKey,
    Stage,
    StageSpec,
    describe,
    find_stage,
    view_parent,
)
from ragstream.pipeline.super_prompt import SuperPrompt
from ragstream.providers.deadline import Deadline

FIELDS = frozenset(SuperPrompt.model_fields)
PROMPT = ("TASK: and how do I set a timeout on it?\nCONTEXT: I use httpx.\nFORMAT: bullet list\n"
          "CONSTRAINTS: cite sources\nBUDGET: two hours")
CONVERSATION = [("What is an AsyncClient?", "The async HTTP client of httpx.")]
CAPS = {"N1_RETR_MAX_CANDIDATES": 10, "N2_RERANK_TOP_K": 5, "N3_FINAL_SELECTION_MAX": 2}


def test_the_literals_and_the_registry_agree():
    assert get_args(HistoryEntry) == HISTORY_ORDER == tuple(spec.entry for spec in STAGES)
    assert get_args(Stage) == STAGE_ORDER
    assert get_args(LLMStageKey) == LLM_STAGE_KEYS == ("a0", "a2", "a3", "a4", "a5")
    # pipeline.llm_stages accepts exactly the registry's LLM stages
    (llm_stages,) = get_args(PipelineLimits.model_fields["llm_stages"].annotation)
    assert get_args(llm_stages) == LLM_STAGE_KEYS
    assert VIEW_STAGES == ("retrieval", "reranked", "a3", "a4")
    assert [view_parent(spec) for spec in STAGES if spec.writes_view] == [None, "retrieval", "reranked", "a3"]


def test_every_declaration_names_a_real_field_limit_or_log():
    logs: list[str] = []
    for spec in STAGES:
        assert spec.reads | spec.writes <= FIELDS, spec.name
        assert not (spec.writes & BOOKKEEPING) and LOGS not in spec.writes, spec.name
        assert spec.cap is None or spec.cap in PipelineLimits.model_fields, spec.name
        assert spec.summary, spec.name
        logs += spec.logs
    assert len(logs) == len(set(logs)), "two stages share a log key"
    assert BOOKKEEPING <= FIELDS and LOGS in FIELDS


def test_the_controller_runs_the_registry():
    assert [step.spec for step in controller.STEPS] == list(STAGES)
    assert [step.name for step in controller.STEPS] == list(STAGE_NAMES)
    for spec in STAGES:
        for alias in (spec.name, spec.name.upper(), spec.name.split("_")[0], spec.entry):
            assert find_stage(alias) is spec and controller.resolve_step(alias).spec is spec
    assert describe(STAGES[0])["order"] == 1 and describe(STAGES[-1])["order"] == len(STAGES)


def test_each_stage_receives_only_its_inputs():
    """No stage's run sees the StageContext or the whole config: it gets a small dataclass of its own."""
    for step in controller.STEPS:
        module = inspect.getmodule(step.stage)
        assert module is not None and module.SPEC is step.spec
        params = list(inspect.signature(step.stage).parameters.values())
        assert [param.annotation for param in params] == ["SuperPrompt", "Inputs"], step.name
        for item in dataclasses.fields(module.Inputs):
            assert not any(whole in str(item.type) for whole in ("StageContext", "RagstreamConfig", "AgentFactory")), \
                f"{step.name} receives {item.name}: {item.type}"
        has_agent = any("StageAgent" in str(item.type) for item in dataclasses.fields(module.Inputs))
        assert has_agent == (step.spec.llm_key is not None), step.name


_READ: set[str] = set()
_ASSIGNED: set[str] = set()


class _Recording(SuperPrompt):
    """A SuperPrompt that notes each field read (``_READ``) or assigned (``_ASSIGNED``) through it."""

    def __getattribute__(self, name: str) -> Any:
        if name in FIELDS:
            _READ.add(name)
        return super().__getattribute__(name)

    def __setattr__(self, name: str, value: Any) -> None:
        if name in FIELDS:
            _ASSIGNED.add(name)
        super().__setattr__(name, value)


def _run_states(rs: Ragstream) -> list[SuperPrompt]:
    """One manual run: the SuperPrompt before each stage and after the last (the controller checked every step)."""
    states = [rs.new_prompt(PROMPT, conversation=CONVERSATION)]
    for _ in STAGES:
        states.append(rs.run_stage(states[-1]))
    return states


def _fields_touched(rs: Ragstream, states: list[SuperPrompt]) -> dict[str, tuple[set[str], set[str]]]:
    """Per stage: the fields it read and those it wrote (assigned or changed) when run through its module,
    with the inputs the controller gives it, on the state its predecessor left."""
    ctx = rs.stage_context().for_turn(Deadline.unbounded())
    touched: dict[str, tuple[set[str], set[str]]] = {}
    for step, before in zip(controller.STEPS, states, strict=False):
        recording = _Recording.model_validate(before.model_dump())
        _READ.clear()
        _ASSIGNED.clear()
        after = SuperPrompt.model_validate(step.stage(recording, step.inputs(ctx)).model_dump())
        changed = {name for name in FIELDS if getattr(before, name) != getattr(after, name)}
        touched[step.entry] = (set(_READ), _ASSIGNED | changed)
        check_transition(before, after, step.spec)
    return touched


def _may_write(spec: StageSpec) -> frozenset[str]:
    return spec.writes | BOOKKEEPING | ({LOGS} if spec.logs else frozenset())


@pytest.fixture(scope="module")
def deterministic(tmp_path_factory, hash_embedder) -> Iterator[Ragstream]:
    rs = Ragstream(load_config(data_dir=tmp_path_factory.mktemp("stages"), pipeline=CAPS), embedder=hash_embedder)
    assert rs.ingest([SAMPLES]).documents_failed == 0
    yield rs
    rs.close()


@pytest.fixture(scope="module")
def states(deterministic) -> list[SuperPrompt]:
    return _run_states(deterministic)


def _agent_reply(body: dict[str, Any]) -> str:
    """A valid answer for each agent, told apart by the JSON schema in its system message."""
    system = body["messages"][0]["content"]
    if "standalone" in system:
        return json.dumps({"standalone": "How do I set a timeout on an AsyncClient?"})
    if "s_ctx_md" in system:
        return json.dumps({"s_ctx_md": "- timeouts are set on the client [1]"})
    if "normalized_format_spec" in system:
        return json.dumps({"format_kind": "bullet_list", "normalized_format_spec": "answer as a bullet list",
                           "example_shape": "", "hard_rules": ["cite sources"]})
    if "decisions" in system:
        return json.dumps({"decisions": [{"index": 1, "decision": "keep", "tag": ""},
                                         {"index": 2, "decision": "drop", "tag": "duplicate"}]})
    return json.dumps({"system": "technical_expert", "audience": "technical", "tone": "concise", "depth": "brief",
                       "confidence": "medium"})


def test_every_stage_reads_and_writes_only_what_it_declares(deterministic, states, tmp_path, hash_embedder):
    runs = {"deterministic": _fields_touched(deterministic, states)}
    with RecordingLLM(respond=_agent_reply) as llm:
        config = load_config(data_dir=tmp_path / "llm", pipeline={**CAPS, "llm_stages": list(LLM_STAGE_KEYS)},
                             llm={"base_url": llm.base_url, "model": "recorder", "max_retries": 0},
                             reranker={"ranking": "learned"})  # the learned ranker's reads (the blend's: the other run)
        with Ragstream(config, embedder=hash_embedder) as rs:
            assert rs.ingest([SAMPLES]).documents_failed == 0
            states = _run_states(rs)
            assert {key: states[-1].stage_reports[spec.entry].mode for spec in STAGES
                    if (key := spec.llm_key)} == dict.fromkeys(LLM_STAGE_KEYS, "llm")  # every agent's LLM path ran
            runs["llm"] = _fields_touched(rs, states)
    for spec in STAGES:
        for run, touched in runs.items():
            read, written = touched[spec.entry]
            assert read <= spec.reads | _may_write(spec), f"{spec.name} ({run}) read undeclared " \
                f"{sorted(read - spec.reads - _may_write(spec))}"
            assert written <= _may_write(spec), f"{spec.name} ({run}) wrote undeclared {sorted(written - _may_write(spec))}"
        read = set().union(*(touched[spec.entry][0] for touched in runs.values()))
        written = set().union(*(touched[spec.entry][1] for touched in runs.values()))
        assert spec.reads <= read, f"{spec.name} declares reads it never made: {sorted(spec.reads - read)}"
        assert spec.writes <= written, f"{spec.name} declares writes it never made: {sorted(spec.writes - written)}"


@pytest.mark.parametrize(("tamper", "invariant"), [
    (lambda sp: setattr(sp, "hard_rules", ["invented"]), "stage_writes"),  # a field A2 does not write
    (lambda sp: sp.views_by_stage.update(a3=[]), "stage_writes"),  # a view that is not A2's
    (lambda sp: sp.extras.update(a3={"counts": {}}), "stage_writes"),  # another stage's log key
    (lambda sp: sp.stage_reports.pop("a2"), "stage_writes"),  # no report of its own
])
def test_the_controller_refuses_an_undeclared_write(states, tamper, invariant):
    before, after = states[1], states[2].model_copy(deep=True)  # A2_PromptShaper
    check_transition(before, after, STAGES[1])
    tamper(after)
    with pytest.raises(InvariantViolationError) as caught:
        check_transition(before, after, STAGES[1])
    assert caught.value.invariant == invariant


def test_a_stage_without_an_llm_key_may_not_call_the_llm(deterministic, states):
    before, after = states[2], states[3].model_copy(deep=True)  # Retrieval
    after.stage_reports["retrieval"] = after.stage_reports["retrieval"].model_copy(update={"llm_calls": 1})
    with pytest.raises(InvariantViolationError) as caught:
        check_transition(before, after, RETRIEVAL)
    assert caught.value.invariant == "stage_llm"
    with pytest.raises(ValueError, match="may not call the LLM"):
        stage_agent(deterministic.stage_context(), RETRIEVAL)
    check_writes(before, states[3], RETRIEVAL)


def test_typed_results_replace_extras_and_old_json_still_loads(states):
    sp = states[-1]
    assert sp.unknown_attributes == {"BUDGET": "two hours"} and "unknown_attributes" not in sp.extras
    assert sp.prompt_tokens and sp.prompt_tokens > 0 and "prompt_tokens" not in sp.extras["prompt_builder"]
    assert set(sp.extras) == {key for spec in STAGES for key in spec.logs}
    assert SuperPrompt.model_validate_json(sp.model_dump_json()) == sp
    old = json.loads(sp.model_dump_json())  # as an earlier version wrote it
    for field in ("unknown_attributes", "prompt_tokens"):
        del old[field]
    old["extras"]["unknown_attributes"] = {"BUDGET": "two hours"}
    old["extras"]["prompt_builder"]["prompt_tokens"] = 123
    loaded = SuperPrompt.model_validate(old)
    assert loaded.prompt_tokens is None and loaded.extras["unknown_attributes"] == {"BUDGET": "two hours"}


SERVER_WINDOW = 1024
ACCEPTED_CHARS = 4000
"""The test server below refuses a prompt longer than this (about 1,100 estimated tokens) as too long."""


class _SmallWindowLLM(LoopbackServer):
    """A real OpenAI-compatible server whose model has a 1,024-token window: a longer prompt gets the
    OpenAI "maximum context length" 400, a short one a valid A2 answer. Records each prompt's length."""

    def __init__(self) -> None:
        self.prompt_chars: list[int] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))
                chars = sum(len(message["content"]) for message in body["messages"])
                outer.prompt_chars.append(chars)
                if chars > ACCEPTED_CHARS:
                    status, payload = 400, {"error": {
                        "message": f"This model's maximum context length is {SERVER_WINDOW} tokens. However, your "
                                   f"messages resulted in {chars // 3} tokens.",
                        "type": "invalid_request_error", "code": "context_length_exceeded"}}
                else:
                    status, payload = 200, {
                        "id": "x", "object": "chat.completion", "created": 0, "model": "small",
                        "choices": [{"index": 0, "finish_reason": "stop",
                                     "message": {"role": "assistant", "content": _agent_reply(body)}}],
                        "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}}
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: Any) -> None:
                pass

        super().__init__(Handler)


def test_an_agent_believes_the_window_the_server_names_and_fits_its_prompt_again(make_fast_index):
    long_context = "Background about the service and its clients. " * 150  # about 7,000 characters
    with _SmallWindowLLM() as llm:
        rs = make_fast_index(llm={"base_url": llm.base_url, "model": "small", "context_window": 8192,
                                  "max_retries": 0}, pipeline={"llm_stages": ["a2"]}, agents={"a2": {"field_chars": 8000}})
        sp = rs.run_pipeline(f"TASK: How do I set a timeout?\nCONTEXT: {long_context}", until="A2_PromptShaper")
    report = sp.stage_reports["a2"]
    assert report.mode == "llm" and not report.fallback and report.llm_calls == 2, report
    assert sp.body["system"] == "technical_expert"
    assert rs.stage_context().agents.context_window == SERVER_WINDOW  # remembered for the next calls
    assert llm.prompt_chars[0] > ACCEPTED_CHARS >= llm.prompt_chars[-1]
    assert "fitted_fields" in sp.extras["a2"]
