"""Selected text and the Answer step in headless Chromium against a real ``ragstream serve`` process (hash
embedder, no LLM: the extractive answer), issue 32 rows 3 and 6.

Chat: text selected in an answer with the mouse shows "Ask about this"; the page shows what is attached
(removable), the next question carries it as ``selected_text`` and the prompt the Prompt Builder renders for
that turn quotes it. Pipeline: Auto runs the eight stages, then Answer, which shows a cited answer with its
sentences' support; Answer runs again; the Selected text field takes text selected in the Super-Prompt.
Document: "Ask about this" on a document's text opens the Chat page with it attached. With a RecordingLLM (a real
OpenAI-compatible HTTP server that records what it is sent) as the answering model, the chat turn's own prompt,
as the model reads it, quotes the selected text. With a real local model
(the ``smollm2_server`` fixture), Auto ends with the model's streamed, cited reply to the built prompt.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from support.browser_fixtures import checked_page
from support.recording_llm import RecordingLLM
from support.server_process import RunningServer, running_server

pytestmark = pytest.mark.slow  # headless Chromium

PAGE = (b"# Timeouts\n\nThe client waits five seconds for a response before it raises a timeout error. "
        b"You can change the timeout on every request or on the client.\n\n"
        b"## Pools\n\nA connection pool keeps at most ten connections open. The pool timeout limits how long "
        b"a request waits for a free connection from the pool.\n")
QUESTION = "How long does the client wait for a response?"
FOLLOW_UP = "What does this passage mean?"
STAGE_COUNT = 8
AUTO_DONE = f"Auto: all {STAGE_COUNT} stages ran, then Answer: done."


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory, browser: Any) -> Iterator[RunningServer]:
    with running_server(tmp_path_factory.mktemp("ui-selection"), hash_embedder=True) as running:
        response = httpx.post(f"{running.url}/api/documents", files={"files": ("timeouts.md", PAGE)}, timeout=180.0)
        assert response.status_code in (200, 201), response.text
        yield running


FIRST_LINE = """(node) => {
  const walker = document.createTreeWalker(node, NodeFilter.SHOW_TEXT,
    { acceptNode: (text) => (text.textContent.trim() ? NodeFilter.FILTER_ACCEPT : NodeFilter.FILTER_SKIP) });
  const range = document.createRange();
  range.selectNodeContents(walker.nextNode());
  const box = range.getClientRects()[0];
  return { x: box.left, y: box.top + box.height / 2, width: box.width };
}"""


def drag_select(page: Any, locator: Any) -> None:
    """Select most of ``locator``'s first line of text with the mouse, as a person does."""
    locator.scroll_into_view_if_needed()
    line = locator.evaluate(FIRST_LINE)
    page.mouse.move(line["x"] + 1, line["y"])
    page.mouse.down()
    page.mouse.move(line["x"] + line["width"] * 0.9, line["y"], steps=8)
    page.mouse.up()


def normalized(text: str) -> str:
    return " ".join(text.split())


def test_chat_asks_about_text_selected_in_an_answer(page: Any) -> None:
    from playwright.sync_api import expect

    page.goto("/ui/")
    page.locator("#question").fill(QUESTION)
    page.locator("#question").press("Enter")
    first = page.locator("article.message.assistant").first
    expect(first.locator(".meta .badge")).to_be_visible()
    ask_about = page.get_by_role("button", name="Ask about this")
    expect(ask_about).to_be_hidden()

    # Select, attach, remove: nothing goes with the question once removed.
    drag_select(page, first.locator(".text"))
    expect(ask_about).to_be_visible()
    ask_about.click()
    expect(ask_about).to_be_hidden()
    expect(page.locator("#attached")).to_be_visible()
    selected = page.locator("#attached-text").inner_text()
    assert len(selected) > 5 and normalized(selected) in normalized(first.locator(".text").inner_text())
    expect(page.locator("#question")).to_be_focused()
    page.get_by_role("button", name="Remove the selected text").click()
    expect(page.locator("#attached")).to_be_hidden()

    # Select again and ask: the request carries it, the question shows it, the attachment is used up.
    drag_select(page, first.locator(".text"))
    ask_about.click()
    expect(page.locator("#attached-text")).to_have_text(selected)
    page.locator("#question").fill(FOLLOW_UP)
    with page.expect_request(re.compile(r"/api/chat$")) as sent:
        page.locator("#question").press("Enter")
    assert sent.value.post_data_json["selected_text"] == selected
    assert sent.value.post_data_json["message"] == FOLLOW_UP
    expect(page.locator(".message.user blockquote.selected-text")).to_have_text(selected)
    expect(page.locator("#attached")).to_be_hidden()
    second = page.locator("article.message.assistant").nth(1)
    expect(second.locator(".meta .badge")).to_be_visible()

    # The prompt the Prompt Builder renders for that turn quotes it: the turn's "How it was retrieved".
    second.get_by_role("link", name="How it was retrieved").click()
    expect(page.locator("#selected-text")).to_have_value(selected)
    expect(page.locator("#prompt")).to_have_value(FOLLOW_UP)
    expect(page.locator("#auto")).to_be_enabled()
    page.locator("#auto").click()
    expect(page.locator("#status")).to_have_text(AUTO_DONE)
    ready = page.locator("#prompt-ready").inner_text()
    assert "### Selected text" in ready and selected in ready


def test_chat_selected_text_reaches_the_answering_model(browser: Any, tmp_path: Any) -> None:
    from playwright.sync_api import expect

    with RecordingLLM(reply="The client waits five seconds for a response [1].") as llm, \
            running_server(tmp_path, hash_embedder=True, LLM__BASE_URL=llm.base_url, LLM__MODEL="recorder") as srv, \
            checked_page(browser, srv.url) as page:
        response = httpx.post(f"{srv.url}/api/documents", files={"files": ("timeouts.md", PAGE)}, timeout=180.0)
        assert response.status_code in (200, 201), response.text
        page.goto("/ui/")
        page.locator("#question").fill(QUESTION)
        page.locator("#question").press("Enter")
        first = page.locator("article.message.assistant").first
        expect(first.locator("a.cite").first).to_be_visible()
        assert "### Selected text" not in llm.requests[-1]["messages"][1]["content"]  # nothing selected yet
        drag_select(page, first.locator(".text"))
        page.get_by_role("button", name="Ask about this").click()
        selected = page.locator("#attached-text").inner_text()
        page.locator("#question").fill(FOLLOW_UP)
        page.locator("#question").press("Enter")
        expect(page.locator("article.message.assistant").nth(1).locator(".meta .badge")).to_be_visible()
        system, user = (message["content"] for message in llm.requests[-1]["messages"])
        assert f"### Selected text\n```text\n{selected}\n```" in user  # quoted in Prompt_MD, fenced
        assert selected not in system


def test_pipeline_auto_runs_through_answer(page: Any) -> None:
    from playwright.sync_api import expect

    page.goto("/ui/pipeline.html")
    expect(page.locator("#answer-step")).to_be_disabled()
    page.locator("#prompt").fill(QUESTION)
    page.locator("#selected-text").fill("before it raises a timeout error")
    page.locator("#auto").focus()
    page.keyboard.press("Enter")
    expect(page.locator("#status")).to_have_text(AUTO_DONE)
    expect(page.locator("#prompt-ready")).to_be_focused()  # the keyboard lands on the Super-Prompt, as before Answer
    expect(page.locator("#prompt-ready")).to_contain_text("### Selected text")
    expect(page.locator("#prompt-ready")).to_contain_text("before it raises a timeout error")

    answer = page.locator("#answer")
    expect(answer).to_be_visible()
    expect(answer).to_have_attribute("data-mode", "extractive")
    expect(answer.locator(".answer-mode")).to_have_text(re.compile("Extractive answer"))
    expect(answer.locator(".meta .badge")).to_be_visible()
    expect(answer.locator("#answer-text")).to_contain_text("five seconds")
    citation = answer.locator("a.cite").first
    expect(citation).to_be_visible()
    source = page.locator("#answer-sources li").first
    expect(source).to_contain_text("Timeouts")
    assert citation.get_attribute("href") == f"#{source.get_attribute('id')}"
    assert answer.locator(".sentence[data-verdict]").count() > 0  # each sentence's support verdict
    first_message = answer.get_attribute("data-message-id")
    assert first_message

    # Replayable: Answer runs again on the same built prompt.
    expect(page.locator("#answer-step")).to_be_enabled()
    page.locator("#answer-step").click()
    expect(page.locator("#status")).to_have_text("Answer: done.")
    expect(answer).not_to_have_attribute("data-message-id", first_message)
    expect(answer.locator("a.cite").first).to_be_visible()

    # "Ask about this" in the Super-Prompt fills the Selected text field; a new SuperPrompt clears the answer
    # and Answer waits for its Prompt_Builder.
    drag_select(page, page.locator("#prompt-ready"))
    page.get_by_role("button", name="Ask about this").click()
    chosen = page.locator("#selected-text").input_value()
    assert chosen and normalized(chosen) in normalized(page.locator("#prompt-ready").inner_text())
    page.get_by_role("button", name="New SuperPrompt").click()
    expect(page.locator("#progress")).to_have_text(f"(0 of {STAGE_COUNT} ran)")
    expect(answer).to_be_hidden()
    expect(page.locator("#answer-step")).to_be_disabled()


def test_document_text_asked_about_in_chat(page: Any, server: RunningServer) -> None:
    from playwright.sync_api import expect

    [document] = httpx.get(f"{server.url}/api/documents", timeout=60.0).json()
    page.goto(f"/ui/document.html?id={document['document_id']}")
    chunk = page.locator("#chunks .chunk-text").first
    expect(chunk).to_be_visible()
    drag_select(page, chunk)
    page.get_by_role("button", name="Ask about this").click()
    expect(page).to_have_url(re.compile(r"/ui/index\.html\?selected="))
    expect(page.locator("#attached")).to_be_visible()
    assert normalized(page.locator("#attached-text").inner_text()) in normalized(PAGE.decode())


def test_pipeline_answer_step_streams_a_local_model_reply(browser: Any, smollm2_server: str, tmp_path: Any) -> None:
    """The answering model is SmolLM2 behind llama.cpp's server, under the citation grammar (sentences end with [n])."""
    from playwright.sync_api import expect

    settings = {"LLM__BASE_URL": smollm2_server, "LLM__MODEL": "smollm2", "LLM__MAX_TOKENS": "120",
                "LLM__CONTEXT_WINDOW": "2048", "ANSWER__CONTEXT_TOKENS": "700", "ANSWER__CITATION_GRAMMAR": "true"}
    with running_server(tmp_path, hash_embedder=True, **settings) as llm_server, \
            checked_page(browser, llm_server.url) as page:
        response = httpx.post(f"{llm_server.url}/api/documents", files={"files": ("timeouts.md", PAGE)}, timeout=180.0)
        assert response.status_code in (200, 201), response.text
        page.goto("/ui/pipeline.html")
        page.locator("#prompt").fill(QUESTION)
        with page.expect_response(re.compile(r"/api/pipeline/[^/]+/answer$")) as answered:
            page.locator("#auto").click()
        assert answered.value.headers["content-type"].startswith("text/event-stream")
        expect(page.locator("#status")).to_have_text(AUTO_DONE)
        answer = page.locator("#answer")
        expect(answer).to_have_attribute("data-mode", "llm")
        # The model is named by its file name (llama.cpp's server reports the model's path).
        expect(answer.locator(".answer-mode")).to_have_text(re.compile(r"^Answered by SmolLM2-135M-Instruct\S*\.gguf$"))
        expect(answer.locator("a.cite").first).to_be_visible()
        expect(page.locator("#answer-sources li").first).to_contain_text("Timeouts")
        assert "Extractive answer" not in answer.locator("#answer-text").inner_text()
