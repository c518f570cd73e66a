"""The SQLite catalog's job queue: jobs and their workers' leases (by this machine's clock)."""

from __future__ import annotations

import time
from typing import Any

from ragstream.store.catalog_base import CLAIMED_JOB_COLUMNS, JOB_COLUMNS, JOB_QUEUED, JOB_RUNNING, UNFINISHED_JOB_STATES
from ragstream.store.catalog_sql import JOB_BY_ID, SAVE_JOB
from ragstream.store.sqlite_catalog.connection import SqliteRole


class SqliteJobQueue(SqliteRole):
    """The :class:`~ragstream.store.catalog_base.JobQueue` in SQLite."""

    def save_job(self, job_id: str, kind: str, state: str, payload: str, now: str) -> None:
        """Create or update a background job (``payload``: its progress and results as JSON text)."""
        with self._connection.transaction() as db:
            db.execute(SAVE_JOB, (job_id, kind, state, payload, now, now))

    def job(self, job_id: str) -> dict[str, str] | None:
        """A job's row (``JOB_COLUMNS``), or None."""
        with self._connection.lock:
            row = self._connection.db.execute(JOB_BY_ID, (job_id,)).fetchone()
        return dict(zip(JOB_COLUMNS, row, strict=True)) if row else None

    def unfinished_jobs(self) -> list[dict[str, str]]:
        """Jobs still queued or running (after a restart: the ones it interrupted)."""
        marks = ", ".join("?" * len(UNFINISHED_JOB_STATES))
        with self._connection.lock:
            rows = self._connection.db.execute(f"SELECT {', '.join(JOB_COLUMNS)} FROM jobs WHERE state IN ({marks})",
                                               UNFINISHED_JOB_STATES).fetchall()
        return [dict(zip(JOB_COLUMNS, row, strict=True)) for row in rows]

    def claim_job(self, worker: str, lease_seconds: float, now: str) -> dict[str, Any] | None:
        """Take the oldest queued job, or a running one whose lease ran out, for ``worker``; its row or None."""
        with self._connection.transaction() as db:  # BEGIN IMMEDIATE: one claimer at a time
            row = db.execute(
                f"SELECT {', '.join(CLAIMED_JOB_COLUMNS)} FROM jobs WHERE state = ? OR (state = ? AND "
                "(lease_until IS NULL OR lease_until < ?)) ORDER BY created_at, job_id LIMIT 1",
                (JOB_QUEUED, JOB_RUNNING, time.time())).fetchone()
            if row is None:
                return None
            claimed = dict(zip(CLAIMED_JOB_COLUMNS, row, strict=True))
            db.execute("UPDATE jobs SET state = ?, worker = ?, lease_until = ?, attempts = attempts + 1, updated_at = ? "
                       "WHERE job_id = ?", (JOB_RUNNING, worker, time.time() + lease_seconds, now, claimed["job_id"]))
        return claimed | {"state": JOB_RUNNING, "updated_at": now, "attempts": claimed["attempts"] + 1}

    def renew_job(self, job_id: str, worker: str, lease_seconds: float) -> bool:
        """Extend ``worker``'s lease on its running job; False when it is no longer ``worker``'s."""
        with self._connection.transaction() as db:
            cursor = db.execute("UPDATE jobs SET lease_until = ? WHERE job_id = ? AND worker = ? AND state = ?",
                                (time.time() + lease_seconds, job_id, worker, JOB_RUNNING))
            return cursor.rowcount == 1

    def update_job(self, job_id: str, worker: str, state: str, payload: str, now: str, lease_seconds: float) -> bool:
        """Record progress or the end of ``worker``'s job; False (nothing written) when it is no longer ``worker``'s."""
        queued = state == JOB_QUEUED
        lease = time.time() + lease_seconds if state == JOB_RUNNING else None
        with self._connection.transaction() as db:
            cursor = db.execute(
                "UPDATE jobs SET state = ?, payload = ?, updated_at = ?, lease_until = ?, "
                "worker = CASE WHEN ? THEN NULL ELSE worker END, attempts = attempts - ? "
                "WHERE job_id = ? AND worker = ? AND state = ?",
                (state, payload, now, lease, queued, int(queued), job_id, worker, JOB_RUNNING))
            return cursor.rowcount == 1
