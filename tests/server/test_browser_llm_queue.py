"""The Chat page shows the waiting line, in headless Chromium against a real ``ragstream serve`` (hash
embedder) whose answering model is busy on demand (:mod:`support.busy_llm`): while another question holds
the one slot, the page says "Many questions at once: waiting N s", then shows the model's answer."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from support.busy_llm import BusyLLM
from support.polling import wait_for
from support.server_process import RunningServer, running_server

pytestmark = pytest.mark.slow  # headless Chromium

PAGE = (b"# Timeouts\n\nThe client waits five seconds for a response before it raises a timeout error. "
        b"You can change the timeout on every request or on the client.\n")
QUESTION = "How long does the client wait for a response?"
TIMEOUT = 60.0


@pytest.fixture(scope="module")
def busy() -> Iterator[BusyLLM]:
    with BusyLLM(reply="The client waits five seconds for a response [1].") as llm:
        yield llm


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory, browser: Any, busy: BusyLLM) -> Iterator[RunningServer]:
    with running_server(tmp_path_factory.mktemp("ui-queue"), hash_embedder=True, LLM__BASE_URL=busy.base_url,
                        LLM__MODEL="busy", LLM__MAX_CONCURRENT="1", LLM__QUEUE_WAIT_SECONDS="50",
                        LLM__QUEUE_EVENT_SECONDS="0.5") as running:
        response = httpx.post(f"{running.url}/api/documents", files={"files": ("timeouts.md", PAGE)}, timeout=180.0)
        assert response.status_code in (200, 201), response.text
        yield running


def test_the_chat_page_shows_the_wait_in_line(page: Any, server: RunningServer, busy: BusyLLM) -> None:
    from playwright.sync_api import expect

    holder = threading.Thread(target=lambda: httpx.post(f"{server.url}/api/chat", json={"message": QUESTION},
                                                        timeout=TIMEOUT))
    holder.start()  # another question holds the only slot until the gate opens
    wait_for(lambda: busy.requests == 1, "the other question to reach the model")
    page.goto("/ui/")
    page.locator("#question").fill(QUESTION)
    page.locator("#question").press("Enter")
    expect(page.locator("#chat-status")).to_contain_text("Many questions at once: waiting", timeout=TIMEOUT * 1000)
    expect(page.locator("#chat-status")).to_contain_text("(place 1 in line)")
    busy.gate.set()
    answer = page.locator("article.message.assistant").first
    expect(answer.locator(".meta .badge")).to_be_visible(timeout=TIMEOUT * 1000)
    expect(answer.locator(".text")).to_contain_text("five seconds")
    notices = answer.locator(".notice").all_inner_texts()
    assert not any(notice.startswith("Degraded") for notice in notices), notices  # the model answered
    holder.join(TIMEOUT)
    assert busy.requests == 2 and busy.in_flight_max == 1
