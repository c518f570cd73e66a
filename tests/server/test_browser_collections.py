"""The collections UI in headless Chromium against a real ``ragstream serve`` process (hash embedder): the Chat
page's collection picker scopes the answer (its sources only from the picked collection); the Documents page
filters by collection, moves a document to another collection, creates a collection and edits its description,
instructions and access. Each step is checked in the page and then through the HTTP API."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from support.browser_fixtures import checked_page
from support.server_process import RunningServer, running_server
from support.user_keys import ADMIN_KEY, ALICE_KEY, BOB_KEY, key_client, keys_json

pytestmark = pytest.mark.slow  # headless Chromium

HANDBOOK = (b"# Leave policy\n\nThe notice period for leaving the company is three months, given in writing to "
            b"your manager. Holidays are twenty-five days a year.\n")
MINUTES = (b"# Meeting minutes\n\nThe meeting discussed the notice period for leaving the company: staff asked "
           b"whether the notice period could be shorter than three months.\n")
GLOSSARY = b"# Glossary\n\nA widget is the small device the product team ships; a gadget is its larger sibling.\n"
NOTICE = "What is the notice period for leaving the company?"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory, browser: Any) -> Iterator[RunningServer]:
    with running_server(tmp_path_factory.mktemp("ui-collections"), hash_embedder=True) as running:
        for name in ("hr", "product"):
            created = httpx.post(f"{running.url}/api/collections", json={"name": name}, timeout=60.0)
            assert created.status_code == 201, created.text
        for collection, filename, body in (("hr", "handbook.md", HANDBOOK), ("product", "minutes.md", MINUTES),
                                           ("product", "glossary.md", GLOSSARY)):
            uploaded = httpx.post(f"{running.url}/api/documents", files={"files": (filename, body)},
                                  data={"collection": collection}, timeout=180.0)
            assert uploaded.status_code in (200, 201), uploaded.text
        yield running


def _ask(page: Any, question: str) -> Any:
    from playwright.sync_api import expect

    page.locator("#question").fill(question)
    page.locator("#question").press("Enter")
    answer = page.locator("article.message.assistant").last
    expect(answer.locator(".meta .badge")).to_be_visible()  # the done event arrived
    return answer


def test_the_chat_picker_scopes_the_answer_to_one_collection(page: Any, server: RunningServer) -> None:
    from playwright.sync_api import expect

    page.goto("/ui/")
    picker = page.locator("#collection")
    expect(picker.locator("option")).to_have_text(["All collections", "default (0)", "hr (1)", "product (2)"])

    _ask(page, NOTICE)  # unscoped: the minutes (product) speak of the notice period too
    sources = page.locator("#sources li")
    expect(sources.first).to_be_visible()
    unscoped = sources.locator(".collections").all_inner_texts()
    assert "in product" in unscoped and "in hr" in unscoped, unscoped

    picker.select_option("hr")
    _ask(page, NOTICE)
    expect(sources.first).to_be_visible()
    expect(sources.locator(".collections")).to_have_text(["in hr"] * sources.count())
    assert set(sources.locator(".doc a").all_inner_texts()) == {"Leave policy"}


def test_the_documents_page_filters_moves_creates_and_edits_collections(page: Any, server: RunningServer) -> None:
    from playwright.sync_api import expect

    page.goto("/ui/documents.html")
    rows = page.locator("#documents tbody tr")
    expect(rows).to_have_count(3)
    page.locator("#collection").select_option("product")
    expect(rows.locator("a.title")).to_have_text(["Glossary", "Meeting minutes"])

    # create a collection with its description, instructions and access
    form = page.locator("#collection-form")
    form.get_by_label("Collection", exact=True).select_option("")
    form.get_by_label("Name").fill("legal")
    form.get_by_label("Description").fill("Contracts and terms")
    form.get_by_label("Instructions").fill("Quote the clause number.")
    form.get_by_label("Access").select_option("all")
    form.get_by_role("button", name="Save").click()
    expect(page.locator("#collection-status")).to_have_text("Created legal")
    legal = httpx.get(f"{server.url}/api/collections/legal", timeout=60.0).json()
    assert (legal["description"], legal["instructions"], legal["access"]) == \
        ("Contracts and terms", "Quote the clause number.", "all")

    # edit it: the picked collection's fields are filled in, changed and saved
    form.get_by_label("Collection", exact=True).select_option("legal")
    expect(form.get_by_label("Description")).to_have_value("Contracts and terms")
    form.get_by_label("Description").fill("Contracts, terms and the glossary")
    form.get_by_label("Instructions").fill("Quote the clause number and its date.")
    form.get_by_label("Access").select_option("readers")
    form.get_by_label("Readers").fill("alice, bob")
    form.get_by_role("button", name="Save").click()
    expect(page.locator("#collection-status")).to_have_text("Saved legal")
    legal = httpx.get(f"{server.url}/api/collections/legal", timeout=60.0).json()
    assert (legal["description"], legal["instructions"], legal["access"], legal["readers"]) == \
        ("Contracts, terms and the glossary", "Quote the clause number and its date.", "readers", ["alice", "bob"])

    # move the glossary from product (the collection shown) to legal
    glossary = rows.filter(has_text="Glossary")
    glossary.get_by_label("Put Glossary in a collection").select_option("legal")
    expect(page.locator("#list-status")).to_have_text("Glossary: moved to legal")
    expect(rows.locator("a.title")).to_have_text(["Meeting minutes"])
    page.locator("#collection").select_option("legal")
    expect(rows.locator("a.title")).to_have_text(["Glossary"])
    document_id = rows.first.get_attribute("data-id")
    for name, expected in (("legal", [document_id]), ("product", [])):  # a move: in legal, out of product
        listed = httpx.get(f"{server.url}/api/documents/page", params={"collection": name, "q": "Glossary"}, timeout=60.0)
        assert [item["document_id"] for item in listed.json()["items"]] == expected, listed.text
    page.locator("#collection").select_option("")
    expect(rows).to_have_count(3)
    expect(page.locator("#collection option", has_text=re.compile(r"^legal"))).to_have_count(1)


def test_the_pickers_send_the_qualified_name_of_a_name_two_users_have(browser: Any, tmp_path: Path) -> None:
    """Alice and Bob each own a private ``notes`` (names are per owner); the admin reads both, so for the admin the
    bare name is ambiguous: each picker offers and sends ``alice:notes`` / ``bob:notes``, and the answer and the
    document list read the one picked."""
    from playwright.sync_api import expect

    with running_server(tmp_path, hash_embedder=True, SERVER__KEYS=keys_json()) as server:
        for key, title, months in ((ALICE_KEY, "Alice's notes", "two"), (BOB_KEY, "Bob's notes", "four")):
            with key_client(server.url, key) as api:
                created = api.post("/api/collections", json={"name": "notes"})
                assert created.status_code == 201, created.text
                body = f"# {title}\n\nThe notice period for leaving the company is {months} months in this team.\n"
                uploaded = api.post("/api/documents", files={"files": ("notes.md", body.encode())}, data={"collection": "notes"})
                assert uploaded.status_code in (200, 201), uploaded.text
        with checked_page(browser, server.url) as page:
            page.set_extra_http_headers({"Authorization": f"Bearer {ADMIN_KEY}"})
            page.goto("/ui/")
            picker = page.locator("#collection")
            expect(picker.locator("option", has_text="notes")).to_have_count(2)
            assert sorted(picker.locator("option", has_text="notes").all_inner_texts()) == [
                "alice:notes (1)", "bob:notes (1)"]
            picker.select_option("bob:notes")
            _ask(page, NOTICE)
            sources = page.locator("#sources li")
            expect(sources.first).to_be_visible()
            assert set(sources.locator(".doc a").all_inner_texts()) == {"Bob's notes"}

            page.goto("/ui/documents.html")
            rows = page.locator("#documents tbody tr")
            expect(rows).to_have_count(2)
            page.locator("#collection").select_option("alice:notes")
            expect(rows.locator("a.title")).to_have_text(["Alice's notes"])
