"""The background job runner over a real catalog queue (SQLite on disk and the session PostgreSQL):
takeover of a dead worker's job, a job whose workers died too often, a worker that lost its lease.

A "dead worker" is a claim made through the catalog with a lease that has already run out, exactly what
a killed process leaves behind; the worker processes themselves are exercised over HTTP in
tests/server/test_multi_worker_pg.py.
"""

from __future__ import annotations

import threading
import time

import pytest

from ragstream.config import JobsConfig
from ragstream.server.schemas import JobStatus, UploadedFile
from ragstream.store.catalog_base import Catalog, JobQueue
from ragstream.writes.jobs import JobRunner

EXPIRED = -1.0
CONFIG = JobsConfig(lease_seconds=30.0, heartbeat_seconds=0.2, poll_seconds=0.05, max_attempts=2)
DEADLINE_SECONDS = 60.0


@pytest.fixture
def queue(catalog: Catalog) -> JobQueue:
    """The job queue of the ``catalog`` fixture's catalog (SQLite on disk, or the session PostgreSQL)."""
    return catalog.jobs


def queued_job(queue: JobQueue) -> JobStatus:
    """A job of three stored files, the first already ingested by an earlier worker."""
    files = [UploadedFile(filename="a.md", status="ingested", document_id="a", chunks=2, stored_as="u/a"),
             UploadedFile(filename="b.md", status="pending", sha256="b", size_bytes=1, stored_as="u/b"),
             UploadedFile(filename="c.md", status="pending", sha256="c", size_bytes=1, stored_as="u/c")]
    job = JobStatus(id="job1", user="alice", state="queued", files_total=3, files_done=1, chunks=2, files=files,
                    created_at="2026-01-01T00:00:00+00:00", updated_at="2026-01-01T00:00:00+00:00")
    queue.save_job(job.id, job.kind, job.state, job.model_dump_json(), job.updated_at)
    return job


def die_holding(queue: JobQueue, job_id: str, times: int) -> None:
    """``times`` workers take the job and die: their leases are over at once."""
    for number in range(times):
        claimed = queue.claim_job(f"dead-{number}", EXPIRED, "2026-01-01T00:00:01+00:00")
        assert claimed is not None and claimed["job_id"] == job_id


def wait_until_finished(queue: JobQueue, job_id: str) -> JobStatus:
    deadline = time.monotonic() + DEADLINE_SECONDS
    while time.monotonic() < deadline:
        row = queue.job(job_id)
        assert row is not None
        if row["state"] in ("succeeded", "failed"):
            return JobStatus.model_validate_json(row["payload"])
        time.sleep(CONFIG.poll_seconds)
    raise AssertionError(f"job {job_id} did not finish in {DEADLINE_SECONDS} s")


def test_a_dead_workers_job_is_taken_over_and_finished(queue: JobQueue):
    job = queued_job(queue)
    die_holding(queue, job.id, 1)
    calls: list[tuple[str, bool]] = []

    def work(running: JobStatus, item: UploadedFile, resumed: bool) -> UploadedFile:
        calls.append((item.filename, resumed))
        return item.model_copy(update={"status": "ingested", "chunks": 3})

    runner = JobRunner(queue, CONFIG, shared=True, discard=lambda items: None)
    runner.start(work)
    try:
        done = wait_until_finished(queue, job.id)
    finally:
        runner.shutdown()
    assert calls == [("b.md", True), ("c.md", True)]  # only the files not done, knowing the job was resumed
    assert done.state == "succeeded" and done.files_done == 3 and done.chunks == 2 + 3 + 3
    assert queue.claim_job("another", CONFIG.lease_seconds, "2026-01-01T00:00:02+00:00") is None


def test_a_job_whose_workers_died_too_often_fails_and_its_files_go(queue: JobQueue):
    job = queued_job(queue)
    die_holding(queue, job.id, CONFIG.max_attempts)
    discarded: list[str | None] = []
    runner = JobRunner(queue, CONFIG, shared=True,
                       discard=lambda items: discarded.extend(item.stored_as for item in items))
    runner.start(lambda running, item, resumed: pytest.fail("an abandoned job ingests nothing"))
    try:
        failed = wait_until_finished(queue, job.id)
    finally:
        runner.shutdown()
    assert failed.state == "failed" and failed.error is not None and failed.error.code == "job_interrupted"
    assert discarded == ["u/b", "u/c"]
    assert [(f.status, f.stored_as) for f in failed.files] == [("ingested", "u/a"), ("failed", None), ("failed", None)]
    assert failed.files_done == 3


def test_a_worker_that_lost_its_lease_stops(queue: JobQueue):
    job = queued_job(queue)
    started, release = threading.Event(), threading.Event()
    calls: list[str] = []

    def work(running: JobStatus, item: UploadedFile, resumed: bool) -> UploadedFile:
        calls.append(item.filename)
        started.set()
        assert release.wait(DEADLINE_SECONDS)
        return item.model_copy(update={"status": "ingested", "chunks": 1})

    stalled = JobRunner(queue, CONFIG.model_copy(update={"heartbeat_seconds": DEADLINE_SECONDS}), shared=True,
                        discard=lambda items: None)  # no heartbeat while the test runs: its lease can run out
    stalled.start(work)
    try:
        assert started.wait(DEADLINE_SECONDS)
        assert queue.renew_job(job.id, stalled.worker, EXPIRED)  # its lease runs out while it works ...
        taken = queue.claim_job("rescuer", CONFIG.lease_seconds, "2026-01-01T00:00:05+00:00")  # ... and is taken
        assert taken is not None and taken["attempts"] == 2
    finally:
        release.set()
        stalled.shutdown()  # waits (up to its heartbeat_seconds) for the file it was on
    assert calls == ["b.md"]  # it stopped after that file
    row = queue.job(job.id)
    assert row is not None and row["state"] == "running"
    assert JobStatus.model_validate_json(row["payload"]).files_done == 1  # its late progress was not written
