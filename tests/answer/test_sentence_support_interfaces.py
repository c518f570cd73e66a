"""Every interface carries each sentence's support verdict (issue 24).

A scripted LLM (a real OpenAI-compatible HTTP server on 127.0.0.1 that replies with a fixed text) answers
with one sentence its attachment says and one it does not, both citing [1]; the index holds one document,
so attachment [1] is its chunk. Checked through the Python API (ask and stream), the CLI (plain and JSON,
locally and through a running server), ``ragstream serve``'s ``/api/query``, ``/api/chat`` (support events
and ``done``), ``/v1/chat/completions`` (the ``ragstream.sentences`` extension, streamed or not) and MCP's
``ask`` (over streamable HTTP), and the web UI in headless Chromium.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from support.browser_fixtures import checked_page, launched_browser
from support.mcp_client import connected, http_session, text_of
from support.recording_llm import RecordingLLM
from support.server_process import RunningServer, running_server
from typer.testing import CliRunner

from ragstream.answer.render import UNSUPPORTED_MARK
from ragstream.answer.sentence_support.judge import JUDGE_SYSTEM
from ragstream.cli import app

QUESTION = "What is the default timeout in HTTPX?"
PAGE = """# Timeouts

HTTPX enforces timeouts everywhere by default. The default timeout is five seconds of network inactivity.
Pass a `timeout` argument to a request or a client to set another one.
"""
SUPPORTED = "The default timeout is five seconds of network inactivity [1]."
FABRICATED = "HTTPX sends every request through a carrier pigeon relay in Antarctica [1]."
REPLY = f"{SUPPORTED} {FABRICATED}"
runner = CliRunner()


@pytest.fixture(scope="module")
def llm() -> Iterator[RecordingLLM]:
    with RecordingLLM(reply=REPLY) as server:
        yield server


@pytest.fixture(scope="module")
def page_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("docs") / "timeouts.md"
    path.write_text(PAGE, encoding="utf-8")
    return path


def llm_settings(llm: RecordingLLM) -> dict[str, Any]:
    return {"base_url": llm.base_url, "model": "recorder", "max_retries": 0}


def assert_verdicts(sentences: list[dict[str, Any]]) -> None:
    """The supported sentence first, the fabricated one second, both citing [1]."""
    assert [s["verdict"] for s in sentences] == ["supported", "unsupported"], sentences
    assert [s["supported"] for s in sentences] == [True, False]
    assert [s["citations"] for s in sentences] == [[1], [1]]
    supported, fabricated = sentences
    assert supported["text"] == SUPPORTED.replace(" [1]", "") and supported["span"]["number"] == 1
    assert supported["span"]["text"] == "The default timeout is five seconds of network inactivity."
    assert "'Antarctica' is not named in [1]" in fabricated["reason"] and fabricated["score"] < supported["score"]
    assert REPLY[fabricated["start"] : fabricated["end"]] == FABRICATED


def assert_not_high(confidence: dict[str, Any]) -> None:
    assert confidence["level"] != "High"
    assert 'sentence 2 ("HTTPX sends every request through a carrier pigeon relay in Antarctica.")' in confidence["reason"]


def sse(response: httpx.Response) -> list[tuple[str, dict[str, Any]]]:
    events = []
    for block in response.text.strip().split("\n\n"):
        lines = dict(line.split(": ", 1) for line in block.splitlines())
        events.append((lines.get("event", ""), json.loads(lines["data"]) if lines["data"] != "[DONE]" else {}))
    return events


def test_python_api_ask_and_stream(make_fast_index, llm: RecordingLLM, page_file: Path):
    rs = make_fast_index(llm=llm_settings(llm))
    rs.ingest([page_file])
    answer = rs.ask(QUESTION)
    assert answer.answer == REPLY and answer.metadata["mode"] == "llm"
    assert_verdicts([s.model_dump() for s in answer.sentences])
    assert_not_high(answer.confidence.model_dump())
    assert answer.metadata["support"] == {"supported": 1, "unsupported": 1, "uncertain": 0, "judge_calls": 0,
                                          "notes": []}
    assert "support" in answer.metadata["latencies_ms"]

    events = list(rs.stream_answer(QUESTION))
    kinds = [event.type for event in events]
    support = [event.data for event in events if event.type == "support"]
    assert_verdicts(support)
    assert kinds.index("support") < max(i for i, kind in enumerate(kinds) if kind == "token"), \
        "the first sentence's verdict comes while the answer is still streaming"
    assert kinds[-1] == "done" and [s.model_dump() for s in events[-1].response.sentences] == support


def test_the_check_can_be_switched_off(make_fast_index, llm: RecordingLLM, page_file: Path):
    rs = make_fast_index(llm=llm_settings(llm), answer={"support": {"enabled": False}})
    rs.ingest([page_file])
    answer = rs.ask(QUESTION)
    assert answer.sentences == [] and answer.metadata["support"] is None
    assert not [event for event in rs.stream_answer(QUESTION) if event.type == "support"]


def test_the_llm_judge_revises_a_verdict_in_one_more_call(make_fast_index, page_file: Path):
    """The judge reviews the sentences whose cheap verdict is in judge_verdicts (here: supported), in one call."""
    def respond(body: dict[str, Any]) -> str:
        return "1: UNSUPPORTED" if body["messages"][0]["content"] == JUDGE_SYSTEM else REPLY

    with RecordingLLM(respond=respond) as scripted:
        rs = make_fast_index(llm=llm_settings(scripted),
                             answer={"support": {"llm_judge": True, "judge_verdicts": ["supported"]}})
        rs.ingest([page_file])
        answer = rs.ask(QUESTION)
        events = list(rs.stream_answer(QUESTION))
        judged = [r for r in scripted.requests if r["messages"][0]["content"] == JUDGE_SYSTEM]
    assert len(scripted.requests) == 4 and len(judged) == 2  # the answer and one judge call, asked and streamed
    assert "Statement 1: The default timeout is five seconds" in judged[0]["messages"][1]["content"]
    assert "Statement 2" not in judged[0]["messages"][1]["content"]
    assert answer.metadata["llm_calls"] == 2 and answer.metadata["support"]["judge_calls"] == 1
    assert [s.verdict for s in answer.sentences] == ["unsupported", "unsupported"]
    assert answer.sentences[0].reason.startswith("the LLM judge: does not support it (before: supported by [1]")
    assert answer.confidence.level == "Low"  # no sentence is supported any more
    first = [e.sentence.verdict for e in events if e.type == "support" and e.sentence.index == 0]
    assert first == ["supported", "unsupported"] and events[-1].response.sentences[0].verdict == "unsupported"


def test_cli_marks_unsupported_sentences(hash_embedder_by_default, tmp_path: Path, llm: RecordingLLM, page_file: Path,
                                         monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("RAGSTREAM_DATA_DIR", str(tmp_path / "index"))
    for key, value in llm_settings(llm).items():
        monkeypatch.setenv(f"RAGSTREAM_LLM__{key.upper()}", str(value))
    assert runner.invoke(app, ["ingest", str(page_file)]).exit_code == 0
    plain = runner.invoke(app, ["ask", QUESTION])
    assert plain.exit_code == 0, plain.output
    assert f"{FABRICATED} {UNSUPPORTED_MARK}" in plain.stdout and f"{SUPPORTED} {UNSUPPORTED_MARK}" not in plain.stdout
    assert f'{UNSUPPORTED_MARK} Unsupported: sentence 2 "HTTPX sends every request' in plain.stdout
    answer = json.loads(runner.invoke(app, ["ask", QUESTION, "--json"]).stdout)
    assert_verdicts(answer["sentences"])
    streamed = runner.invoke(app, ["ask", QUESTION, "--stream"])
    assert f"{UNSUPPORTED_MARK} Unsupported: sentence 2" in streamed.stdout


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory, llm: RecordingLLM, page_file: Path) -> Iterator[RunningServer]:
    settings = {f"LLM__{key.upper()}": str(value) for key, value in llm_settings(llm).items()}
    with running_server(tmp_path_factory.mktemp("support-server"), hash_embedder=True, **settings) as running:
        files = [("files", (page_file.name, page_file.read_bytes()))]
        assert httpx.post(f"{running.url}/api/documents", files=files, timeout=120).status_code == 201
        yield running


def test_http_query_chat_and_openai(server: RunningServer):
    with httpx.Client(base_url=server.url, timeout=120) as api:
        answer = api.post("/api/query", json={"query": QUESTION}).json()
        assert_verdicts(answer["sentences"])
        assert_not_high(answer["confidence"])

        events = sse(api.post("/api/chat", json={"message": QUESTION}))
        assert_verdicts([data for kind, data in events if kind == "support"])
        assert events[-1][0] == "done"
        assert_verdicts(events[-1][1]["response"]["sentences"])

        request = {"model": "ragstream", "messages": [{"role": "user", "content": QUESTION}]}
        completion = api.post("/v1/chat/completions", json=request).json()
        assert completion["choices"][0]["message"]["content"] == REPLY
        assert_verdicts(completion["ragstream"]["sentences"])
        chunks = [data for _, data in sse(api.post("/v1/chat/completions", json={**request, "stream": True})) if data]
        assert_verdicts(chunks[-1]["ragstream"]["sentences"])


def test_mcp_ask_over_http(server: RunningServer):
    with connected(http_session(server.url)) as client:
        result = client.call("ask", {"question": QUESTION})
    assert not result.is_error and result.structured_content is not None
    assert_verdicts(result.structured_content["sentences"])
    assert_not_high(result.structured_content["confidence"])
    text = text_of(result)
    assert f"{FABRICATED} {UNSUPPORTED_MARK}" in text and f'{UNSUPPORTED_MARK} Unsupported: sentence 2' in text


def test_cli_through_a_running_server(server: RunningServer, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("RAGSTREAM_DATA_DIR", str(server.data_dir))
    result = runner.invoke(app, ["ask", QUESTION, "--stream", "--json"])
    assert result.exit_code == 0, result.output
    events = [json.loads(line) for line in result.stdout.splitlines()]
    assert_verdicts([event["sentence"] for event in events if event["type"] == "support"])
    assert_verdicts(events[-1]["response"]["sentences"])


@pytest.mark.slow  # headless Chromium (tests/README.md: the browser is the slow tier)
def test_the_web_ui_marks_the_unsupported_sentence(server: RunningServer):
    from playwright.sync_api import expect

    with launched_browser() as browser, checked_page(browser, server.url) as page:
        page.goto("/ui/")
        page.locator("#question").fill(QUESTION)
        page.locator("#question").press("Enter")
        answer = page.locator("article.message.assistant").first
        expect(answer.locator(".meta .badge")).to_be_visible()
        fabricated = answer.locator(".sentence.unsupported")
        expect(fabricated).to_have_count(1)
        expect(fabricated.locator(".support-mark")).to_have_text(UNSUPPORTED_MARK)
        assert fabricated.get_attribute("title").startswith("Unsupported: 'Antarctica' is not named in [1]")
        assert "carrier pigeon" in fabricated.inner_text()
        supported = answer.locator(".sentence.supported")
        expect(supported).to_have_count(1)
        tip = supported.locator(".support-tip")
        expect(tip).to_be_hidden()
        supported.focus()  # keyboard users see the supporting passage too
        expect(tip).to_be_visible()
        expect(tip.locator("q")).to_have_text("The default timeout is five seconds of network inactivity.")
        page.mouse.move(0, 0)
        fabricated.hover()
        expect(fabricated.locator(".support-tip")).to_contain_text("Unsupported")
        assert answer.locator(".meta .badge").inner_text() != "High confidence"
