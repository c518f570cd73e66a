"""Issue 9 against real ``ragstream serve`` processes over HTTP: bounded work, inputs that used to get a
500, background ingest jobs (also across a SIGKILL and restart) and a full disk (a real tmpfs).

The servers embed with the hash embedder: every check here is about limits and errors, not ranking.
"""

from __future__ import annotations

import io
import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import closing
from pathlib import Path

import httpx
import pytest
from pypdf import PdfWriter
from pypdf.generic import ArrayObject, DecodedStreamObject, DictionaryObject, NameObject, NumberObject
from support.polling import finished_job
from support.server_process import SERVE_WITH_HASH_EMBEDDER, RunningServer, running_server, server_env

from ragstream.models import UPLOAD_PATH_KEY

TIMEOUT = httpx.Timeout(120.0)
MAX_PDF_PAGES = 50
MAX_DOCUMENT_CHARS = 20_000
MAX_CHUNKS = 10
MAX_JSON_BYTES = 64 * 1024
MAX_JSON_DEPTH = 8
MAX_JSON_NUMBER_CHARS = 30
MAX_SELECTED_CHARS = 100
MAX_SESSIONS = 3
MAX_SESSION_BYTES = 30_000
LIMITS = {
    "LIMITS__MAX_PDF_PAGES": str(MAX_PDF_PAGES),
    "LIMITS__MAX_DOCUMENT_CHARS": str(MAX_DOCUMENT_CHARS),
    "LIMITS__MAX_CHUNKS_PER_DOCUMENT": str(MAX_CHUNKS),
    "LIMITS__MAX_JSON_BODY_BYTES": str(MAX_JSON_BYTES),
    "LIMITS__MAX_JSON_DEPTH": str(MAX_JSON_DEPTH),
    "LIMITS__MAX_JSON_NUMBER_CHARS": str(MAX_JSON_NUMBER_CHARS),
    "ANSWER__MAX_SELECTED_TEXT_CHARS": str(MAX_SELECTED_CHARS),
    "SERVER__MAX_PIPELINE_SESSIONS": str(MAX_SESSIONS),
    "SERVER__MAX_PIPELINE_SESSION_BYTES": str(MAX_SESSION_BYTES),
    "CHUNKING__STRATEGY": "window",
}
SEED = ("seed.md", b"# Seed\n\nCats purr and dogs bark; a small document for searches to find.\n")


def bomb_pdf(depth: int = 10, fanout: int = 3) -> bytes:
    """A ~2 KB PDF whose page tree references its one page ``fanout ** depth`` times (59,049 by default)."""
    writer = PdfWriter()
    page = writer.add_blank_page(200, 200)
    font = DictionaryObject({NameObject("/Type"): NameObject("/Font"), NameObject("/Subtype"): NameObject("/Type1"),
                             NameObject("/BaseFont"): NameObject("/Helvetica")})
    page[NameObject("/Resources")] = DictionaryObject(
        {NameObject("/Font"): DictionaryObject({NameObject("/F1"): writer._add_object(font)})})
    content = DecodedStreamObject()
    content.set_data(b"BT /F1 12 Tf 20 100 Td (The same page, again and again) Tj ET")
    page[NameObject("/Contents")] = writer._add_object(content)
    child = page.indirect_reference
    for level in range(depth):
        node = DictionaryObject({NameObject("/Type"): NameObject("/Pages"),
                                 NameObject("/Kids"): ArrayObject([child] * fanout),
                                 NameObject("/Count"): NumberObject(fanout ** (level + 1))})
        parent = writer._add_object(node)
        child.get_object()[NameObject("/Parent")] = parent
        child = parent
    root = writer._root_object["/Pages"].get_object()
    root[NameObject("/Kids")] = child.get_object()["/Kids"]
    root[NameObject("/Count")] = child.get_object()["/Count"]
    out = io.BytesIO()
    writer.write(out)
    return out.getvalue()


def assert_error(response: httpx.Response, status: int, code: str) -> dict:
    assert response.status_code == status, response.text
    body = response.json()
    assert body["error"]["code"] == code, body
    assert body["request_id"] == response.headers["x-request-id"]
    return body


def stored_files(data_dir: Path) -> set[str]:
    root = data_dir / "uploads"
    return {str(path.relative_to(root)) for path in root.rglob("*") if path.is_file()} if root.exists() else set()


def live_upload_paths(data_dir: Path) -> set[str]:
    """The stored files the catalog's live documents name (private metadata: not shown over HTTP)."""
    with closing(sqlite3.connect(f"{(data_dir / 'catalog.sqlite3').as_uri()}?mode=ro", uri=True)) as db:
        rows = db.execute("SELECT metadata FROM documents").fetchall()
    return {path for (metadata,) in rows if (path := json.loads(metadata).get(UPLOAD_PATH_KEY))}


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    with running_server(tmp_path_factory.mktemp("hardening"), hash_embedder=True, **LIMITS) as running:
        httpx.post(f"{running.url}/api/documents", files={"files": SEED}, timeout=TIMEOUT).raise_for_status()
        yield running


@pytest.fixture(scope="module")
def api(server: RunningServer) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=server.url, timeout=TIMEOUT) as client:
        yield client


# -- 3. small inputs, unbounded work -----------------------------------------------------------------

def test_page_tree_bomb_is_refused_before_extraction(server: RunningServer, api: httpx.Client):
    data = bomb_pdf()
    assert len(data) < 4096
    before = api.get("/api/documents").json()
    body = assert_error(api.post("/api/documents", files={"files": ("bomb.pdf", data)}), 413, "document_too_large")
    assert "pages" in body["error"]["message"]
    assert api.get("/api/documents").json() == before
    assert stored_files(server.data_dir) == live_upload_paths(server.data_dir)


def test_text_and_chunk_limits(server: RunningServer, api: httpx.Client):
    words = " ".join(f"word{i}" for i in range(MAX_DOCUMENT_CHARS // 5))
    assert_error(api.post("/api/documents", files={"files": ("long.txt", words.encode())}), 413, "document_too_large")
    many_chunks = words[: MAX_DOCUMENT_CHARS - 1]  # under the text limit, over the chunk limit
    body = assert_error(api.post("/api/documents", files={"files": ("chunks.txt", many_chunks.encode())}),
                        413, "document_too_large")
    assert "chunks" in body["error"]["message"]
    small = api.post("/api/documents", files={"files": ("small.txt", words[:2000].encode())})
    assert small.status_code == 201, small.text
    assert stored_files(server.data_dir) == live_upload_paths(server.data_dir)


def test_json_body_limit(api: httpx.Client):
    big = json.dumps({"query": "cats", "selected_text": "x" * MAX_JSON_BYTES})
    assert_error(api.post("/api/query", content=big, headers={"content-type": "application/json"}),
                 413, "request_too_large")

    def chunked() -> Iterator[bytes]:  # no Content-Length: counted as it arrives
        yield b'{"query": "'
        for _ in range(MAX_JSON_BYTES // 1024 + 1):
            yield b"y" * 1024
        yield b'"}'

    assert_error(api.post("/api/search", content=chunked(), headers={"content-type": "application/json"}),
                 413, "request_too_large")


def test_multipart_elsewhere_is_bounded_too(api: httpx.Client):
    files = {"files": ("big.bin", b"b" * (MAX_JSON_BYTES + 1))}
    assert_error(api.post("/api/search", files=files), 413, "request_too_large")


def test_selected_text_limit(api: httpx.Client):
    assert_error(api.post("/api/query", json={"query": "cats", "selected_text": "s" * (MAX_SELECTED_CHARS + 1)}),
                 422, "invalid_query")
    assert api.post("/api/query", json={"query": "cats", "selected_text": "s" * MAX_SELECTED_CHARS}).status_code == 200


def test_pipeline_sessions_bounded_by_count_and_bytes(api: httpx.Client):
    small = [api.post("/api/pipeline", json={"text": f"TASK: question {i}"}).json()["id"] for i in range(MAX_SESSIONS + 1)]
    assert_error(api.get(f"/api/pipeline/{small[0]}"), 404, "pipeline_not_found")
    assert all(api.get(f"/api/pipeline/{i}").status_code == 200 for i in small[1:])
    text = "TASK: summarise\n" + "z " * (MAX_SESSION_BYTES // 5)  # each one well over a third of the bytes
    large = [api.post("/api/pipeline", json={"text": text}).json()["id"] for _ in range(3)]
    assert api.get(f"/api/pipeline/{large[-1]}").status_code == 200
    assert_error(api.get(f"/api/pipeline/{large[0]}"), 404, "pipeline_not_found")
    assert all(api.get(f"/api/pipeline/{i}").status_code == 404 for i in small)


# -- 5. inputs that got a 500 ------------------------------------------------------------------------

SURROGATE = '"\\ud800"'
SURROGATE_BODIES = {
    "/api/search": '{"query": %s}',
    "/api/query": '{"query": %s}',
    "/api/chat": '{"message": %s}',
    "/api/retrieve": '{"query": %s}',
    "/api/pipeline": '{"text": %s}',
    "/v1/chat/completions": '{"messages": [{"role": "user", "content": %s}]}',
}


@pytest.mark.parametrize("path", sorted(SURROGATE_BODIES))
def test_lone_surrogate_is_invalid_unicode(api: httpx.Client, path: str):
    body = SURROGATE_BODIES[path] % SURROGATE
    assert_error(api.post(path, content=body, headers={"content-type": "application/json"}), 400, "invalid_unicode")


def test_surrogates_elsewhere(api: httpx.Client):
    headers = {"content-type": "application/json"}
    for template in ('{"query": "cats", "selected_text": @S}', '{"query": "cats", "filters": {"title": @S}}',
                     '{"query": "cats", "context_key": @S}', '{@S: "cats"}'):
        body = template.replace("@S", SURROGATE)
        path = "/api/retrieve" if "context_key" in body else "/api/search" if "filters" in body else "/api/query"
        assert_error(api.post(path, content=body, headers=headers), 400, "invalid_unicode")
    assert_error(api.post("/api/search", content=b'{"query": "\xed\xa0\x80"}', headers=headers), 400, "invalid_unicode")
    assert_error(api.get("/api/documents", headers={"X-User-ID": b"\xed\xa0\x80"}), 400, "invalid_unicode")
    pair = api.post("/api/search", content='{"query": "cats \\ud83d\\ude00"}', headers=headers)
    assert pair.status_code == 200 and pair.json()["query"] == "cats \U0001F600"  # a surrogate pair is fine


def test_upload_file_name_not_utf8_is_not_a_500(api: httpx.Client):
    response = api.post("/api/documents", files={"files": (b"\xed\xa0\x80.md".decode("latin-1"), b"# N\n\nname test\n")})
    assert response.status_code == 201, response.text
    json.dumps(response.json(), ensure_ascii=False).encode("utf-8")


DEEP = "[" * 2000 + "]" * 2000  # a 4 KB body: past the JSON parser's recursion limit
HUGE_INTEGER = "9" * 5000  # past Python's limit on integer digits (4300)


@pytest.mark.parametrize("content_type", ["application/json", None])
@pytest.mark.parametrize("path", sorted(SURROGATE_BODIES))
def test_deep_json_and_huge_numbers_are_400(api: httpx.Client, path: str, content_type: str | None):
    """Issue 25.1: they were 500s (a RecursionError / ValueError in the body check); with no Content-Type the
    route still reads the body as JSON, so the check must too."""
    headers = {"content-type": content_type} if content_type else {}
    deep = SURROGATE_BODIES[path] % DEEP
    assert len(deep) < 4200
    body = assert_error(api.post(path, content=deep, headers=headers), 400, "json_too_deep")
    assert "limits.max_json_depth" in body["error"]["message"]
    huge = SURROGATE_BODIES[path] % HUGE_INTEGER
    body = assert_error(api.post(path, content=huge, headers=headers), 400, "json_number_too_large")
    assert "limits.max_json_number_chars" in body["error"]["message"]
    for where in ('{"query": "x", "top_k": @}', '{"query": "x", "score_threshold": 0.@}', '{"query": "x", "f": [{"g": @}]}'):
        body = where.replace("@", HUGE_INTEGER)
        assert_error(api.post("/api/search", content=body, headers=headers), 400, "json_number_too_large")


def test_json_depth_and_number_limits_are_the_configured_ones(api: httpx.Client):
    headers = {"content-type": "application/json"}

    def nested(depth: int) -> str:  # the body object is level 1, the filters object level 2
        return '{"query": "cats", "filters": {"title": ' + "[" * (depth - 2) + '"Seed"' + "]" * (depth - 2) + "}}"

    assert api.post("/api/search", content=nested(MAX_JSON_DEPTH), headers=headers).status_code == 422  # not a list
    assert_error(api.post("/api/search", content=nested(MAX_JSON_DEPTH + 1), headers=headers), 400, "json_too_deep")
    fits = "-0." + "0" * (MAX_JSON_NUMBER_CHARS - 4) + "1"  # as written: sign, digits, point and exponent count
    assert len(fits) == MAX_JSON_NUMBER_CHARS
    assert api.post("/api/search", content=f'{{"query": "cats", "score_threshold": {fits}}}',
                    headers=headers).status_code == 200
    too_long = "1" * (MAX_JSON_NUMBER_CHARS + 1)
    assert_error(api.post("/api/search", content=f'{{"query": "cats", "top_k": {too_long}}}', headers=headers),
                 400, "json_number_too_large")


@pytest.mark.parametrize("value", ["NaN", "Infinity", "-Infinity"])
def test_non_finite_score_threshold(api: httpx.Client, value: str):
    body = '{"query": "cats", "score_threshold": VALUE}'.replace("VALUE", value)
    assert_error(api.post("/api/search", content=body, headers={"content-type": "application/json"}),
                 422, "invalid_number")
    overflow = '{"query": "cats", "score_threshold": 1e999}'
    assert_error(api.post("/api/search", content=overflow, headers={"content-type": "application/json"}),
                 422, "validation_error")


# -- background ingest jobs --------------------------------------------------------------------------

def markdown_files(count: int, paragraphs: int) -> list[tuple[str, tuple[str, bytes]]]:
    return [("files", (f"doc{i}.md", "\n\n".join(
        [f"# Document {i}", *(f"Paragraph {j} of document {i}: topic{i} word{j} and more words." for j in range(paragraphs))]
    ).encode())) for i in range(count)]


JOBS_MAX_FILE_BYTES = 100_000


@pytest.fixture(scope="module")
def jobs_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    with running_server(tmp_path_factory.mktemp("jobs"), hash_embedder=True, SERVER__BACKGROUND_INGEST_BYTES="2000",
                        LIMITS__MAX_FILE_BYTES=str(JOBS_MAX_FILE_BYTES)) as running:
        yield running


def test_upload_whose_files_are_all_refused_before_any_work_is_413_not_a_job(jobs_server: RunningServer):
    """Issue 25.4: an oversize upload past server.background_ingest_bytes was 202 with a job that 'succeeded'."""
    big = b"# Big\n\n" + b"word " * (JOBS_MAX_FILE_BYTES // 5)
    with httpx.Client(base_url=jobs_server.url, timeout=TIMEOUT) as api:
        before = api.get("/api/documents").json()
        for files in ([("files", ("big.md", big))], [("files", ("big.md", big)), ("files", ("bigger.md", big * 2))]):
            body = assert_error(api.post("/api/documents", files=files), 413, "file_too_large")
            assert [item["status"] for item in body["files"]] == ["failed"] * len(files)
            assert body["error"]["message"].count(str(JOBS_MAX_FILE_BYTES)) == len(files)  # one sentence per file
        assert api.get("/api/documents").json() == before
        assert stored_files(jobs_server.data_dir) == live_upload_paths(jobs_server.data_dir)


def test_job_whose_files_all_failed_is_failed(jobs_server: RunningServer):
    broken = b"%PDF-1.7\n1 0 obj <<" + b" " * 1500
    with httpx.Client(base_url=jobs_server.url, timeout=TIMEOUT) as api:
        response = api.post("/api/documents", files=[("files", ("one.pdf", broken)), ("files", ("two.pdf", broken + b" "))])
        assert response.status_code == 202, response.text
        job = finished_job(api, response.json()["id"])
        assert job["state"] == "failed", job
        assert job["error"]["code"] == "corrupt_document" and job["files_done"] == 2
        assert {item["status"] for item in job["files"]} == {"failed"}
        mixed = api.post("/api/documents", files=[("files", ("three.pdf", broken)),
                                                  ("files", ("big.md", b"w " * JOBS_MAX_FILE_BYTES))])
        assert mixed.status_code == 202, mixed.text
        job = finished_job(api, mixed.json()["id"])
        assert job["state"] == "failed" and job["error"]["code"] == "upload_failed", job
        assert {item["error"]["code"] for item in job["files"]} == {"corrupt_document", "file_too_large"}
        assert stored_files(jobs_server.data_dir) == live_upload_paths(jobs_server.data_dir)


def test_large_upload_becomes_a_job(jobs_server: RunningServer):
    with httpx.Client(base_url=jobs_server.url, timeout=TIMEOUT) as api:
        files = [*markdown_files(4, 20), ("files", ("broken.pdf", b"%PDF-1.7\n1 0 obj <<"))]
        response = api.post("/api/documents", files=files)
        assert response.status_code == 202, response.text
        accepted = response.json()
        assert response.headers["location"] == f"/api/jobs/{accepted['id']}"
        assert accepted["state"] == "queued" and accepted["files_total"] == 5
        assert {item["status"] for item in accepted["files"]} == {"pending"}
        seen: list[int] = []
        job = finished_job(api, accepted["id"], seen)
        assert job["state"] == "succeeded", job
        assert seen == sorted(seen) and job["files_done"] == 5
        by_name = {item["filename"]: item for item in job["files"]}
        assert by_name["broken.pdf"]["status"] == "failed"
        assert by_name["broken.pdf"]["error"]["code"] == "corrupt_document"
        ingested = [item for item in job["files"] if item["status"] == "ingested"]
        assert len(ingested) == 4 and job["chunks"] == sum(item["chunks"] for item in ingested) > 0
        listed = {doc["document_id"] for doc in api.get("/api/documents").json()}
        assert {item["document_id"] for item in ingested} <= listed
        assert stored_files(jobs_server.data_dir) == live_upload_paths(jobs_server.data_dir)
        small = api.post("/api/documents", files={"files": ("small.md", b"# Small\n\nunder the threshold\n")})
        assert small.status_code == 201
        assert_error(api.get("/api/jobs/no-such-job"), 404, "job_not_found")


def test_job_interrupted_by_kill_is_failed_on_restart(tmp_path: Path):
    settings = {"SERVER__BACKGROUND_INGEST_BYTES": "2000"}
    with running_server(tmp_path, hash_embedder=True, **settings) as first, \
            httpx.Client(base_url=first.url, timeout=TIMEOUT) as api:
        response = api.post("/api/documents", files=markdown_files(40, 400))
        assert response.status_code == 202, response.text
        assert first.process is not None
        first.process.send_signal(signal.SIGKILL)
        first.process.wait()
    job_id = response.json()["id"]
    with running_server(tmp_path, hash_embedder=True, **settings) as second, \
            httpx.Client(base_url=second.url, timeout=TIMEOUT) as api:
        job = api.get(f"/api/jobs/{job_id}").json()
        assert job["state"] == "failed", job
        assert job["error"]["code"] == "job_interrupted"
        assert job["files_done"] == job["files_total"] == 40
        statuses = {item["status"] for item in job["files"]}
        assert statuses <= {"ingested", "failed"}
        interrupted = [item for item in job["files"] if item["status"] == "failed"]
        assert interrupted and all(item["error"]["code"] == "job_interrupted" for item in interrupted)
        assert stored_files(second.data_dir) == live_upload_paths(second.data_dir)  # no orphan upload file


# -- 5. a full disk (a real tmpfs) ---------------------------------------------------------------------

DISK_BYTES = 384 * 1024 * 1024  # a fresh shard is ~30 MB and loading it for writing may fill ~250 MB of its holes
MIN_FREE = 8 * 1024 * 1024


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A small tmpfs: a real filesystem that fills up (mounting needs root; elsewhere the test is skipped)."""
    if os.geteuid() != 0:
        pytest.skip("mounting a small tmpfs needs root")
    mount = tmp_path / "disk"
    mount.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={DISK_BYTES}", "tmpfs", str(mount)], check=True)
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


def fill(mount: Path, leave: int) -> None:
    """Take the disk's free space down to about ``leave`` bytes (0: completely full)."""
    stats = os.statvfs(mount)
    remaining = max(stats.f_bavail * stats.f_frsize - leave, 0)
    descriptor = os.open(mount / f"filler-{time.monotonic_ns()}", os.O_WRONLY | os.O_CREAT)
    try:
        while remaining > 0 or leave == 0:
            block = min(remaining, 1024 * 1024) if remaining > 0 else 4096
            os.write(descriptor, bytes(block))
            remaining -= block
    except OSError:
        pass  # full
    finally:
        os.close(descriptor)


def cli(data_dir: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", SERVE_WITH_HASH_EMBEDDER, *args], capture_output=True, text=True,
                          env=server_env(data_dir, RERANKER__BACKEND="none", LIMITS__MIN_FREE_DISK_BYTES=str(MIN_FREE)),
                          timeout=300)


def embedded_documents(api: httpx.Client) -> float:
    """Passage texts this server sent to its embedder so far (its /metrics)."""
    for line in api.get("/metrics").text.splitlines():
        if line.startswith('ragstream_embedded_texts_total{kind="documents"}'):
            return float(line.split()[-1])
    return 0.0


def free_disk(mount: Path) -> None:
    for filler in mount.glob("filler-*"):
        filler.unlink()


def test_full_disk(small_disk: Path, tmp_path: Path):
    data_dir = small_disk / "data"
    settings = {"LIMITS__MIN_FREE_DISK_BYTES": str(MIN_FREE), "SERVER__BACKGROUND_INGEST_BYTES": "20000"}
    with running_server(tmp_path, hash_embedder=True, data_dir=data_dir, **settings) as server, \
            httpx.Client(base_url=server.url, timeout=TIMEOUT) as api:
        assert api.post("/api/documents", files={"files": SEED}).status_code == 201
        fill(small_disk, MIN_FREE + 40_000)  # room for the request, not for indexing any of its files
        body = assert_error(api.post("/api/documents", files=markdown_files(3, 60)), 507, "insufficient_storage")
        assert {item["error"]["code"] for item in body["files"]} == {"insufficient_storage"}
        assert body["error"]["message"].count("not enough free disk space") == 1  # one sentence, not one per file
        fill(small_disk, MIN_FREE // 2)
        before = api.get("/api/documents").json()
        response = api.post("/api/documents", files=markdown_files(3, 5))
        assert_error(response, 507, "insufficient_storage")
        assert api.get("/api/documents").json() == before
        assert stored_files(data_dir) == live_upload_paths(data_dir)  # nothing half-stored
        fill(small_disk, 0)
        assert_error(api.post("/api/documents", files=markdown_files(1, 2)), 507, "insufficient_storage")
        hits = api.post("/api/search", json={"query": "cats purr"}).json()["hits"]
        assert hits and hits[0]["chunk"]["metadata"]["title"] == "Seed"
        answer = api.post("/api/query", json={"query": "Do cats purr?"})
        assert answer.status_code == 200, answer.text
        assert stored_files(data_dir) == live_upload_paths(data_dir)

    ingest = cli(data_dir, "ingest", str(tmp_path / "server.log"))
    assert ingest.returncode not in (0, -signal.SIGBUS), ingest.stderr
    assert "insufficient_storage" in ingest.stderr

    with running_server(tmp_path, hash_embedder=True, data_dir=data_dir, **settings) as reopened, \
            httpx.Client(base_url=reopened.url, timeout=TIMEOUT) as api:
        hits = api.post("/api/search", json={"query": "cats purr"}).json()["hits"]
        assert hits and hits[0]["chunk"]["metadata"]["title"] == "Seed"
        embedded = embedded_documents(api)
        assert_error(api.post("/api/documents", files={"files": ("new.md", b"# New\n\ntext\n")}),
                     507, "insufficient_storage")
        assert [doc["title"] for doc in api.get("/api/documents").json()] == ["Seed"]
        assert embedded_documents(api) == embedded  # refused before any embedding
        free_disk(small_disk)
        fill(small_disk, 2 * MIN_FREE)  # room for the request, not for loading the shard for writing (a SIGBUS)
        body = assert_error(api.post("/api/documents", files={"files": ("new.md", b"# New\n\ntext\n")}),
                            507, "insufficient_storage")
        assert "loading it" in body["error"]["message"] and embedded_documents(api) == embedded

        free_disk(small_disk)  # issue 25.5: the same server notices the room and takes writes again
        response = api.post("/api/documents", files=markdown_files(10, 5))
        assert response.status_code == 201, response.text
        assert response.json()["ingested"] == 10
        hits = api.post("/api/search", json={"query": "topic7 word3"}).json()["hits"]
        assert hits and hits[0]["chunk"]["metadata"]["title"] == "Document 7"
        job = api.post("/api/documents", files=markdown_files(12, 40))  # past background_ingest_bytes: the job
        assert job.status_code == 202, job.text                           # runner starts with the writable index
        assert finished_job(api, job.json()["id"])["state"] == "succeeded"
        assert len(api.get("/api/documents").json()) == 1 + 12
        assert stored_files(data_dir) == live_upload_paths(data_dir)
    with closing(sqlite3.connect(f"{(data_dir / 'catalog.sqlite3').as_uri()}?mode=ro", uri=True)) as db:
        assert db.execute("SELECT COUNT(*) FROM write_intents").fetchone()[0] == 0  # nothing left to repair


def test_cli_argument_not_utf8_is_a_clear_error(tmp_path: Path):
    """A command-line argument of bytes that are not UTF-8 decodes to lone surrogates: a clear error, exit 2."""
    data_dir = tmp_path / "cli-index"
    doc = tmp_path / "cats.md"
    doc.write_text("# Cats\n\nCats purr.\n")
    assert cli_plain(data_dir, "ingest", str(doc)).returncode == 0
    for command in ("search", "ask"):
        result = cli_plain(data_dir, command, "cats \udced\udca0\udc80")
        assert result.returncode == 2, result.stderr
        assert "invalid_unicode" in result.stderr and "Traceback" not in result.stderr


def cli_plain(data_dir: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", SERVE_WITH_HASH_EMBEDDER, *args], capture_output=True, text=True,
                          env=server_env(data_dir, RERANKER__BACKEND="none"), timeout=300)
