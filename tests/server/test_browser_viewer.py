"""The document viewer in headless Chromium against a real ``ragstream serve`` process (hash embedder, no LLM: the
extractive answer), issue 44 items 2 and 4.

A person uploads a three-page PDF, asks about something said on its second page, clicks the citation and then its
source: the viewer draws page 2 of the original file with pdf.js and highlights the text-layer spans of the cited
passage (``docs/screenshots/viewer.png``); the page buttons move through the document. A Markdown source opens
its text with the passage in a ``<mark>``. A PDF whose stored original is gone opens as its text, marked the same.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from support.browser_fixtures import checked_page, screenshot
from support.pdf_files import lines_pdf
from support.server_process import RunningServer, running_server

pytestmark = pytest.mark.slow  # headless Chromium

MANUAL_TITLE = "Skerry Point Keepers Manual"
MANUAL = lines_pdf([
    ["The lighthouse at Skerry Point stands on a rock two miles from the harbour.",
     "Keepers live in the cottage beside the tower and work in shifts of twelve hours.",
     "Supplies arrive by boat every second Tuesday when the sea allows it."],
    ["Lighting the lamp",
     "The keeper lights the lamp thirty minutes before sunset and trims the wick",
     "every four hours through the night. The lens turns once every ten seconds,",
     "driven by a clockwork motor that the keeper winds at midnight.",
     "Fog signal",
     "When visibility falls below two miles the keeper sounds the foghorn twice",
     "every minute until the fog lifts."],
    ["Log book",
     "Every event of the watch goes into the log book in ink, with the time and the weather."],
], title=MANUAL_TITLE)
PDF_QUESTION = "When does the keeper light the lamp before sunset?"
PASSAGE_WORDS = ("keeper", "lights", "lamp", "thirty", "minutes", "sunset")
GARDEN = (b"# Garden\n\nThe roses are pruned in late winter, before the buds swell. "
          b"Compost is spread around the beds in spring.\n\n## Watering\n\n"
          b"Water the tomatoes at the root every morning in dry weather.\n")
GARDEN_QUESTION = "When are the roses pruned?"
LOG = lines_pdf([["The harbour log of the ferry."], ["The ferry leaves the quay at seven and returns at noon."]],
                title="Ferry log")


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory, browser: Any) -> Iterator[RunningServer]:
    with running_server(tmp_path_factory.mktemp("ui-viewer"), hash_embedder=True) as running:
        files = [("files", ("keepers-manual.pdf", MANUAL)), ("files", ("garden.md", GARDEN)),
                 ("files", ("ferry-log.pdf", LOG))]
        response = httpx.post(f"{running.url}/api/documents", files=files, timeout=180.0)
        assert response.status_code == 201, response.text
        assert [item["status"] for item in response.json()["files"]] == ["ingested"] * 3
        yield running


def _ask_and_open_source(page: Any, question: str, title: str) -> None:
    """Ask on the Chat page, click the answer's first citation, then its source's document link."""
    from playwright.sync_api import expect

    page.goto("/ui/")
    page.locator("#question").fill(question)
    page.locator("#question").press("Enter")
    answer = page.locator("article.message.assistant").first
    expect(answer.locator(".meta .badge")).to_be_visible()
    answer.locator("a.cite").first.click()
    source = page.locator(f"#sources li[data-document='{title}']").first
    expect(source).to_be_visible()
    source.locator(".doc a").click()
    expect(page.locator("#doc-title")).to_have_text(title)


INK = """(canvas) => {
  const { data } = canvas.getContext("2d").getImageData(0, 0, canvas.width, canvas.height);
  let dark = 0;
  for (let i = 0; i < data.length; i += 4) if (data[i + 3] > 0 && data[i] < 128) dark += 1;
  return dark;
}"""


def _highlighted(page: Any) -> str:
    return " ".join(page.locator("#pdf-page .textLayer .passage").all_inner_texts())


def test_pdf_citation_opens_the_cited_page_with_the_passage_highlighted(page: Any):
    from playwright.sync_api import expect

    _ask_and_open_source(page, PDF_QUESTION, MANUAL_TITLE)
    assert "quote=" in page.url and "page=2" in page.url, page.url
    expect(page.locator("#viewer")).to_be_visible()
    expect(page.locator("#page-number")).to_have_text("2 of 3")
    expect(page.locator("#viewer-status")).to_have_text("The cited passage is highlighted.")
    canvas = page.locator("#pdf-page canvas")
    expect(canvas).to_have_attribute("aria-label", "Page 2")
    assert canvas.evaluate(INK) > 0  # the page is drawn, not a blank canvas
    spans = page.locator("#pdf-page .textLayer .passage")
    expect(spans.first).to_be_in_viewport()
    text = _highlighted(page)
    assert all(word in text for word in PASSAGE_WORDS), text
    assert "Supplies arrive" not in text and "Log book" not in text
    background = spans.first.evaluate("(span) => getComputedStyle(span).backgroundColor")
    assert background not in ("rgba(0, 0, 0, 0)", "transparent"), background
    expect(page.locator("article.doc-chunk.cited mark.passage").first).to_contain_text("thirty minutes")
    download = page.locator("#download")
    assert download.get_attribute("href").startswith("blob:") and download.get_attribute("download") == "keepers-manual.pdf"
    screenshot(page, "viewer")

    page.get_by_role("button", name="Next page", exact=True).click()
    expect(page.locator("#page-number")).to_have_text("3 of 3")
    expect(page.locator("#pdf-page canvas")).to_have_attribute("aria-label", "Page 3")
    expect(page.locator("#next-page")).to_be_disabled()
    expect(page.locator("#viewer-status")).to_have_text("The cited passage is on page 2.")
    expect(page.locator("#pdf-page .textLayer .passage")).to_have_count(0)
    page.get_by_role("button", name="Previous page", exact=True).click()
    expect(page.locator("#page-number")).to_have_text("2 of 3")
    expect(page.locator("#pdf-page .textLayer .passage").first).to_be_visible()
    assert "thirty" in _highlighted(page)


def test_markdown_citation_opens_its_text_with_the_passage_marked(page: Any):
    from playwright.sync_api import expect

    _ask_and_open_source(page, GARDEN_QUESTION, "Garden")
    expect(page.locator("#viewer")).to_be_hidden()
    mark = page.locator("article.doc-chunk.cited mark.passage").first
    expect(mark).to_be_in_viewport()
    expect(mark).to_contain_text(re.compile("roses are pruned in late winter"))
    expect(page.locator("#doc-status")).to_have_text("")


def test_a_pdf_whose_original_is_gone_opens_as_marked_text(browser: Any, server: RunningServer):
    from playwright.sync_api import expect

    document = next(doc for doc in httpx.get(f"{server.url}/api/documents").json() if doc["title"] == "Ferry log")
    chunk = next(c for c in httpx.get(f"{server.url}/api/documents/{document['document_id']}/chunks").json()
                 if "seven" in c["text"])
    stored = next(path for path in Path(server.data_dir, "uploads").rglob("*") if path.is_file()
                  and path.read_bytes() == LOG)
    stored.unlink()  # the stored original is lost (a restore without the uploads folder)

    file = f"/api/documents/{document['document_id']}/file"
    with checked_page(browser, server.url, expected_failures=(file,)) as page:  # the browser logs the 404 it gets
        page.goto(f"/ui/document.html?id={document['document_id']}&chunk={chunk['chunk_id']}&page=2")
        expect(page.locator("#doc-status")).to_contain_text("The original file cannot be shown")
        expect(page.locator("#doc-status")).to_contain_text("original_unavailable")
        expect(page.locator("#viewer")).to_be_hidden()
        mark = page.locator("article.doc-chunk.cited mark.passage").first
        expect(mark).to_contain_text("The ferry leaves the quay at seven")
        expect(mark).to_be_in_viewport()
