"""``GET /api/documents/{id}/file``: a document's original file for the viewer (issue 44, item 2).

One real ``ragstream serve`` process (hash embedder) with Alice's, Bob's and an admin's keys over an index a CLI
ingest wrote first. Alice gets her PDF inline with its exact bytes; Bob gets 404 ``document_not_found`` for it,
the very answer a missing document gets; an uploaded HTML page comes only as an octet-stream attachment; a
CLI-ingested file is served while it is the file that was ingested, and 404 ``original_unavailable`` once it
changed or moved.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from support.link_folders import run_cli
from support.pdf_files import lines_pdf
from support.server_process import RunningServer, running_server
from support.user_keys import ADMIN_KEY, ALICE_KEY, BOB_KEY, key_client, keys_json

ALICE_PDF = lines_pdf([["Alice's private ledger of the quarry accounts."],
                       ["The second page lists the quarry's debts to the mill."]], title="Quarry ledger")
HTML_PAGE = (b"<!doctype html><html><head><title>Greeting</title><script>alert(document.cookie)</script></head>"
             b"<body><h1>Greeting</h1><p>A page that must never run as this origin.</p></body></html>")
CLI_TEXT = "# Tide tables\n\nHigh water at the harbour is at noon on the first day of the month.\n"
MISSING_ID = "00000000-0000-0000-0000-000000000000"


@pytest.fixture(scope="module")
def cli_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("cli-docs")
    path = folder / "tides.md"
    path.write_text(CLI_TEXT)
    return path


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory, cli_file: Path) -> Iterator[RunningServer]:
    tmp = tmp_path_factory.mktemp("originals")
    data_dir = tmp / "data"
    ingested = run_cli(data_dir, "ingest", str(cli_file))
    assert ingested.returncode == 0, ingested.stderr
    with running_server(tmp, hash_embedder=True, data_dir=data_dir, SERVER__KEYS=keys_json()) as running:
        yield running


@pytest.fixture(scope="module")
def alice(server: RunningServer) -> Iterator[httpx.Client]:
    with key_client(server.url, ALICE_KEY) as api:
        yield api


@pytest.fixture(scope="module")
def bob(server: RunningServer) -> Iterator[httpx.Client]:
    with key_client(server.url, BOB_KEY) as api:
        yield api


def _upload(api: httpx.Client, name: str, data: bytes) -> str:
    response = api.post("/api/documents", files={"files": (name, data)})
    assert response.status_code == 201, response.text
    return str(response.json()["files"][0]["document_id"])


def _assert_served(api: httpx.Client, document_id: str, data: bytes, media_type: str, disposition: str) -> None:
    """The document's file comes back as ``data`` with that type and disposition, never sniffed, running nothing."""
    response = api.get(f"/api/documents/{document_id}/file")
    assert response.status_code == 200, response.text
    assert response.content == data
    assert response.headers["content-type"] == media_type
    assert response.headers["content-disposition"] == disposition
    assert response.headers["x-content-type-options"] == "nosniff"
    csp = response.headers["content-security-policy"]
    assert "default-src 'none'" in csp and "sandbox" in csp, csp


def test_owner_gets_her_pdf_inline_and_another_user_gets_not_found(alice: httpx.Client, bob: httpx.Client):
    document_id = _upload(alice, "ledger.pdf", ALICE_PDF)
    _assert_served(alice, document_id, ALICE_PDF, "application/pdf", "inline; filename*=UTF-8''ledger.pdf")

    theirs = bob.get(f"/api/documents/{document_id}/file")
    missing = bob.get(f"/api/documents/{MISSING_ID}/file")
    assert theirs.status_code == missing.status_code == 404
    assert theirs.json()["error"]["code"] == "document_not_found"
    assert theirs.json()["error"]["message"].replace(document_id, "ID") == \
        missing.json()["error"]["message"].replace(MISSING_ID, "ID")
    assert b"quarry" not in theirs.content


def test_an_uploaded_html_page_is_only_an_attachment(alice: httpx.Client):
    document_id = _upload(alice, "greeting.html", HTML_PAGE)
    _assert_served(alice, document_id, HTML_PAGE, "application/octet-stream",
                   "attachment; filename*=UTF-8''greeting.html")


def _cli_document(api: httpx.Client, source: Path) -> str:
    listed = api.get("/api/documents").json()
    return next(str(doc["document_id"]) for doc in listed if doc["source"] == str(source.resolve()))


def test_a_cli_ingested_file_is_served_only_while_unchanged(server: RunningServer, cli_file: Path):
    with key_client(server.url, ADMIN_KEY) as admin, key_client(server.url, BOB_KEY) as bob:
        document_id = _cli_document(admin, cli_file)
        for api in (admin, bob):  # a CLI ingest is shared: every user may read it
            served = api.get(f"/api/documents/{document_id}/file")
            assert served.status_code == 200, served.text
            assert served.content == CLI_TEXT.encode()

        cli_file.write_text(CLI_TEXT.replace("noon", "midnight"))
        changed = bob.get(f"/api/documents/{document_id}/file")
        assert changed.status_code == 404
        assert changed.json()["error"]["code"] == "original_unavailable"
        assert b"midnight" not in changed.content

        cli_file.rename(cli_file.with_name("moved.md"))
        moved = bob.get(f"/api/documents/{document_id}/file")
        assert moved.status_code == 404
        assert moved.json()["error"]["code"] == "original_unavailable"
        assert bob.get(f"/api/documents/{document_id}").status_code == 200  # the text view still has the document


def test_the_viewer_scripts_are_served_as_javascript(server: RunningServer):
    """Module scripts and module workers load only with a JavaScript content type."""
    for name in ("pdf.min.mjs", "pdf.worker.min.mjs"):
        response = httpx.get(f"{server.url}/ui/vendor/pdfjs/{name}")
        assert response.status_code == 200
        assert response.headers["content-type"].split(";")[0] in ("text/javascript", "application/javascript")
