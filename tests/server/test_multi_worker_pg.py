"""Many server workers over one PostgreSQL index: real ``ragstream serve`` processes on one database.

Two servers (different ports, the same ``store.url`` and data dir, as two workers on one host) share
everything a reader sees: what one uploads the other lists, searches and answers from, and a background
ingest job submitted to one is visible from the other. When the worker running a job is SIGKILLed mid-job,
the other takes the job over once its lease runs out and finishes it, while readers polling the survivor
never see a document mixing two versions, a version that was never committed, or a record beside chunks
of another version (every sentence of a versioned document carries ``vtag-d<doc>-v<version>``, like
bench/load.py's markers). The hash embedder stands in for the model (fast tier).
"""

from __future__ import annotations

import hashlib
import json
import re
import signal
import subprocess
import threading
import time
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import psycopg
import pytest
from support.hash_embedder import HashEmbedder
from support.server_process import RunningServer, running_server, serve_command, server_env

from ragstream import Ragstream, load_config
from ragstream.models import UPLOAD_PATH_KEY

TIMEOUT = 60.0
JOB_DEADLINE_SECONDS = 300.0
POLL_SECONDS = 0.1
VERSIONED_DOCS = 4
FILLER_FILES = 40
FILLER_PARAGRAPHS = 400
KILL_AFTER_FILES = 8
READERS = 2
"""The job's worker is killed once this many files are done (of VERSIONED_DOCS + FILLER_FILES)."""
MARKER = re.compile(r"vtag-d(\d+)-v(\d+)")
"""Every sentence of a versioned document names it and its version (not in brackets: answers drop those)."""
QUESTION = "what does the versioned document say about the weather in spring"


def settings(url: str) -> dict[str, str]:
    """Two workers on one database, with short job leases so a takeover comes quickly."""
    return {"STORE__BACKEND": "postgres", "STORE__URL": url, "SERVER__BACKGROUND_INGEST_BYTES": "65536",
            "SERVER__JOBS__LEASE_SECONDS": "2", "SERVER__JOBS__HEARTBEAT_SECONDS": "0.5",
            "SERVER__JOBS__POLL_SECONDS": "0.3"}


def versioned_file(doc: int, version: int) -> tuple[str, tuple[str, bytes]]:
    """Version ``version`` of versioned document ``doc``: every sentence names both (its length varies too)."""
    tag = f"vtag-d{doc}-v{version}"
    paragraphs = [f"Versioned document {doc} paragraph {p} {tag} talks about topic {doc * 10 + p}. It says the weather "
                  f"{tag} in spring is mild and the marker {tag} repeats." for p in range(6 + 2 * (version % 3))]
    return "files", (f"versioned{doc}.txt", "\n\n".join(paragraphs).encode())


def filler_files() -> list[tuple[str, tuple[str, bytes]]]:
    return [("files", (f"filler{i}.md", "\n\n".join(
        [f"# Filler {i}", *(f"Paragraph {j} of filler {i}: topic{i} word{j} and more words." for j in range(FILLER_PARAGRAPHS))]
    ).encode())) for i in range(FILLER_FILES)]


def checksum(item: tuple[str, tuple[str, bytes]]) -> str:
    return hashlib.sha256(item[1][1]).hexdigest()


@pytest.fixture
def two_servers(tmp_path: Path, postgres_url: str) -> Iterator[tuple[RunningServer, RunningServer]]:
    data_dir = tmp_path / "data"  # one host: both workers keep uploads in the same directory
    with running_server(tmp_path / "a", hash_embedder=True, data_dir=data_dir, **settings(postgres_url)) as first, \
            running_server(tmp_path / "b", hash_embedder=True, data_dir=data_dir, **settings(postgres_url)) as second:
        yield first, second


def test_upload_through_one_read_through_the_other(two_servers: tuple[RunningServer, RunningServer]):
    first, second = two_servers
    files = [versioned_file(doc, 1) for doc in range(VERSIONED_DOCS)]
    with httpx.Client(base_url=first.url, timeout=TIMEOUT) as writer, \
            httpx.Client(base_url=second.url, timeout=TIMEOUT) as reader:
        uploaded = writer.post("/api/documents", files=files)
        assert uploaded.status_code == 201, uploaded.text
        ids = {item["document_id"] for item in uploaded.json()["files"]}
        assert len(ids) == VERSIONED_DOCS

        listed = reader.get("/api/documents").json()
        assert {doc["document_id"] for doc in listed} == ids
        hits = reader.post("/api/search", json={"query": QUESTION, "top_k": 20}).json()["hits"]
        assert {hit["chunk"]["metadata"]["document_id"] for hit in hits} == ids
        answer = reader.post("/api/query", json={"query": QUESTION})
        assert answer.status_code == 200, answer.text
        assert MARKER.search(answer.json()["answer"]) and answer.json()["citations"]
        for document_id in ids:
            detail = reader.get(f"/api/documents/{document_id}", params={"include_chunks": "true"}).json()
            assert len(detail["chunks"]) == detail["document"]["chunk_count"] > 0

        replaced = reader.post("/api/documents", files=[versioned_file(0, 2)])  # and the other way round
        assert replaced.status_code == 201, replaced.text
        document_id = replaced.json()["files"][0]["document_id"]
        chunks = writer.get(f"/api/documents/{document_id}/chunks").json()
        assert {version for chunk in chunks for _, version in MARKER.findall(chunk["text"])} == {"2"}
        deleted = writer.delete(f"/api/documents/{document_id}")
        assert deleted.status_code == 200, deleted.text
        assert reader.get(f"/api/documents/{document_id}").status_code == 404


@dataclass
class ReaderLog:
    """What a reader saw: requests checked, violations, and the versions of each document it saw last."""

    checks: int = 0
    violations: list[str] = field(default_factory=list)
    latest: dict[str, int] = field(default_factory=dict)
    errors: dict[int, int] = field(default_factory=lambda: defaultdict(int))

    def saw(self, what: str, doc: str, version: int) -> None:
        """``doc`` at ``version``: never older than one this reader saw before (its requests are sequential)."""
        if version < self.latest.get(doc, 0):
            self.violations.append(f"{what}: d{doc} went back from v{self.latest[doc]} to v{version}")
        self.latest[doc] = max(version, self.latest.get(doc, 0))


def read_until(url: str, stop: threading.Event, versions: dict[str, int], log: ReaderLog) -> None:
    """Search, answer and read every versioned document with its chunks until ``stop``; check each response."""
    with httpx.Client(base_url=url, timeout=TIMEOUT) as api:
        while not stop.is_set():
            search = api.post("/api/search", json={"query": QUESTION, "top_k": 50})
            if search.status_code != 200:
                log.errors[search.status_code] += 1
                continue
            by_doc: dict[str, set[int]] = defaultdict(set)
            places: dict[str, list[int]] = defaultdict(list)
            for hit in search.json()["hits"]:
                for doc, version in MARKER.findall(hit["chunk"]["text"]):
                    by_doc[doc].add(int(version))
                places[hit["chunk"]["metadata"]["document_id"]].append(hit["chunk"]["metadata"]["chunk_index"])
            for doc, seen in by_doc.items():
                if len(seen) > 1:
                    log.violations.append(f"search: d{doc} mixes versions {sorted(seen)}")
                log.saw("search", doc, max(seen))
            for document_id, indexes in places.items():
                if len(indexes) != len(set(indexes)):  # two generations of one document visible at once
                    log.violations.append(f"search: {document_id} repeats chunk indexes {sorted(indexes)}")
            answer = api.post("/api/query", json={"query": QUESTION})
            if answer.status_code == 200:
                quoted: dict[str, set[int]] = defaultdict(set)
                for doc, version in MARKER.findall(answer.json()["answer"]):
                    quoted[doc].add(int(version))
                log.violations.extend(f"query: d{doc} mixes versions {sorted(seen)}" for doc, seen in quoted.items()
                                      if len(seen) > 1)
            else:
                log.errors[answer.status_code] += 1
            for document in api.get("/api/documents").json():
                if not document["source"].startswith("upload://versioned"):
                    continue
                detail = api.get(f"/api/documents/{document['document_id']}", params={"include_chunks": "true"})
                if detail.status_code != 200:
                    log.errors[detail.status_code] += 1
                    continue
                record, chunks = detail.json()["document"], detail.json()["chunks"]
                expected = versions.get(record["checksum"])
                found = {(doc, int(version)) for chunk in chunks for doc, version in MARKER.findall(chunk["text"])}
                if expected is None or len(chunks) != record["chunk_count"] or len(found) != 1:
                    log.violations.append(f"document: {record['title']} v{expected} with {record['chunk_count']} "
                                          f"chunks beside {len(chunks)} chunks of {sorted(found)}")
                    continue
                doc, version = found.pop()
                if version != expected:
                    log.violations.append(f"document: record of v{expected} beside chunks of v{version}")
                log.saw("document", doc, version)
            log.checks += 1


def job_row(url: str, job_id: str) -> dict[str, object]:
    with psycopg.connect(url) as conn:
        row = conn.execute("SELECT state, worker, attempts FROM jobs WHERE job_id = %s", (job_id,)).fetchone()
    assert row is not None
    return {"state": row[0], "worker": row[1], "attempts": row[2]}


def worker_pid(worker: object) -> int:
    """The process id in a worker's name (host:pid:tag)."""
    return int(str(worker).split(":")[1])


def test_killed_workers_job_is_taken_over(two_servers: tuple[RunningServer, RunningServer], postgres_url: str,
                                          tmp_path: Path):
    servers = {server.process.pid: server for server in two_servers if server.process is not None}
    first = two_servers[0]
    old = [versioned_file(doc, 1) for doc in range(VERSIONED_DOCS)]
    new = [versioned_file(doc, 2) for doc in range(VERSIONED_DOCS)]
    versions = {checksum(item): 1 for item in old} | {checksum(item): 2 for item in new}
    with httpx.Client(base_url=first.url, timeout=TIMEOUT) as api:
        assert api.post("/api/documents", files=old).status_code == 201
        fillers = filler_files()
        step = len(fillers) // VERSIONED_DOCS  # the new versions spread over the job: some before the kill, some after
        files = [item for doc in range(VERSIONED_DOCS) for item in (new[doc], *fillers[doc * step:(doc + 1) * step])]
        submitted = api.post("/api/documents", files=files)
        assert submitted.status_code == 202, submitted.text
    job_id = submitted.json()["id"]

    deadline = time.monotonic() + JOB_DEADLINE_SECONDS
    while (row := job_row(postgres_url, job_id))["worker"] is None and time.monotonic() < deadline:
        time.sleep(POLL_SECONDS)
    runner = servers[worker_pid(row["worker"])]
    survivor = next(server for server in two_servers if server is not runner)
    assert runner.process is not None

    stop, logs = threading.Event(), [ReaderLog() for _ in range(READERS)]  # one each: "never older" holds per
    readers = [threading.Thread(target=read_until, args=(survivor.url, stop, versions, log)) for log in logs]  # reader
    for reader in readers:
        reader.start()
    try:
        with httpx.Client(base_url=survivor.url, timeout=TIMEOUT) as api:  # progress is readable from the other worker
            while (job := api.get(f"/api/jobs/{job_id}").json())["files_done"] < KILL_AFTER_FILES:
                assert job["state"] in ("queued", "running") and time.monotonic() < deadline, job
                time.sleep(POLL_SECONDS)
            runner.process.send_signal(signal.SIGKILL)
            runner.process.wait()
            killed_at = job["files_done"]
            while (job := api.get(f"/api/jobs/{job_id}").json())["state"] not in ("succeeded", "failed"):
                assert time.monotonic() < deadline, job
                time.sleep(POLL_SECONDS)
            time.sleep(1.0)  # readers go on over the finished job for a moment
    finally:
        stop.set()
        for reader in readers:
            reader.join()

    assert killed_at < len(files), "the job ended before its worker was killed: make it larger"
    assert job["state"] == "succeeded", job
    taken = job_row(postgres_url, job_id)
    assert worker_pid(taken["worker"]) == survivor.process.pid and taken["attempts"] == 2  # type: ignore[union-attr]
    assert job["files_done"] == job["files_total"] == len(files)
    assert {item["status"] for item in job["files"]} == {"ingested"}, job["files"]
    assert job["chunks"] == sum(item["chunks"] for item in job["files"])

    for log in logs:  # a request of one reader may start before a commit and end after another's saw it
        assert not log.violations, log.violations[:10]
        assert log.checks > 0 and not log.errors, (log.checks, dict(log.errors))
        assert set(log.latest.values()) == {2}, log.latest  # each reader saw the new versions land

    with httpx.Client(base_url=survivor.url, timeout=TIMEOUT) as api:
        listed = api.get("/api/documents").json()
        assert len(listed) == VERSIONED_DOCS + FILLER_FILES
        for document in listed:
            chunks = api.get(f"/api/documents/{document['document_id']}/chunks").json()
            assert len(chunks) == document["chunk_count"]
            assert {version for chunk in chunks for _, version in MARKER.findall(chunk["text"])} <= {"2"}
    assert stored_files(survivor.data_dir) == live_upload_paths(postgres_url)  # no upload file left behind

    survivor.process.terminate()  # type: ignore[union-attr]
    survivor.process.wait()  # type: ignore[union-attr]
    reopened = load_config(data_dir=tmp_path / "check", store={"backend": "postgres", "url": postgres_url})
    with Ragstream(reopened, embedder=HashEmbedder()) as rs:  # opening replays the dead worker's write intents
        assert rs.catalog.versions.intents() == []
        assert rs.store.count() == sum(record.chunk_count for record in rs.documents())  # nothing half-written left


def test_serve_workers_on_postgres(tmp_path: Path, postgres_url: str):
    with running_server(tmp_path, hash_embedder=True, workers=2, **settings(postgres_url)) as server, \
            httpx.Client(base_url=server.url, timeout=TIMEOUT) as api:
        assert server.process is not None
        assert len(child_pids(server.process.pid)) == 2
        uploaded = api.post("/api/documents", files=[versioned_file(doc, 1) for doc in range(VERSIONED_DOCS)])
        assert uploaded.status_code == 201, uploaded.text
        for _ in range(8):  # connections land on either worker: each sees the same index
            with httpx.Client(base_url=server.url, timeout=TIMEOUT) as fresh:
                assert len(fresh.get("/api/documents").json()) == VERSIONED_DOCS


def test_serve_workers_refused_on_the_embedded_store(tmp_path: Path):
    done = subprocess.run(serve_command("127.0.0.1", 0, workers=2), env=server_env(tmp_path / "data"),
                          capture_output=True, text=True, timeout=TIMEOUT)
    assert done.returncode == 2
    assert "--workers 2 is not possible here" in done.stderr and "qdrant_edge" in done.stderr
    assert not (tmp_path / "data" / "server.json").exists()


def child_pids(pid: int) -> list[int]:
    """The worker processes ``pid`` spawned (not multiprocessing's resource tracker)."""
    children = [int(child) for child in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    return [child for child in children if b"spawn_main" in Path(f"/proc/{child}/cmdline").read_bytes()]


def stored_files(data_dir: Path) -> set[str]:
    root = data_dir / "uploads"
    return {str(path.relative_to(root)) for path in root.rglob("*") if path.is_file()} if root.exists() else set()


def live_upload_paths(url: str) -> set[str]:
    with psycopg.connect(url) as conn:
        rows = conn.execute("SELECT metadata FROM documents").fetchall()
    return {path for (metadata,) in rows if (path := json.loads(metadata).get(UPLOAD_PATH_KEY))}
