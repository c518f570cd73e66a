"""Feedback buttons on the Chat page, in headless Chromium against a real ``ragstream serve`` process (hash
embedder): an answer is rated helpful, then not helpful with a comment, and opening its citation is counted;
the server's summary shows what the page sent (the citation opened twice, once)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from support.server_process import RunningServer, running_server

pytestmark = pytest.mark.slow  # headless Chromium

PAGE = (b"# Timeouts\n\nThe client waits five seconds for a response before it raises a timeout error. "
        b"You can change the timeout on every request or on the client.\n")
QUESTION = "How long does the client wait for a response?"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory, browser: Any) -> Iterator[RunningServer]:
    with running_server(tmp_path_factory.mktemp("ui-feedback"), hash_embedder=True) as running:
        response = httpx.post(f"{running.url}/api/documents", files={"files": ("timeouts.md", PAGE)}, timeout=180.0)
        assert response.status_code in (200, 201), response.text
        yield running


def test_an_answer_is_rated_and_its_citation_open_counted(page: Any, server: RunningServer) -> None:
    from playwright.sync_api import expect

    page.goto("/ui/")
    page.locator("#question").fill(QUESTION)
    page.locator("#question").press("Enter")
    answer = page.locator("article.message.assistant").first
    expect(answer.locator(".meta .badge")).to_be_visible()
    bar = answer.locator(".feedback")
    expect(bar).to_be_visible()
    message_id = answer.get_attribute("data-message-id")
    assert message_id and bar.get_attribute("data-message-id") == message_id

    helpful = bar.get_by_role("button", name="Helpful", exact=True)
    not_helpful = bar.get_by_role("button", name="Not helpful")
    helpful.click()
    expect(bar.locator(".feedback-status")).to_have_text("Thanks: rated helpful.")
    expect(helpful).to_have_attribute("aria-pressed", "true")
    not_helpful.click()
    expect(bar.locator(".feedback-status")).to_have_text("Thanks: rated not helpful.")
    expect(helpful).to_have_attribute("aria-pressed", "false")
    expect(not_helpful).to_have_attribute("aria-pressed", "true")
    bar.get_by_label("Comment on this answer").fill("It should say how to change it per request.")
    bar.get_by_role("button", name="Send comment").click()
    expect(bar.locator(".feedback-status")).to_have_text("Thanks: comment sent.")

    cite = answer.locator("a.cite").first
    for again in (False, True):  # the same citation opened twice counts once
        with page.expect_response(re.compile(r"/api/feedback/citation-open$")) as opened:
            cite.click()
        assert opened.value.status == 200
        number = int(cite.get_attribute("data-number") or "0")
        assert opened.value.request.post_data_json == {"message_id": message_id, "citation": number}
        assert opened.value.json() == {"message_id": message_id, "citation": number, "recorded": not again}

    summary = httpx.get(f"{server.url}/api/feedback/summary", timeout=60.0).json()
    [today] = summary["days"]
    assert (today["answers"], today["rated"], today["helpful"], today["not_helpful"]) == (1, 1, 0, 1)
    assert today["citation_opens"] == 1
    assert summary["worst_questions"][0]["question"] == QUESTION
