"""The pipeline's LLM path: A2..A5 through the agent stack against a real llama.cpp server
(Qwen2.5-Coder-0.5B), and the recorded fallback when the endpoint fails."""

from __future__ import annotations

import pytest
from support.index_fixtures import SAMPLES
from support.llm_server import free_port

from ragstream import Ragstream, load_config
from ragstream.agents.prompts import A2_ENUMS, A3_PROMPT
from ragstream.pipeline.a5_format_enforcer import CUSTOM_FORMAT
from ragstream.pipeline.prompt_schema import load_prompt_schema

CAPS = {"N0_QUERY_PIECES": 2, "N1_RETR_MAX_CANDIDATES": 8, "N2_RERANK_TOP_K": 3, "N3_FINAL_SELECTION_MAX": 2,
        "llm_stages": ["a2", "a3", "a4", "a5"]}
AGENTS = {"a3": {"snippet_chars": 200, "max_tokens": 160}, "a4": {"snippet_chars": 300, "max_tokens": 200},
          "a2": {"max_tokens": 80}, "a5": {"max_tokens": 120}}
PROMPT = "TASK: How do I set a timeout on a request with httpx?\nFORMAT: bullet list\nCONSTRAINTS: cite sources"
AGENT_RECORDS = ("a2", "a3", "a4", "format_enforcer")


@pytest.fixture(scope="module")
def llm_index(tmp_path_factory, embedder, qwen_server):
    config = load_config(data_dir=tmp_path_factory.mktemp("llm-index"), pipeline=CAPS, agents=AGENTS,
                         llm={"base_url": qwen_server, "model": "qwen", "timeout_seconds": 180.0},
                         answer={"deadline_seconds": 900.0})  # four agent calls on a 2-core CPU
    index = Ragstream(config, embedder=embedder)
    index.ingest([SAMPLES / "httpx-timeouts.md", SAMPLES / "httpx-exceptions.md"])
    yield index
    index.close()


def test_llm_agents_run_with_valid_outputs_or_recorded_fallbacks(llm_index):
    sp = llm_index.run_pipeline(PROMPT)
    for key in AGENT_RECORDS:
        record = sp.extras[key]
        assert record["model"] == "qwen"
        assert record["mode"] == "llm" or (record["mode"] == "deterministic" and record["llm_attempted"]
                                           and record["reason"]), record
    assert sum(sp.extras[key]["mode"] == "llm" for key in AGENT_RECORDS) >= 2, "Qwen answers valid JSON"
    for name, allowed in A2_ENUMS.items():  # clamped to the enums whatever the model said
        assert sp.body[name] in allowed
    decisions = set(sp.chunk_decisions.values())
    assert decisions <= {"keep", "drop_empty", "drop_duplicate", "drop_irrelevant", "drop_conflict"}
    assert sp.extras["format_enforcer"]["format_kind"] in {*load_prompt_schema().formats.kinds, CUSTOM_FORMAT}
    assert 0 < len(sp.final_selection_ids) <= CAPS["N3_FINAL_SELECTION_MAX"]
    for heading in ("## System", "## Prompt", "## S_CTX", "## Attachments", "SOURCE: ", "SPAN: "):
        assert heading in sp.prompt_ready
    for key in ("a2", "a3", "a4", "a5"):  # every stage that fell back says so in its report
        report = sp.stage_reports[key]
        assert report.mode == "llm" or (report.fallback and report.reason), report
    # at a 2,048-token context (the test server's) every agent prompt was fitted, none refused as too long
    assert not any("exceed" in (r.reason or "") or "context" in (r.reason or "") for r in sp.stage_reports.values())
    assert A3_PROMPT.clamp("decision", "KEEP ") == ("keep", True)
    assert A3_PROMPT.clamp("decision", "maybe") == ("keep", False)


def test_unreachable_llm_falls_back_and_says_so(make_index):
    rs = make_index(pipeline=CAPS, llm={"base_url": f"http://127.0.0.1:{free_port()}/v1", "max_retries": 0})
    rs.ingest([SAMPLES / "httpx-timeouts.md"])
    sp = rs.run_pipeline("How do I set a timeout?")
    for key in AGENT_RECORDS:
        record = sp.extras[key]
        assert record["mode"] == "deterministic" and record["llm_attempted"] is True
        assert "LLM call failed (llm_unavailable)" in record["reason"]
    assert "contradiction" in sp.extras["a3"]["checks_skipped"]
    assert "## S_CTX" in sp.prompt_ready and "SOURCE: " in sp.prompt_ready


def test_llm_stages_choose_which_agents_call_the_llm(make_index):
    rs = make_index(pipeline={**CAPS, "llm_stages": ["a3"]},
                    llm={"base_url": f"http://127.0.0.1:{free_port()}/v1", "max_retries": 0})
    rs.ingest([SAMPLES / "httpx-timeouts.md"])
    sp = rs.run_pipeline("How do I set a timeout?")
    assert sp.extras["a2"]["reason"] == "a2 is not in pipeline.llm_stages" and not sp.extras["a2"]["llm_attempted"]
    assert sp.stage_reports["a3"].fallback and sp.stage_reports["a3"].llm_calls == 1
    assert sum(report.llm_calls for report in sp.stage_reports.values()) == 1
