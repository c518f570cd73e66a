"""Headless Chromium for the web UI tests (not a test module).

Uses Debian's ``chromium`` (``/usr/bin/chromium``) through Playwright's Python package with
``executable_path``: Playwright's own browser download does not work here. The tests skip with the
reason when either is missing, and fail instead when ``RAGSTREAM_REQUIRE_BROWSER=1`` (CI; ``required.py``).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from support.required import BROWSER, require_module, unavailable

CHROMIUM = Path(os.environ.get("RAGSTREAM_CHROMIUM", "/usr/bin/chromium"))
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]
VIEWPORT = {"width": 1280, "height": 900}
SCREENSHOTS = Path(__file__).resolve().parents[2] / "docs" / "screenshots"
TIMEOUT_MS = 120_000


@contextmanager
def launched_browser() -> Iterator[Any]:
    """Chromium, or a skip (a failure under ``RAGSTREAM_REQUIRE_BROWSER=1``) when it cannot start."""
    require_module("playwright", "pip install -e '.[test]'", BROWSER)
    if not CHROMIUM.is_file():
        unavailable(f"no Chromium at {CHROMIUM}: apt-get install -y chromium", BROWSER)
    from playwright.sync_api import Error, expect, sync_playwright

    expect.set_options(timeout=TIMEOUT_MS)  # answers and indexing take seconds on a busy 2-core machine
    with sync_playwright() as playwright:
        try:
            browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        except Error as error:
            unavailable(f"Chromium at {CHROMIUM} did not start: {error}", BROWSER)
        try:
            yield browser
        finally:
            browser.close()


@contextmanager
def checked_page(browser: Any, base_url: str, expected_failures: tuple[str, ...] = ()) -> Iterator[Any]:
    """A fresh 1280-wide page; fails the test on any page error or console error (except the failed loads of
    addresses holding one of ``expected_failures``, which the test brings about)."""
    context = browser.new_context(viewport=VIEWPORT, base_url=base_url)
    context.set_default_timeout(TIMEOUT_MS)
    tab = context.new_page()
    problems: list[str] = []

    def console(message: Any) -> None:
        if message.type == "error" and not any(part in message.location.get("url", "") for part in expected_failures):
            problems.append(f"console: {message.text}")

    tab.on("pageerror", lambda error: problems.append(f"page error: {error}"))
    tab.on("console", console)
    tab.on("dialog", lambda dialog: dialog.accept())
    try:
        yield tab
    finally:
        context.close()
    assert not problems, problems


def screenshot(page: Any, name: str, directory: Path = SCREENSHOTS) -> Path:
    """A full-page PNG of ``page`` as ``directory/name.png`` (focus and hover cleared)."""
    directory.mkdir(parents=True, exist_ok=True)
    page.evaluate("document.activeElement && document.activeElement.blur()")
    page.mouse.move(VIEWPORT["width"] - 1, VIEWPORT["height"] - 1)  # no hover effect in the picture
    path = directory / f"{name}.png"
    page.screenshot(path=str(path), full_page=True)
    return path


# Records every state of the upload status line and progress bar (they change faster than polling).
WATCH_UPLOAD = """() => {
  window.__uploadStates = [];
  const note = () => window.__uploadStates.push({
    status: document.getElementById("upload-status").textContent,
    progress: !document.getElementById("upload-progress-row").hidden,
    value: document.getElementById("upload-progress").value,
    buttonDisabled: document.getElementById("upload-button").disabled});
  new MutationObserver(note).observe(document.querySelector("main"),
    {subtree: true, childList: true, characterData: true, attributes: true});
}"""


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    """Chromium for a test module (see :func:`launched_browser`)."""
    with launched_browser() as launched:
        yield launched


@pytest.fixture
def page(browser: Any, server: Any) -> Iterator[Any]:
    """A fresh 1280-wide page on the module's ``server`` fixture (a RunningServer); fails the test on any page error or console error."""
    with checked_page(browser, server.url) as tab:
        yield tab
