"""Background jobs: large uploads are ingested by a worker thread while the client polls their progress.

A job's state (``queued`` -> ``running`` -> ``succeeded`` | ``failed``) and progress (files done of
total, chunks written, the per-file results) live in the catalog's ``jobs`` table, so they survive the
request and the process. Jobs run one at a time, in submission order. On start-up, a job a restart
interrupted (still queued or running) is marked failed, and the stored files it had not ingested yet
are removed, so no job stays "running" forever and no upload file is left behind.
"""

from __future__ import annotations

import logging
import threading
import uuid
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime

from ragstream.errors import RagstreamError
from ragstream.server.schemas import ErrorDetail, JobStatus, UploadedFile
from ragstream.store.catalog_base import CatalogBackend

logger = logging.getLogger("ragstream.server")

QUEUED, RUNNING, SUCCEEDED, FAILED = "queued", "running", "succeeded", "failed"
UPLOAD_KIND = "upload"
INTERRUPTED = ErrorDetail(code="job_interrupted", type="JobInterrupted",
                          message="the server stopped before the job finished; files not yet ingested were discarded: "
                                  "upload them again")
FileWork = Callable[[UploadedFile], UploadedFile]
"""Ingests one stored file (status ``pending``) and returns its outcome."""


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


class JobRunner:
    """Runs jobs one at a time on a worker thread; their state lives in the catalog."""

    def __init__(self, catalog: CatalogBackend) -> None:
        self._catalog = catalog
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="ragstream-job")
        self._lock = threading.Lock()
        self._stopping = threading.Event()

    def submit_upload(self, files: list[UploadedFile], user: str, work: FileWork) -> JobStatus:
        """Record ``user``'s queued upload job over ``files`` (``pending`` ones are ingested by ``work``) and start it."""
        now = _now()
        job = JobStatus(id=uuid.uuid4().hex, kind=UPLOAD_KIND, user=user, state=QUEUED, files_total=len(files),
                        files_done=sum(f.status != "pending" for f in files), files=files, created_at=now, updated_at=now)
        self._save(job)
        self._executor.submit(self._run, job, work)
        return job

    def get(self, job_id: str) -> JobStatus | None:
        """The job's current state, or None."""
        row = self._catalog.job(job_id)
        return JobStatus.model_validate_json(row["payload"]) if row else None

    def fail_interrupted(self, discard: Callable[[UploadedFile], None]) -> int:
        """Mark jobs a restart interrupted as failed, calling ``discard`` on each file they had not ingested."""
        interrupted = [JobStatus.model_validate_json(row["payload"]) for row in self._catalog.unfinished_jobs()]
        for job in interrupted:
            for item in job.files:
                if item.status == "pending":
                    discard(item)
            files = [f.model_copy(update={"status": "failed", "error": INTERRUPTED, "stored_as": None})
                     if f.status == "pending" else f for f in job.files]
            self._save(job.model_copy(update={"state": FAILED, "error": INTERRUPTED, "files": files,
                                              "files_done": len(files)}))
        return len(interrupted)

    def shutdown(self) -> None:
        """Stop: queued jobs never start and a running one stops after its current file; both stay unfinished
        in the catalog, so the next start reports them failed and removes their files not ingested."""
        self._stopping.set()
        self._executor.shutdown(wait=False, cancel_futures=True)

    def _run(self, job: JobStatus, work: FileWork) -> None:
        if self._stopping.is_set():
            return
        job = self._save(job.model_copy(update={"state": RUNNING}))
        try:
            for index, item in enumerate(job.files):
                if item.status != "pending":
                    continue
                if self._stopping.is_set():
                    return
                outcome = work(item)
                files = [*job.files[:index], outcome, *job.files[index + 1:]]
                job = self._save(job.model_copy(update={"files": files, "files_done": job.files_done + 1,
                                                        "chunks": job.chunks + (outcome.chunks or 0)}))
            job = self._save(job.model_copy(update={"state": SUCCEEDED}))
        except Exception as error:  # the job fails, never the worker: its record says why
            logger.exception("background job %s failed", job.id)
            detail = ErrorDetail(**error.to_dict()) if isinstance(error, RagstreamError) else \
                ErrorDetail(code="internal_error", type="InternalError", message="the job failed; see the server log")
            try:
                self._save(job.model_copy(update={"state": FAILED, "error": detail}))
            except RagstreamError:
                logger.exception("could not record the failure of job %s", job.id)

    def _save(self, job: JobStatus) -> JobStatus:
        job = job.model_copy(update={"updated_at": _now()})
        with self._lock:
            self._catalog.save_job(job.id, job.kind, job.state, job.model_dump_json(), job.updated_at)
        return job
