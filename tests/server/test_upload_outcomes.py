"""Uploads against real ``ragstream serve`` processes over HTTP: a batch answers each file's outcome whatever one
file's reading or ingest raises, no stored upload outlives a failed ingest (nor a crash: the start-up sweep), and
uploads whose reading is much more work than their size go to a background job.

The servers embed with the hash embedder: every check here is about outcomes, not ranking.
"""

from __future__ import annotations

import contextlib
import json
import signal
import sqlite3
import threading
import time
from collections.abc import Iterator
from contextlib import closing
from pathlib import Path

import httpx
import pytest
from support.hostile_uploads import (
    blank_pdf,
    blank_png,
    blank_tiff,
    deflate64_odt,
    inflating_docx,
    nested_odt,
    text_pdf,
    truncated_docx,
)
from support.polling import finished_job
from support.required import EXTRAS, unavailable
from support.server_process import RunningServer, running_server
from support.upload_faults import HANG_MARKER, INGEST_MARKER, READ_MARKER

from ragstream.documents.ocr import ocr_installed
from ragstream.models import UPLOAD_PATH_KEY

TIMEOUT = httpx.Timeout(120.0)
JOB_POLL_SECONDS = 0.2
JOB_POLLS = 1500  # a bound on the polling loop, not a performance assertion
DOCUMENT_ERRORS = {"corrupt_document", "document_too_large", "unsupported_file_type", "empty_document"}
GOOD = [("files", ("alpha.md", b"# Alpha\n\nOtters hold hands while they sleep.\n")),
        ("files", ("beta.md", b"# Beta\n\nPuffins nest in burrows on sea cliffs.\n"))]
BACKGROUND_BYTES = 100_000
BACKGROUND_UNPACKED = 2_000_000  # python-docx's template alone unpacks to 829 KB (its styles)
BACKGROUND_OCR_PAGES = 2


def stored_files(data_dir: Path) -> set[str]:
    root = data_dir / "uploads"
    return {path.relative_to(root).as_posix() for path in root.rglob("*") if path.is_file()} if root.exists() else set()


def live_upload_paths(data_dir: Path) -> set[str]:
    """The stored files the catalog's live documents name (private metadata: not shown over HTTP)."""
    with closing(sqlite3.connect(f"{(data_dir / 'catalog.sqlite3').as_uri()}?mode=ro", uri=True)) as db:
        rows = db.execute("SELECT metadata FROM documents").fetchall()
    return {path for (metadata,) in rows if (path := json.loads(metadata).get(UPLOAD_PATH_KEY))}


def outcomes(body: dict) -> dict[str, tuple[str, str | None]]:
    return {item["filename"]: (item["status"], item["error"]["code"] if item.get("error") else None)
            for item in body["files"]}


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    with running_server(tmp_path_factory.mktemp("outcomes"), hash_embedder=True, upload_faults=True) as running:
        yield running


@pytest.fixture(scope="module")
def api(server: RunningServer) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=server.url, timeout=TIMEOUT) as client:
        yield client


def test_a_batch_with_hostile_files_answers_each_outcome(server: RunningServer, api: httpx.Client):
    """Issue 30.5: a batch holding a 5,000-span .odt answered 500 although its good files were committed."""
    files = [GOOD[0], ("files", ("deep.odt", nested_odt())), ("files", ("cut.docx", truncated_docx())),
             ("files", ("deflate64.odt", deflate64_odt())), GOOD[1]]
    response = api.post("/api/documents", files=files)
    assert response.status_code == 201, response.text
    body = response.json()
    found = outcomes(body)
    assert found["alpha.md"] == found["beta.md"] == ("ingested", None)
    hostile = ("deep.odt", "cut.docx", "deflate64.odt")
    assert {found[name][0] for name in hostile} == {"failed"}
    assert {found[name][1] for name in hostile} <= DOCUMENT_ERRORS
    assert body["ingested"] == 2 and body["failed"] == 3
    listed = {doc["metadata"]["filename"] for doc in api.get("/api/documents").json()}
    assert {"alpha.md", "beta.md"} <= listed and not set(hostile) & listed
    assert stored_files(server.data_dir) == live_upload_paths(server.data_dir)  # no copy of a failed file stays
    alone = api.post("/api/documents", files=[("files", ("deep-again.odt", nested_odt()))])
    assert alone.status_code in (413, 422), alone.text  # the shared error's 4xx, never a 500
    assert alone.json()["error"]["code"] in DOCUMENT_ERRORS
    assert stored_files(server.data_dir) == live_upload_paths(server.data_dir)


def test_a_readers_unexpected_exception_fails_that_file_alone(server: RunningServer, api: httpx.Client):
    """Any exception a reader raises (not only ragstream's typed errors) is that file's outcome."""
    files = [("files", ("gamma.md", b"# Gamma\n\nNarwhals use their tusks to sense the water.\n")),
             ("files", (f"{READ_MARKER}.md", b"# Fault\n\nThe reader raises on this one.\n"))]
    response = api.post("/api/documents", files=files)
    assert response.status_code == 201, response.text
    found = outcomes(response.json())
    assert found["gamma.md"] == ("ingested", None)
    assert found[f"{READ_MARKER}.md"] == ("failed", "corrupt_document")
    assert "RuntimeError" in response.json()["files"][1]["error"]["message"]
    alone = api.post("/api/documents", files=[("files", (f"{READ_MARKER}-2.md", b"# Fault\n\nAgain.\n"))])
    assert alone.status_code == 422 and alone.json()["error"]["code"] == "corrupt_document", alone.text
    assert stored_files(server.data_dir) == live_upload_paths(server.data_dir)
    assert "reading the upload raised RuntimeError" in server.log_text()  # the traceback is in the log


def test_an_unexpected_exception_after_reading_is_that_files_internal_error(server: RunningServer,
                                                                             api: httpx.Client):
    files = [("files", (f"{INGEST_MARKER}.md", b"# Fault\n\nIts ingest raises.\n")),
             ("files", ("delta.md", b"# Delta\n\nSea otters keep a favourite stone.\n"))]
    response = api.post("/api/documents", files=files)
    assert response.status_code == 201, response.text
    found = outcomes(response.json())
    assert found[f"{INGEST_MARKER}.md"] == ("failed", "internal_error") and found["delta.md"] == ("ingested", None)
    message = response.json()["files"][0]["error"]["message"]
    assert "server log" in message and "RuntimeError" not in message  # no internals leak
    assert stored_files(server.data_dir) == live_upload_paths(server.data_dir)


def test_an_upload_stored_when_the_server_was_killed_is_swept_at_start_up(tmp_path: Path):
    """A crash between storing an upload and committing or refusing it left the stored copy with no document."""
    with running_server(tmp_path, hash_embedder=True, upload_faults=True) as first, \
            httpx.Client(base_url=first.url, timeout=TIMEOUT) as api:
        assert api.post("/api/documents", files=[GOOD[0]]).status_code == 201
        kept = live_upload_paths(first.data_dir)
        hanging = threading.Thread(target=post_ignoring_the_crash, daemon=True,
                                   args=(first.url, [("files", (f"{HANG_MARKER}.md", b"# Hang\n\nNever read.\n"))]))
        hanging.start()
        for _ in range(JOB_POLLS):  # until the server stored it and is reading it
            if len(stored_files(first.data_dir)) > len(kept):
                break
            time.sleep(JOB_POLL_SECONDS)
        assert first.process is not None
        first.process.send_signal(signal.SIGKILL)
        first.process.wait()
        hanging.join()
    orphans = stored_files(first.data_dir) - kept
    assert len(kept) == 1 and len(orphans) == 1
    foreign = first.data_dir / "uploads" / "notes.txt"  # not an upload's name: never touched
    foreign.write_text("kept")
    with running_server(tmp_path, hash_embedder=True) as second:
        assert stored_files(second.data_dir) == kept | {"notes.txt"} and live_upload_paths(second.data_dir) == kept
        assert "removed 1 stored upload(s)" in second.log_text()


def post_ignoring_the_crash(url: str, files: list) -> None:
    with contextlib.suppress(httpx.TransportError):
        httpx.post(f"{url}/api/documents", files=files, timeout=TIMEOUT)


@pytest.fixture(scope="module")
def jobs_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    with running_server(tmp_path_factory.mktemp("workload"), hash_embedder=True,
                        SERVER__BACKGROUND_INGEST_BYTES=str(BACKGROUND_BYTES),
                        SERVER__BACKGROUND_UNPACKED_BYTES=str(BACKGROUND_UNPACKED),
                        SERVER__BACKGROUND_OCR_PAGES=str(BACKGROUND_OCR_PAGES)) as running:
        yield running


@pytest.mark.parametrize(("name", "make"), [
    ("inflating.docx", lambda: inflating_docx(BACKGROUND_UNPACKED)),
    ("scanned.pdf", lambda: blank_pdf(BACKGROUND_OCR_PAGES + 1)),
    ("scans.tiff", lambda: blank_tiff(BACKGROUND_OCR_PAGES + 1)),
])
def test_uploads_heavier_than_their_size_go_to_a_job(jobs_server: RunningServer, name: str, make):
    """A small .docx that unpacks to megabytes, or a scanned PDF or TIFF of many pages held the request while it was
    read."""
    if name != "inflating.docx" and not ocr_installed():
        unavailable("the ocr extra is not installed: nothing is read by OCR", EXTRAS)
    data = make()
    assert len(data) < BACKGROUND_BYTES  # small on the wire: only its work sends it to a job
    with httpx.Client(base_url=jobs_server.url, timeout=TIMEOUT) as api:
        response = api.post("/api/documents", files=[("files", (name, data))])
        assert response.status_code == 202, response.text
        job = finished_job(api, response.json()["id"])
        assert job["files_done"] == 1 and job["files"][0]["status"] in ("ingested", "failed"), job
        assert stored_files(jobs_server.data_dir) == live_upload_paths(jobs_server.data_dir)


def test_light_uploads_stay_synchronous(jobs_server: RunningServer):
    light = [("files", ("scanned.pdf", blank_pdf(BACKGROUND_OCR_PAGES - 1))), ("files", ("small.png", blank_png(50, 50))),
             ("files", ("text.pdf", text_pdf(BACKGROUND_OCR_PAGES * 5))),
             ("files", ("plain.docx", inflating_docx(BACKGROUND_UNPACKED // 10))), GOOD[1]]
    with httpx.Client(base_url=jobs_server.url, timeout=TIMEOUT) as api:
        response = api.post("/api/documents", files=light)
        assert response.status_code == 201, response.text
        found = outcomes(response.json())
        assert found["plain.docx"] == found["text.pdf"] == ("ingested", None)
        assert stored_files(jobs_server.data_dir) == live_upload_paths(jobs_server.data_dir)
