"""The web UI on a corpus of over 100 documents, in headless Chromium against real server processes
(issue 10): 110 SciFact abstracts, the httpx docs, FastAPI-shaped pages and two PDFs.

Fast tier (hash-embedder server): the pipeline page shows each stage's top entries with "show all"
and readable scores; the documents page pages, filters and sorts on the server; a citation opens
its document at the cited chunk; example questions come from the index; a follow-up is rewritten
and the rewrite is visible in the chat and on the pipeline page. Slow tier (the real model):
the screenshots in ``docs/screenshots/``.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlparse

import pytest
from support.browser_fixtures import checked_page, launched_browser, screenshot
from support.fastapi_corpus import CORS_CREDENTIALS_SECTION
from support.hash_embedder import HashEmbedder
from support.server_process import FAST_SETTINGS, RunningServer, running_server
from support.ui_corpus import corpus_size, write_ui_corpus

from ragstream import Ragstream, load_config
from ragstream.providers.embedders import make_embedder

TOP_ENTRIES = 20
PAGE_SIZE = 25
CORS_QUESTION = "How do I enable CORS in my FastAPI app?"
FOLLOW_UP = "and credentials?"
EN_DASH = "\u2013"
DATE = re.compile(r"\d{4}-\d\d-\d\d \d\d:\d\d UTC")
SCORE = re.compile(r"\d\.\d\d")
LINES = "el => { const range = document.createRange(); range.selectNodeContents(el); return range.getClientRects().length; }"
"""How many lines (boxes) the text of an element takes."""


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    with launched_browser() as launched:
        yield launched


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory, shared_data: Path) -> Path:
    root = write_ui_corpus(tmp_path_factory.mktemp("ui-corpus"), shared_data)
    assert corpus_size(root) > 100
    return root


def _ingested(tmp: Path, corpus: Path, **config: Any) -> None:
    """Ingest ``corpus`` into ``tmp/data`` (the data dir ``running_server(tmp)`` serves)."""
    embedder = HashEmbedder() if config.pop("hash_embedder") else make_embedder(load_config().embedding)
    with Ragstream(load_config(data_dir=tmp / "data", **config), embedder=embedder) as rs:
        report = rs.ingest([corpus])
        assert report.documents_failed == 0 and report.documents_processed == corpus_size(corpus)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory, corpus: Path, browser: Any) -> Iterator[RunningServer]:
    tmp = tmp_path_factory.mktemp("ui-corpus-server")
    _ingested(tmp, corpus, hash_embedder=True, reranker={"backend": FAST_SETTINGS["RERANKER__BACKEND"]})
    # Hash-embedder cosines are no calibrated relevance: no threshold, so every question gets its sources.
    with running_server(tmp, hash_embedder=True, ANSWER__MIN_RELEVANCE="0") as running:
        yield running


@pytest.fixture
def page(browser: Any, server: RunningServer) -> Iterator[Any]:
    with checked_page(browser, server.url) as tab:
        yield tab


def _ask(page: Any, question: str, index: int) -> Any:
    from playwright.sync_api import expect

    page.locator("#question").fill(question)
    page.locator("#question").press("Enter")
    answer = page.locator("article.message.assistant").nth(index)
    expect(answer.locator(".meta .badge")).to_be_visible()
    expect(page.locator("#send")).to_be_enabled()
    return answer


def _section(page: Any, view: str) -> Any:
    return page.locator(f'#views section[data-view="{view}"]')


def test_pipeline_shows_top_entries_with_show_all(page: Any):
    from playwright.sync_api import expect

    page.goto("/ui/pipeline.html")
    page.locator("#prompt").fill("How do I set a timeout on a client?")
    page.locator("#auto").click()
    expect(page.locator("#status")).to_have_text("Auto: all 8 stages ran, then Answer: done.")
    retrieval = _section(page, "retrieval")
    rows = retrieval.locator("tbody tr")
    expect(rows).to_have_count(TOP_ENTRIES)
    toggle = retrieval.get_by_role("button", name=re.compile(r"^Show all \d+$"))
    total = int(toggle.inner_text().split()[-1])
    assert total > TOP_ENTRIES
    expect(toggle).to_have_attribute("aria-expanded", "false")
    expect(retrieval.locator("h3")).to_contain_text(re.compile(rf"\b{total} chunk\(s\) · .* · showing top {TOP_ENTRIES}\b"))
    expect(retrieval.locator("h3")).to_contain_text("fused score: hybrid BM25 + dense score relative to the best hit")

    toggle.focus()
    page.keyboard.press("Enter")
    expect(rows).to_have_count(total)
    shown = retrieval.get_by_role("button", name=f"Show top {TOP_ENTRIES}")
    expect(shown).to_have_attribute("aria-expanded", "true")
    expect(shown).to_be_focused()  # the keyboard stays on the control
    scores = retrieval.locator("td[data-score]").all_inner_texts()
    assert len(scores) == total and all(SCORE.fullmatch(score) for score in scores), scores[:5]
    raw = [float(value) for value in retrieval.locator("td[data-score]").evaluate_all(
        "cells => cells.map(cell => cell.dataset.score)")]
    assert raw == sorted(raw, reverse=True) and raw[0] == 1.0
    shown.click()
    expect(rows).to_have_count(TOP_ENTRIES)

    # The final selection: every A4 row is highlighted and marked, and so are its rows in earlier views.
    final = _section(page, "a4").locator("tbody tr")
    assert final.count() > 0
    expect(_section(page, "a4").locator("tbody tr:not(.final)")).to_have_count(0)
    assert final.first.locator("td.final").inner_text() == "✓"
    first_id = final.first.get_attribute("data-chunk")
    expect(_section(page, "reranked").locator(f'tr[data-chunk="{first_id}"]')).to_have_class(re.compile("final"))
    expect(_section(page, "reranked").locator("td.moved").first).to_have_text(re.compile(r"^(=|↑ from #\d+|↓ from #\d+)$"))


def test_documents_page_filter_and_sort(page: Any, corpus: Path):
    from playwright.sync_api import expect

    total = corpus_size(corpus)
    page.goto("/ui/documents.html")
    expect(page.locator("#list-status")).to_have_text(f"{total} document(s)")
    rows = page.locator("#documents tbody tr")
    expect(rows).to_have_count(PAGE_SIZE)
    expect(page.locator("#page-info")).to_have_text(f"1{EN_DASH}{PAGE_SIZE} of {total}")
    expect(page.locator("#prev-page")).to_be_disabled()
    first_title = rows.first.locator("td").first.inner_text()
    dates = rows.first.locator("td.date")
    expect(dates).to_have_count(2)
    for i in range(2):
        assert DATE.fullmatch(dates.nth(i).inner_text())
        assert dates.nth(i).evaluate(LINES) == 1  # one line, not four

    page.locator("#next-page").click()
    expect(page.locator("#page-info")).to_have_text(f"{PAGE_SIZE + 1}{EN_DASH}{2 * PAGE_SIZE} of {total}")
    expect(rows.first.locator("td").first).not_to_have_text(first_title)
    page.locator("#prev-page").click()
    expect(page.locator("#page-info")).to_have_text(f"1{EN_DASH}{PAGE_SIZE} of {total}")

    chunks = page.locator('#documents th[data-sort="chunks"]')
    chunks.get_by_role("button").click()
    expect(chunks).to_have_attribute("aria-sort", "ascending")
    chunks.get_by_role("button").click()
    expect(chunks).to_have_attribute("aria-sort", "descending")
    expect(page.locator('#documents th[data-sort="source"]')).to_have_attribute("aria-sort", "none")
    counts = [int(text) for text in rows.locator("td.num").all_inner_texts()]
    assert counts == sorted(counts, reverse=True) and counts[0] > counts[-1]

    page.locator("#filter").fill("FastAPI")
    expect(page.locator("#list-status")).to_have_text("6 document(s) matching “FastAPI”")
    expect(rows).to_have_count(6)
    expect(page.locator("#next-page")).to_be_disabled()
    page.locator("#filter").fill("no such document anywhere")
    expect(page.locator("#list-status")).to_have_text("No document matches “no such document anywhere”.")
    page.locator("#filter").fill("")
    expect(page.locator("#list-status")).to_have_text(f"{total} document(s)")

    # A title opens the document view.
    link = rows.first.locator("td a")
    title = link.inner_text()
    link.click()
    expect(page.locator("#doc-title")).to_have_text(title)
    assert page.locator("article.doc-chunk").count() >= 1


def test_chat_examples_come_from_the_index(page: Any):
    from playwright.sync_api import expect

    page.goto("/ui/")
    examples = page.locator("#empty-state button.example")
    expect(examples).to_have_count(3)
    texts = examples.all_inner_texts()
    assert all(text.startswith("What do my documents say about ") for text in texts)
    expect(page.locator("#question")).to_have_attribute("placeholder", f"For example: {texts[0]}")
    examples.first.click()
    expect(page.locator(".message.user")).to_have_text(texts[0])
    expect(page.locator("article.message.assistant .meta .badge")).to_be_visible()


def test_citation_opens_its_source_at_the_chunk_and_follow_up_is_rewritten(page: Any):
    from playwright.sync_api import expect

    page.goto("/ui/")
    _ask(page, CORS_QUESTION, 0)
    second = _ask(page, FOLLOW_UP, 1)
    expect(second.locator(".rewritten")).to_have_text("Follow-up searched as: enable CORS FastAPI app: credentials?")
    source = page.locator(f'#sources li[data-section="{CORS_CREDENTIALS_SECTION}"]')
    expect(source).to_have_count(1)

    link = source.locator(".doc a")
    href = link.get_attribute("href")
    chunk_id = parse_qs(urlparse(href).query)["chunk"][0]
    link.click()
    cited = page.locator("article.doc-chunk.cited")
    expect(cited).to_have_count(1)
    assert cited.get_attribute("data-chunk-id") == chunk_id
    expect(cited).to_be_focused()
    expect(cited).to_be_in_viewport()
    expect(cited).to_contain_text("allow_credentials=True")
    expect(page.locator("#doc-title")).to_have_text("CORS (Cross-Origin Resource Sharing)")

    # The pipeline of that follow-up, with the conversation before it: the rewrite is shown.
    page.go_back()
    page.goto("/ui/")  # a fresh chat page cannot show the old conversation; ask again and follow its link
    _ask(page, CORS_QUESTION, 0)
    answer = _ask(page, FOLLOW_UP, 1)
    answer.get_by_role("link", name="How it was retrieved").click()
    expect(page.locator("#conversation-note")).to_contain_text("With 1 earlier turn(s)")
    expect(page.locator("#prompt")).to_have_value(FOLLOW_UP)
    page.locator("#auto").click()
    expect(page.locator("#status")).to_have_text("Auto: all 8 stages ran, then Answer: done.")
    expect(page.locator("#rewritten")).to_have_text(
        "Follow-up rewritten for the search: enable CORS FastAPI app: credentials?")
    top = _section(page, "retrieval").locator("tbody tr").first
    expect(top.locator("td.where")).to_contain_text(CORS_CREDENTIALS_SECTION)


@pytest.mark.slow
def test_screenshots_of_a_real_corpus(browser: Any, corpus: Path, tmp_path: Path):
    """``docs/screenshots/`` from the real model over the corpus of over 100 documents."""
    from playwright.sync_api import expect

    _ingested(tmp_path, corpus, hash_embedder=False)
    with running_server(tmp_path) as server, checked_page(browser, server.url) as page:
        page.goto("/ui/documents.html")
        expect(page.locator("#page-info")).to_have_text(f"1{EN_DASH}{PAGE_SIZE} of {corpus_size(corpus)}")
        screenshot(page, "documents")

        page.goto("/ui/")
        _ask(page, CORS_QUESTION, 0)
        answer = _ask(page, FOLLOW_UP, 1)
        expect(answer.locator(".rewritten")).to_be_visible()
        screenshot(page, "chat")

        page.locator("#sources li .doc a").first.click()
        expect(page.locator("article.doc-chunk.cited")).to_be_visible()
        screenshot(page, "document")

        page.go_back()
        expect(page.locator("#question")).to_be_visible()
        page.goto("/ui/")
        _ask(page, CORS_QUESTION, 0)
        _ask(page, FOLLOW_UP, 1).get_by_role("link", name="How it was retrieved").click()
        page.locator("#auto").click()
        expect(page.locator("#status")).to_have_text("Auto: all 8 stages ran, then Answer: done.")
        screenshot(page, "pipeline")
