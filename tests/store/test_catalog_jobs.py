"""The catalog's job queue (``JobQueue``) on every catalog backend (the ``catalog`` fixture: SQLite and
PostgreSQL): jobs kept with their progress, leases, takeover of a dead worker's job, and one worker per job
under concurrent claims. tests/server/test_job_queue.py runs the server's job runner over it."""

from __future__ import annotations

import threading

from ragstream.store.catalog_base import Catalog

EXPIRED = -1.0
"""A lease that has run out already (what a worker that died leaves behind), without waiting for one."""
LEASE = 60.0


def test_jobs_are_kept_with_their_progress(catalog: Catalog):
    jobs = catalog.jobs
    jobs.save_job("j1", "upload", "queued", '{"files_done": 0}', "2026-01-01T00:00:00+00:00")
    jobs.save_job("j2", "upload", "succeeded", "{}", "2026-01-01T00:00:01+00:00")
    jobs.save_job("j1", "upload", "running", '{"files_done": 1}', "2026-01-01T00:00:02+00:00")
    job = jobs.job("j1")
    assert job is not None and job["state"] == "running" and job["payload"] == '{"files_done": 1}'
    assert job["created_at"] == "2026-01-01T00:00:00+00:00" and job["updated_at"] == "2026-01-01T00:00:02+00:00"
    assert jobs.job("nope") is None
    assert [row["job_id"] for row in jobs.unfinished_jobs()] == ["j1"]


def test_leases_and_takeover(catalog: Catalog):
    jobs = catalog.jobs
    for number in range(2):
        jobs.save_job(f"j{number}", "upload", "queued", f'{{"n": {number}}}', f"2026-01-01T00:00:0{number}+00:00")
    first = jobs.claim_job("worker-a", EXPIRED, "2026-01-01T00:01:00+00:00")
    assert first is not None and first["job_id"] == "j0" and first["state"] == "running" and first["attempts"] == 1
    assert first["payload"] == '{"n": 0}'
    taken_over = jobs.claim_job("worker-c", LEASE, "2026-01-01T00:01:01+00:00")  # worker-a's lease ran out
    assert taken_over is not None and taken_over["job_id"] == "j0" and taken_over["attempts"] == 2
    assert taken_over["payload"] == '{"n": 0}'  # with the progress worker-a recorded
    second = jobs.claim_job("worker-b", LEASE, "2026-01-01T00:01:02+00:00")
    assert second is not None and second["job_id"] == "j1" and second["attempts"] == 1
    assert jobs.claim_job("worker-d", LEASE, "2026-01-01T00:01:03+00:00") is None  # both held by live leases
    assert not jobs.renew_job("j0", "worker-a", LEASE)  # the dead worker lost it ...
    assert not jobs.update_job("j0", "worker-a", "running", '{"n": "stale"}', "2026-01-01T00:01:04+00:00", LEASE)
    assert jobs.job("j0")["payload"] == '{"n": 0}'  # type: ignore[index]  # ... and writes nothing
    assert jobs.renew_job("j0", "worker-c", LEASE)
    assert jobs.update_job("j0", "worker-c", "running", '{"n": 1}', "2026-01-01T00:01:05+00:00", LEASE)
    assert jobs.update_job("j0", "worker-c", "succeeded", '{"n": 2}', "2026-01-01T00:01:06+00:00", LEASE)
    assert jobs.job("j0")["state"] == "succeeded" and jobs.job("j0")["payload"] == '{"n": 2}'  # type: ignore[index]
    assert not jobs.update_job("j0", "worker-c", "failed", "{}", "2026-01-01T00:01:07+00:00", LEASE)  # finished
    assert jobs.update_job("j1", "worker-b", "queued", '{"n": 3}', "2026-01-01T00:01:08+00:00", LEASE)  # handed back
    again = jobs.claim_job("worker-e", LEASE, "2026-01-01T00:01:09+00:00")
    assert again is not None and again["job_id"] == "j1" and again["attempts"] == 1  # a hand-back is no attempt
    assert [row["job_id"] for row in jobs.unfinished_jobs()] == ["j1"]


def test_each_job_goes_to_one_worker(catalog: Catalog):
    jobs = catalog.jobs
    queued = [f"job{number:02d}" for number in range(24)]
    for job_id in queued:
        jobs.save_job(job_id, "upload", "queued", "{}", "2026-01-01T00:00:00+00:00")
    taken: list[list[str]] = [[] for _ in range(4)]

    def take(worker: int) -> None:
        while (row := jobs.claim_job(f"worker-{worker}", LEASE, "2026-01-01T00:01:00+00:00")) is not None:
            taken[worker].append(row["job_id"])

    threads = [threading.Thread(target=take, args=(worker,)) for worker in range(len(taken))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    everything = [job_id for ids in taken for job_id in ids]
    assert sorted(everything) == queued  # every job taken, none twice
