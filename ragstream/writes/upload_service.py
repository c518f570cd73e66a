"""Uploads over one index, as a server takes them: where they are stored, the per-document locks, the
intake of each file and the background jobs that ingest large requests (ragstream/writes/jobs.py).

Built by the facade (``Ragstream.upload_service``); the server reads the request and answers it.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path

from ragstream.config import RagstreamConfig, ServerConfig
from ragstream.models import DocumentRecord, JobStatus, UploadedFile, Writer
from ragstream.store.catalog_base import JobQueue
from ragstream.store.disk import ensure_free_space
from ragstream.writes.jobs import JobRunner
from ragstream.writes.service import WriteService, WriteTarget
from ragstream.writes.upload_store import UPLOADS_DIRNAME, UploadStore
from ragstream.writes.uploads import DocumentLocks, Duplicates, FindDocument, UploadIntake, stored_upload
from ragstream.writes.workload import background_reason

logger = logging.getLogger("ragstream.server")  # the name its log lines always had


class UploadService:
    """The stored uploads (``store``), their document locks (``locks``), the intake of each file (``intake``)
    and the background jobs (``jobs``) of one index."""

    def __init__(self, config: RagstreamConfig, server: ServerConfig, writes: WriteService, queue: JobQueue, *,
                 shared: bool, find_document: FindDocument, duplicates: Duplicates,
                 live_documents: Callable[[], list[DocumentRecord]]) -> None:
        """``shared``: other processes use the catalog too (its jobs are taken by any of them, and no stored
        upload is an orphan just because this process does not know it)."""
        self._config = config
        self.shared = shared
        self._live_documents = live_documents
        root = server.upload_dir or Path(config.data_dir) / UPLOADS_DIRNAME
        self.store = UploadStore(root, max_file_bytes=config.limits.max_file_bytes,
                                 read_bytes=server.upload_read_bytes, min_free_bytes=config.limits.min_free_disk_bytes)
        self.locks = DocumentLocks()
        self.intake = UploadIntake(writes, self.store, self.locks, dedupe=server.dedupe_uploads,
                                   find_document=find_document, duplicates=duplicates)
        self.jobs = JobRunner(queue, server.jobs, shared=shared, discard=self._discard_unindexed)

    def check_room(self, declared_bytes: int) -> None:
        """InsufficientStorageError, before anything is read, when the disk lacks room for a request body of
        ``declared_bytes`` plus ``limits.min_free_disk_bytes``."""
        ensure_free_space([self.store.root, Path(self._config.data_dir)], declared_bytes,
                          self._config.limits.min_free_disk_bytes)

    def start_jobs(self) -> None:
        """Start taking background jobs (on a catalog this process holds alone, those a restart interrupted
        are failed first)."""
        if not self.shared:
            self.jobs.fail_interrupted()
        self.jobs.start(self._job_work)

    def background_reason(self, results: list[UploadedFile], received: int) -> str | None:
        """Why the stored files of a request's ``results`` (that sent ``received`` bytes of files) go to a
        background job (None: ingest them now; every file refused: answer now)."""
        stored = [(self.store.root / r.stored_as, r.filename) for r in results if r.status == "pending" and r.stored_as]
        if not stored:
            return None
        reason = background_reason(stored, received, self._config)
        if reason:
            logger.info("upload of %d file(s) queued as a background job: %s", len(stored), reason)
        return reason

    def _job_work(self, job: JobStatus, item: UploadedFile, resumed: bool) -> UploadedFile:
        """How a background job ingests one of its stored files (checking first, in a job taken over from a worker
        that died, whether that worker got the file in already). Its target was checked when it was submitted."""
        owner = None if job.shared or job.collection else job.user
        target = WriteTarget(Writer(user=job.user), owner, job.collection)
        done = self.intake.already_ingested(item, target) if resumed else None
        return done or self.intake.ingest_stored(item, target)

    def sweep_orphans(self) -> None:
        """At start-up on a catalog this process holds alone, and with uploads under the data directory (no other
        index shares them): delete the stored uploads no live document holds, left by a crash between storing a
        file and committing or refusing it (those of an interrupted job included; the job is failed when the jobs
        start)."""
        if self.shared or not self.store.root.is_relative_to(Path(self._config.data_dir).resolve()):
            return
        live = {path for record in self._live_documents() if (path := stored_upload(record))}
        removed = self.store.sweep(live)
        if removed:
            logger.warning("removed %d stored upload(s) that no document holds (left by an earlier crash)", len(removed))

    def _discard_unindexed(self, items: list[UploadedFile]) -> None:
        """Removes the stored uploads a failed job never ingested (each kept when a live document names it)."""
        live = {str(stored_upload(record)) for record in self._live_documents()}
        for item in items:
            if item.stored_as and item.stored_as not in live:
                self.store.remove(item.stored_as)
