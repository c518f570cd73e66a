"""The Documents page's synced folders in headless Chromium, against a real ``ragstream serve --watch`` process
(hash embedder): the watched root with its state, document count and last sync; a file added to the folder
shows in the document list without a reload; "Sync now" queues a sync of the root."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from support.browser_fixtures import checked_page, launched_browser
from support.server_process import running_server

pytestmark = pytest.mark.slow  # headless Chromium

QUICK_SYNC = {"SYNC__DEBOUNCE_MS": "200", "SYNC__MAX_DEBOUNCE_MS": "2000", "SYNC__STABLE_SECONDS": "0.5",
              "SYNC__POLL_SECONDS": "0.2", "SYNC__HEARTBEAT_SECONDS": "1"}


@pytest.fixture
def browser() -> Iterator[Any]:
    with launched_browser() as launched:
        yield launched


def test_documents_page_shows_watched_folders(browser: Any, tmp_path: Path):
    from playwright.sync_api import expect

    folder = tmp_path / "notes"
    folder.mkdir()
    (folder / "lighthouse.md").write_text("# Lighthouse\n\nThe keeper logs every passing ship.\n")
    (folder / "harbour.txt").write_text("Harbour pilots board ships outside the breakwater.\n")
    root = str(folder.resolve())
    with running_server(tmp_path, hash_embedder=True, args=["--watch", str(folder)], **QUICK_SYNC) as server, \
            checked_page(browser, server.url) as page:
        page.goto("/ui/documents.html")
        row = page.locator(f'#roots tbody tr[data-root="{root}"]')
        expect(row.locator("td").nth(0)).to_have_text(root)
        expect(row.locator(".badge")).to_have_text("watching")
        expect(row.locator("td").nth(2)).to_have_text("2")
        expect(row.locator("td").nth(3)).to_contain_text("UTC")
        expect(page.locator("#roots-status")).to_have_text("1 folder(s), 1 watched")
        expect(page.locator("#documents tbody tr")).to_have_count(2)

        (folder / "tides.md").write_text("# Tides\n\nSpring tides flood the estuary marshes.\n")
        expect(page.locator("#documents tbody tr")).to_have_count(3)  # no reload: the roots poll saw the sync
        expect(page.locator("#documents tbody")).to_contain_text("Tides")
        expect(row.locator("td").nth(2)).to_have_text("3")
        expect(row.locator("td").nth(4)).to_have_text("1 added")

        row.get_by_role("button", name=f"Sync {root} now").click()
        expect(page.locator("#roots-status")).to_contain_text(root)  # "Syncing ROOT…" until the sync is seen done
        expect(page.locator("#roots-status")).to_have_text(f"Synced {root}: no change")  # the full sync found nothing new
        expect(row.locator("td").nth(4)).to_have_text("no change")
