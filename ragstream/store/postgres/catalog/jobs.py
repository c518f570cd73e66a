"""The PostgreSQL catalog's job queue, shared by every worker: leases by the database's clock, and a claim
that skips the rows another worker is taking (no job is taken twice)."""

from __future__ import annotations

from typing import Any

from ragstream.store.catalog_base import CLAIMED_JOB_COLUMNS, JOB_COLUMNS, JOB_QUEUED, JOB_RUNNING, UNFINISHED_JOB_STATES
from ragstream.store.catalog_sql import JOB_BY_ID, SAVE_JOB, postgres
from ragstream.store.postgres.catalog.connection import CLOCK, PostgresRole

# The oldest job that is queued or whose worker's lease ran out, locked for this transaction; a job another
# worker is taking at the same moment is skipped (SKIP LOCKED), so no job is taken twice.
_CLAIM = f"""
WITH next AS (
    SELECT job_id FROM jobs
    WHERE state = %(queued)s OR (state = %(running)s AND (lease_until IS NULL OR lease_until < {CLOCK}))
    ORDER BY created_at, job_id LIMIT 1 FOR UPDATE SKIP LOCKED)
UPDATE jobs SET state = %(running)s, worker = %(worker)s, lease_until = {CLOCK} + %(lease)s,
    attempts = jobs.attempts + 1, updated_at = %(now)s
FROM next WHERE jobs.job_id = next.job_id
RETURNING {", ".join(f"jobs.{column}" for column in CLAIMED_JOB_COLUMNS)}
"""


class PostgresJobQueue(PostgresRole):
    """The :class:`~ragstream.store.catalog_base.JobQueue` in PostgreSQL."""

    def save_job(self, job_id: str, kind: str, state: str, payload: str, now: str) -> None:
        """Create or update a background job (``payload``: its progress and results as JSON text)."""
        with self._db.write() as conn:
            conn.execute(postgres(SAVE_JOB), (job_id, kind, state, payload, now, now))

    def job(self, job_id: str) -> dict[str, str] | None:
        """A job's row (``JOB_COLUMNS``), or None."""
        with self._db.read() as conn:
            row = conn.execute(postgres(JOB_BY_ID), (job_id,)).fetchone()
        return dict(zip(JOB_COLUMNS, row, strict=True)) if row else None

    def unfinished_jobs(self) -> list[dict[str, str]]:
        """Jobs still queued or running, oldest first."""
        with self._db.read() as conn:
            rows = conn.execute(f"SELECT {', '.join(JOB_COLUMNS)} FROM jobs WHERE state = ANY(%s) ORDER BY created_at",
                                (list(UNFINISHED_JOB_STATES),)).fetchall()
        return [dict(zip(JOB_COLUMNS, row, strict=True)) for row in rows]

    def claim_job(self, worker: str, lease_seconds: float, now: str) -> dict[str, Any] | None:
        """Take the oldest queued job, or a running one whose lease ran out, for ``worker``; its row or None."""
        with self._db.write() as conn:
            row = conn.execute(_CLAIM, {"queued": JOB_QUEUED, "running": JOB_RUNNING, "worker": worker,
                                        "lease": lease_seconds, "now": now}).fetchone()
        return dict(zip(CLAIMED_JOB_COLUMNS, row, strict=True)) if row else None

    def renew_job(self, job_id: str, worker: str, lease_seconds: float) -> bool:
        """Extend ``worker``'s lease on its running job; False when it is no longer ``worker``'s."""
        with self._db.write() as conn:
            cursor = conn.execute(f"UPDATE jobs SET lease_until = {CLOCK} + %s WHERE job_id = %s AND worker = %s "
                                  "AND state = %s", (lease_seconds, job_id, worker, JOB_RUNNING))
            return cursor.rowcount == 1

    def update_job(self, job_id: str, worker: str, state: str, payload: str, now: str, lease_seconds: float) -> bool:
        """Record progress or the end of ``worker``'s job; False (nothing written) when it is no longer ``worker``'s."""
        held = state == JOB_RUNNING
        with self._db.write() as conn:
            cursor = conn.execute(
                f"UPDATE jobs SET state = %s, payload = %s, updated_at = %s, "
                f"lease_until = CASE WHEN %s THEN {CLOCK} + %s END, worker = CASE WHEN %s THEN NULL ELSE worker END, "
                "attempts = attempts - CASE WHEN %s THEN 1 ELSE 0 END "
                "WHERE job_id = %s AND worker = %s AND state = %s",
                (state, payload, now, held, lease_seconds, state == JOB_QUEUED, state == JOB_QUEUED, job_id, worker,
                 JOB_RUNNING))
            return cursor.rowcount == 1
