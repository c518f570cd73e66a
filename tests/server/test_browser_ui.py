"""The web UI in headless Chromium against a real ``ragstream serve`` process (issue 5).

Chromium comes from ``browser_fixtures`` (Debian's ``/usr/bin/chromium`` through Playwright).

Flows: upload a Markdown file and a PDF with progress, delete one, reindex (Documents); ask with the
keyboard and see the streamed answer, inline citations linked to sources and the confidence badge
(Chat); run the eight stages one by one, then Auto (Pipeline). The screenshots in
``docs/screenshots/`` come from a corpus of over 100 documents (``test_browser_corpus.py``).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from support.browser_fixtures import WATCH_UPLOAD
from support.server_process import RunningServer, running_server

pytestmark = pytest.mark.slow  # headless Chromium against a real-model server

MARKDOWN = ("httpx", "docs", "advanced", "timeouts.md")
PDF_KEPT = "google-doc-document.pdf"
PDF_DELETED = "pdflatex-outline.pdf"
QUESTION = "How do I set a timeout on a client?"
PDF_QUESTION = "Is explicit better than implicit?"
STAGE_COUNT = 8



@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory, browser: Any) -> Iterator[RunningServer]:
    with running_server(tmp_path_factory.mktemp("ui-server")) as running:
        yield running


@pytest.fixture(scope="module")
def indexed(server: RunningServer, shared_data: Path) -> None:
    """The Markdown file and the kept PDF are in the index (uploaded over HTTP unless already there)."""
    paths = [shared_data / "markdown_docs" / Path(*MARKDOWN), shared_data / "pdfs" / PDF_KEPT]
    files = [("files", (path.name, path.read_bytes())) for path in paths]
    response = httpx.post(f"{server.url}/api/documents", files=files, timeout=180.0)
    assert response.status_code in (200, 201), response.text
    assert {item["status"] for item in response.json()["files"]} <= {"ingested", "duplicate"}


def _rows(page: Any) -> dict[str, Any]:
    """The documents table: file name -> row locator."""
    rows = page.locator("#documents tbody tr")
    return {rows.nth(i).locator("td").nth(1).inner_text(): rows.nth(i) for i in range(rows.count())}


def test_documents_upload_delete_reindex(page: Any, server: RunningServer, shared_data: Path):
    from playwright.sync_api import expect

    page.goto("/ui/documents.html")
    expect(page.locator("#list-status")).to_have_text("No documents yet: upload some above.")
    page.evaluate(WATCH_UPLOAD)
    markdown = shared_data / "markdown_docs" / Path(*MARKDOWN)
    pdfs = [shared_data / "pdfs" / PDF_KEPT, shared_data / "pdfs" / PDF_DELETED]
    page.set_input_files("#files", [str(markdown), *map(str, pdfs)])
    page.locator("#files").focus()
    page.keyboard.press("Tab")
    expect(page.locator("#upload-button")).to_be_focused()
    page.keyboard.press("Enter")
    expect(page.locator("#upload-status")).to_have_text("3 of 3 file(s) landed")
    expect(page.locator("#upload-progress-row")).to_be_hidden()
    seen = page.evaluate("window.__uploadStates")
    busy = [state for state in seen if state["progress"] and state["buttonDisabled"]]
    assert any(state["status"] == "Uploaded; indexing…" and state["value"] == 1 for state in busy), seen
    results = page.locator("#upload-results tbody tr")
    expect(results).to_have_count(3)
    for i in range(3):
        expect(results.nth(i).locator(".badge")).to_have_text("ingested")
    rows = _rows(page)
    assert set(rows) == {markdown.name, *(path.name for path in pdfs)}
    assert rows[PDF_DELETED].locator("td").nth(2).inner_text() == "application/pdf"
    assert int(rows[markdown.name].locator("td").nth(3).inner_text()) > 0

    rows[PDF_DELETED].get_by_role("button", name=re.compile("^Delete")).click()
    expect(page.locator("#list-status")).to_have_text(re.compile("^Deleted "))
    expect(page.locator("#documents tbody tr")).to_have_count(2)
    assert PDF_DELETED not in _rows(page)
    listed = {doc["metadata"]["filename"] for doc in httpx.get(f"{server.url}/api/documents").json()}
    assert listed == {markdown.name, PDF_KEPT}
    expect(page.locator("#documents button.danger:focus")).to_have_count(1)  # the focus stays in the list

    page.get_by_role("button", name="Reindex all").click()
    expect(page.locator("#list-status")).to_have_text(re.compile(r"^Reindexed 2 document\(s\), \d+ chunks$"))
    expect(page.locator("#documents tbody tr")).to_have_count(2)


def _wait_answered(page: Any, index: int) -> Any:
    from playwright.sync_api import expect

    answer = page.locator("article.message.assistant").nth(index)
    expect(answer.locator(".meta .badge")).to_be_visible()
    expect(page.locator("#send")).to_be_enabled()
    return answer


def test_chat_streams_cited_answer(page: Any, indexed: None):
    from playwright.sync_api import expect

    page.goto("/ui/")
    expect(page.locator("#question")).to_be_focused()
    page.keyboard.type(QUESTION)
    page.keyboard.press("Enter")
    expect(page.locator(".message.user")).to_have_text(QUESTION)
    expect(page.locator("#question")).to_have_value("")
    answer = _wait_answered(page, 0)
    text = answer.locator(".text").inner_text()
    assert "timeout" in text.lower()

    links = answer.locator("a.cite")
    assert links.count() >= 1
    sources = page.locator("#sources li")
    numbers = {int(links.nth(i).get_attribute("data-number")) for i in range(links.count())}
    assert {int(sources.nth(i).get_attribute("data-number")) for i in range(sources.count())} == numbers
    first = sources.first
    assert first.locator(".doc").inner_text() == "timeouts"
    assert first.get_attribute("data-section") and first.locator(".where").inner_text().startswith("§ ")
    assert 0 < float(first.get_attribute("data-score")) <= 1
    assert re.search(r"score \d\.\d\d", first.locator(".where").inner_text())

    badge = answer.locator(".meta .badge")
    assert re.fullmatch(r"(High|Medium|Low) confidence", badge.inner_text())
    assert answer.locator(".confidence-reason").inner_text().strip()

    # The citation link moves the focus to its source entry (keyboard: Tab to it, Enter).
    link = links.first
    link.focus()
    page.keyboard.press("Enter")
    target = page.locator(f"#{link.get_attribute('href')[1:]}")
    expect(target).to_be_focused()
    expect(target).to_have_class(re.compile("flash"))

    # A follow-up about the PDF: its source shows the page; each answer keeps its own sources.
    page.locator("#question").fill(PDF_QUESTION)
    page.locator("#question").press("Enter")
    second = _wait_answered(page, 1)
    assert second.locator("a.cite").count() >= 1
    pdf_source = page.locator("#sources li[data-page]").first
    expect(pdf_source).to_be_visible()
    assert pdf_source.get_attribute("data-page") == "1" and "page 1" in pdf_source.locator(".where").inner_text()
    assert pdf_source.locator(".doc").inner_text() == "PDF Example Document"  # the PDF's title
    answer.locator("a.cite").first.click()
    expect(page.locator("#sources li .doc").first).to_have_text("timeouts")

    # A PDF source opens the document view at its page, the cited chunk highlighted.
    second.locator("a.cite").first.click()
    page.locator("#sources li[data-page] .doc a").first.click()
    expect(page.locator("#doc-title")).to_have_text("PDF Example Document")
    expect(page.locator("#page-1")).to_have_text("Page 1")
    cited = page.locator("article.doc-chunk.cited")
    expect(cited).to_be_focused()
    expect(cited.locator(".chunk-head")).to_contain_text("page 1")


def test_chat_stop_marks_answer_incomplete(page: Any, indexed: None):
    """Stop aborts the stream: the answer is marked as stopped and the form is usable again."""
    from playwright.sync_api import expect

    page.goto("/ui/")
    held: list[Any] = []
    page.route("**/api/chat", lambda route: held.append(route))  # the request waits until Stop aborts it
    page.locator("#question").fill(QUESTION)
    page.locator("#question").press("Enter")
    expect(page.locator("#stop")).to_be_enabled()
    expect(page.locator("#send")).to_be_disabled()
    page.keyboard.press("Escape")
    expect(page.locator("article.message.assistant.incomplete")).to_have_count(1)
    expect(page.locator("#chat-status")).to_have_text("Stopped.")
    expect(page.locator("#send")).to_be_enabled()
    expect(page.locator("#question")).to_be_focused()
    assert len(held) == 1
    page.unroute_all(behavior="ignoreErrors")


def _stage_buttons(page: Any) -> Any:
    return page.locator("#stages button")


def test_pipeline_stages_one_by_one_then_auto(page: Any, indexed: None):
    from playwright.sync_api import expect

    page.goto("/ui/pipeline.html")
    buttons = _stage_buttons(page)
    expect(buttons).to_have_count(STAGE_COUNT)
    for i in range(STAGE_COUNT):
        expect(buttons.nth(i)).to_be_disabled()
    expect(page.locator("#auto")).to_be_disabled()
    page.locator("#prompt").fill(QUESTION)
    page.get_by_role("button", name="New SuperPrompt").click()
    expect(page.locator("#progress")).to_have_text(f"(0 of {STAGE_COUNT} ran)")

    names = [buttons.nth(i).get_attribute("data-stage") for i in range(STAGE_COUNT)]
    lengths: list[int] = []  # the Super-Prompt box after each stage: it fills as the stages run
    for step, name in enumerate(names):
        for i in range(STAGE_COUNT):  # only the stage whose predecessor ran is enabled
            if i == step:
                expect(buttons.nth(i)).to_be_enabled()
            else:
                expect(buttons.nth(i)).to_be_disabled()
        buttons.nth(step).click()
        expect(page.locator("#progress")).to_have_text(f"({step + 1} of {STAGE_COUNT} ran)")
        expect(buttons.nth(step)).to_have_attribute("data-state", "done")
        if name == "Retrieval":
            cells = page.locator('#views td[data-view="retrieval"][data-score]')
            assert cells.count() > 0
            assert float(cells.first.get_attribute("data-score")) > 0
            assert re.fullmatch(r"[0-9a-f]{8}", page.locator("#views tbody tr code").first.inner_text())
        lengths.append(len(page.locator("#prompt-ready").inner_text()))
    expect(page.locator("#status")).to_have_text(f"Prompt_Builder: all {STAGE_COUNT} stages ran.")
    for i in range(STAGE_COUNT):
        expect(buttons.nth(i)).to_be_disabled()
    assert lengths == sorted(lengths) and lengths[-1] > lengths[0] > 0, lengths
    ready = page.locator("#prompt-ready").inner_text()
    assert QUESTION in ready and "## S_CTX" in ready and "timeouts.md" in ready
    for view, name in (("retrieval", "Retrieval"), ("reranked", "ReRanker"), ("a3", "A3_NLI_Gate"), ("a4", "A4_Condenser")):
        expect(page.locator(f'#views section[data-view="{view}"]')).to_have_count(1)
        expect(page.locator(f'#views section[data-view="{view}"] h3')).to_contain_text(name)  # from the registry
    # The gate's summary counts its typed decisions; the views narrow their parent's, named by the registry.
    expect(page.locator('#views section[data-view="a3"] h3')).to_contain_text(re.compile(r"kept \d+"))
    expect(page.locator('#views section[data-view="a4"] th').filter(has_text="rank in A3_NLI_Gate")).to_have_count(1)
    expect(page.locator('#reports li[data-stage="preprocessed"] strong')).to_have_text("A0_PreProcessing")
    assert page.locator('#views td[data-view="reranked"][data-score]').count() > 0
    # The packaged cross-encoder ran: its relevance and the fused score beside the final score, no fallback line.
    assert page.locator('#views td.cross[data-cross]:not([data-cross=""])').count() > 0
    assert page.locator('#views section[data-view="reranked"] td.fused').count() > 0
    expect(page.locator('#reports li[data-stage="reranked"]')).to_have_attribute("data-fallback", "false")
    assert page.locator("#views td.final").count() > 0

    # A fresh run with Auto: a new prompt, all stages in one click.
    page.locator("#prompt").fill("What does the pool timeout limit?")
    expect(page.locator("#auto")).to_be_enabled()
    page.locator("#auto").focus()
    page.keyboard.press("Enter")
    expect(page.locator("#status")).to_have_text(f"Auto: all {STAGE_COUNT} stages ran, then Answer: done.")
    expect(page.locator("#progress")).to_have_text(f"({STAGE_COUNT} of {STAGE_COUNT} ran)")
    for i in range(STAGE_COUNT):
        expect(buttons.nth(i)).to_have_attribute("data-state", "done")
    expect(page.locator("#prompt-ready")).to_contain_text("What does the pool timeout limit?")
    expect(page.locator("#prompt-ready")).to_be_focused()
