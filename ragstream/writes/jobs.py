"""Background jobs: large uploads are ingested by a worker thread while the client polls their progress.

A job's state (``queued`` -> ``running`` -> ``succeeded`` | ``failed``) and progress (files done of
total, chunks written, the per-file results) live in the catalog's ``jobs`` table, which is also the
queue: every server process runs one :class:`JobRunner` thread that takes the oldest queued job from
it (``claim_job``: ``FOR UPDATE SKIP LOCKED`` on PostgreSQL, so two workers never take one job). A
running job holds a lease that its worker renews every ``server.jobs.heartbeat_seconds``; when the
worker dies (or hangs) the lease runs out after ``server.jobs.lease_seconds`` and another worker takes
the job over and ingests the files not done yet (a file whose document the dead worker committed is
recognised and counted, never ingested twice; a document it was writing was never visible, as every
per-document replace is one transaction). A job whose workers died ``server.jobs.max_attempts`` times is
failed instead, its files not ingested removed. Progress is a row of the catalog, so any worker
answers ``GET /api/jobs/{id}``.

On a catalog one process holds (SQLite), a job still unfinished when the process starts was
interrupted by the previous one: it is marked failed and its stored files not ingested are removed
(:meth:`JobRunner.fail_interrupted`), as nobody else can finish it.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import uuid
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from ragstream.config import JobsConfig
from ragstream.errors import RagstreamError
from ragstream.models import ErrorDetail, JobStatus, UploadedFile
from ragstream.store.catalog_base import JobQueue

logger = logging.getLogger("ragstream.server")  # the name its log lines always had

QUEUED, RUNNING, SUCCEEDED, FAILED = "queued", "running", "succeeded", "failed"
UPLOAD_KIND = "upload"
INTERRUPTED = ErrorDetail(code="job_interrupted", type="JobInterrupted",
                          message="the server stopped before the job finished; files not yet ingested were discarded: "
                                  "upload them again")
FileWork = Callable[[JobStatus, UploadedFile, bool], UploadedFile]
"""Ingests one stored file (status ``pending``) of a job and returns its outcome; the flag says the job was
taken over from a worker that died, so the file may already have been ingested."""
Discard = Callable[[list[UploadedFile]], None]
"""Removes the stored files of uploads that will not be ingested."""


SERVER_CONDITIONS = frozenset({"insufficient_storage"})
"""Error codes that tell the server's state, not the file's: one sentence says it for every file."""


def combined_error(errors: list[ErrorDetail]) -> ErrorDetail:
    """One error standing for several files' errors: their shared code (else ``upload_failed``), and one
    sentence per distinct error: a message repeated for several files, or a full disk refusing them all, is
    said once (ten files refused for one full disk gave the same sentence ten times); each file's own message
    stays in its result."""
    groups: dict[str, list[ErrorDetail]] = {}
    for error in errors:
        groups.setdefault(error.code if error.code in SERVER_CONDITIONS else error.message, []).append(error)
    sentences = [group[0].message + (f" (and {len(group) - 1} more file(s))" if len(group) > 1 else "")
                 for group in groups.values()]
    shared = len({error.code for error in errors}) == 1
    code, error_type = (errors[0].code, errors[0].type) if shared else ("upload_failed", "UploadFailed")
    return ErrorDetail(code=code, type=error_type, message="; ".join(sentences))


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def worker_name() -> str:
    """This process's name in the ``jobs`` table: host, process id and a random tag."""
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"


class LeaseLostError(Exception):
    """The job was taken over by another worker (this one's lease ran out): stop working on it."""


class JobRunner:
    """Takes jobs from the catalog's queue and runs them one at a time on a thread of this process."""

    def __init__(self, queue: JobQueue, config: JobsConfig, *, shared: bool, discard: Discard) -> None:
        """``shared``: other processes use the catalog too, so the queue is polled for their jobs and for jobs
        whose worker died; otherwise only this process's submissions wake the thread."""
        self._queue = queue
        self._config = config
        self._shared = shared
        self._discard = discard
        self.worker = worker_name()
        self._work: FileWork | None = None
        self._wake = threading.Event()
        self._stopping = threading.Event()
        self._thread: threading.Thread | None = None
        self._start_lock = threading.Lock()

    def start(self, work: FileWork) -> None:
        """Ingest each file of a job with ``work``; on a shared catalog, start taking jobs from the queue now (else
        with the first submission)."""
        self._work = work
        if self._shared:
            self._spawn()

    def _spawn(self) -> None:
        with self._start_lock:
            if self._thread is None and self._work is not None and not self._stopping.is_set():
                self._thread = threading.Thread(target=self._loop, name="ragstream-jobs", daemon=True)
                self._thread.start()

    def submit_upload(self, files: list[UploadedFile], user: str, *, shared: bool = False,
                      collection: str | None = None) -> JobStatus:
        """Queue ``user``'s upload job over ``files`` (``pending`` ones get ingested, into the collection of id
        ``collection`` if given); any worker may take it."""
        now = _now()
        job = JobStatus(id=uuid.uuid4().hex, kind=UPLOAD_KIND, user=user, shared=shared, collection=collection, state=QUEUED,
                        files_total=len(files), files_done=sum(f.status != "pending" for f in files), files=files,
                        created_at=now, updated_at=now)
        self._queue.save_job(job.id, job.kind, job.state, job.model_dump_json(), job.updated_at)
        self._spawn()
        self._wake.set()
        return job

    def get(self, job_id: str) -> JobStatus | None:
        """The job's current state, or None."""
        row = self._queue.job(job_id)
        return JobStatus.model_validate_json(row["payload"]) if row else None

    def fail_interrupted(self) -> int:
        """Mark jobs a restart interrupted as failed, removing each file they had not ingested (for a catalog
        one process holds: whatever is unfinished when it starts belongs to a process that is gone)."""
        interrupted = [JobStatus.model_validate_json(row["payload"]) for row in self._queue.unfinished_jobs()]
        for job in interrupted:
            failed = self._failed(job, INTERRUPTED)
            self._queue.save_job(failed.id, failed.kind, failed.state, failed.model_dump_json(), failed.updated_at)
        return len(interrupted)

    def shutdown(self) -> None:
        """Stop: no new job is taken, and a running one stops after its current file and goes back to the queue
        (another worker, or this server's next start, takes it). Waits for that up to ``heartbeat_seconds``; a file
        still being ingested then is left to the lease (another worker takes the job over when it runs out)."""
        self._stopping.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join(self._config.heartbeat_seconds)

    # -- the worker thread ---------------------------------------------------------------------

    def _loop(self) -> None:
        while not self._stopping.is_set():
            try:
                row = self._queue.claim_job(self.worker, self._config.lease_seconds, _now())
            except RagstreamError:  # the database is unavailable for now: try again later
                logger.exception("could not take a job from the queue")
                row = None
            if row is not None:
                self._run_claimed(row)
                continue
            self._wake.wait(self._config.poll_seconds if self._shared else None)
            self._wake.clear()

    def _run_claimed(self, row: dict[str, Any]) -> None:
        job = JobStatus.model_validate_json(row["payload"])
        attempts = int(row["attempts"])
        if attempts > 1:
            logger.warning("job %s: taken over (attempt %d of %d)", job.id, attempts, self._config.max_attempts)
        if attempts > self._config.max_attempts:
            abandoned = INTERRUPTED.model_copy(update={"message": f"the job's worker stopped {attempts - 1} times "
                                                       "before it finished; files not yet ingested were discarded: "
                                                       "upload them again"})
            self._update(self._failed(job, abandoned), quietly=True)
            return
        lost = threading.Event()
        beat = threading.Thread(target=self._heartbeat, args=(job.id, lost), name="ragstream-job-lease", daemon=True)
        beat.start()
        try:
            self._run(job, resumed=attempts > 1, lost=lost)
        except LeaseLostError:
            logger.warning("job %s: another worker took it over; this one stops", job.id)
        finally:
            lost.set()
            beat.join()

    def _heartbeat(self, job_id: str, done: threading.Event) -> None:
        while not done.wait(self._config.heartbeat_seconds):
            try:
                if not self._queue.renew_job(job_id, self.worker, self._config.lease_seconds):
                    return
            except RagstreamError:
                logger.exception("job %s: could not renew the lease", job_id)

    def _run(self, job: JobStatus, *, resumed: bool, lost: threading.Event) -> None:
        assert self._work is not None
        try:
            job = self._update(job.model_copy(update={"state": RUNNING}))
            for index, item in enumerate(job.files):
                if item.status != "pending":
                    continue
                if self._stopping.is_set():
                    self._update(job.model_copy(update={"state": QUEUED}), quietly=True)
                    return
                outcome = self._work(job, item, resumed)
                files = [*job.files[:index], outcome, *job.files[index + 1:]]
                job = self._update(job.model_copy(update={"files": files, "files_done": job.files_done + 1,
                                                          "chunks": job.chunks + (outcome.chunks or 0)}))
            errors = [item.error for item in job.files if item.status == "failed" and item.error is not None]
            if job.files and len(errors) == len(job.files):  # nothing landed: the job failed, and says why
                self._update(job.model_copy(update={"state": FAILED, "error": combined_error(errors)}))
            else:
                self._update(job.model_copy(update={"state": SUCCEEDED}))
        except LeaseLostError:
            raise
        except Exception as error:  # the job fails, never the worker: its record says why
            logger.exception("background job %s failed", job.id)
            detail = ErrorDetail(**error.to_dict()) if isinstance(error, RagstreamError) else \
                ErrorDetail(code="internal_error", type="InternalError", message="the job failed; see the server log")
            self._update(job.model_copy(update={"state": FAILED, "error": detail}), quietly=True)

    def _failed(self, job: JobStatus, error: ErrorDetail) -> JobStatus:
        """``job`` failed with ``error``: its files not ingested are removed and marked failed."""
        self._discard([item for item in job.files if item.status == "pending"])
        files = [f.model_copy(update={"status": "failed", "error": error, "stored_as": None})
                 if f.status == "pending" else f for f in job.files]
        return job.model_copy(update={"state": FAILED, "error": error, "files": files, "files_done": len(files),
                                      "updated_at": _now()})

    def _update(self, job: JobStatus, *, quietly: bool = False) -> JobStatus:
        """Record ``job`` as this worker's (its lease renewed while it runs); raises LeaseLostError when another worker
        holds it now. ``quietly``: a failure to record is logged, not raised."""
        job = job.model_copy(update={"updated_at": _now()})
        try:
            if not self._queue.update_job(job.id, self.worker, job.state, job.model_dump_json(), job.updated_at,
                                          self._config.lease_seconds):
                raise LeaseLostError(job.id)
        except (RagstreamError, LeaseLostError):
            if not quietly:
                raise
            logger.exception("could not record the state of job %s", job.id)
        return job
