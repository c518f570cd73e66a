"""The Documents page follows a background ingest job (a large upload answered 202) in headless Chromium.

A hash-embedder server whose background threshold is small; the browser and page fixtures (and their
skip rules) come from ``support/browser_fixtures.py``.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from support.browser_fixtures import WATCH_UPLOAD
from support.server_process import RunningServer, running_server

FILES = 5
BACKGROUND_BYTES = 2000


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory, browser: Any) -> Iterator[RunningServer]:
    with running_server(tmp_path_factory.mktemp("ui-jobs"), hash_embedder=True,
                        SERVER__BACKGROUND_INGEST_BYTES=str(BACKGROUND_BYTES)) as running:
        yield running


def test_large_upload_shows_job_progress(page: Any, server: RunningServer, tmp_path: Path):
    from playwright.sync_api import expect

    paths = []
    for i in range(FILES):
        path = tmp_path / f"notes{i}.md"
        path.write_text(f"# Notes {i}\n\n" + f"Paragraph about topic {i} and its details. " * 20)
        paths.append(path)
    assert sum(path.stat().st_size for path in paths) > BACKGROUND_BYTES
    page.goto("/ui/documents.html")
    page.evaluate(WATCH_UPLOAD)
    page.set_input_files("#files", [str(path) for path in paths])
    page.get_by_role("button", name="Upload").click()
    expect(page.locator("#upload-status")).to_have_text(f"{FILES} of {FILES} file(s) landed")
    seen = [state["status"] for state in page.evaluate("window.__uploadStates")]
    assert any(status.startswith("Indexing in the background") for status in seen), seen
    results = page.locator("#upload-results tbody tr")
    expect(results).to_have_count(FILES)
    for i in range(FILES):
        expect(results.nth(i).locator(".badge")).to_have_text("ingested")
    expect(page.locator("#documents tbody tr")).to_have_count(FILES)
    listed = {doc["metadata"]["filename"] for doc in httpx.get(f"{server.url}/api/documents").json()}
    assert listed == {path.name for path in paths}
