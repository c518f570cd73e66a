"""Wait for something a background thread or process does: poll a check until it holds or time runs out."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import pytest

WAIT_SECONDS = 90.0
"""How long a test waits for a watcher, a server or a job before it fails (generous: CI machines are busy)."""
POLL_SECONDS = 0.3


def wait_for(check: Callable[[], Any], what: str, seconds: float = WAIT_SECONDS) -> Any:
    """Poll ``check`` until it returns something truthy (returned); fail naming ``what`` after ``seconds``."""
    deadline = time.monotonic() + seconds
    while True:
        found = check()
        if found:
            return found
        if time.monotonic() > deadline:
            pytest.fail(f"{what}: not seen within {seconds:.0f} s")
        time.sleep(POLL_SECONDS)

def finished_job(api: Any, job_id: str, seen: list[int] | None = None, seconds: float = 300.0) -> dict[str, Any]:
    """Poll ``GET /api/jobs/{job_id}`` on the httpx client ``api`` until the job succeeded or failed (returned), adding
    each ``files_done`` seen to ``seen``; fail after ``seconds`` (a bound on the loop, not a performance assertion)."""
    deadline = time.monotonic() + seconds
    while True:
        job: dict[str, Any] = api.get(f"/api/jobs/{job_id}").json()
        if seen is not None:
            seen.append(job["files_done"])
        if job["state"] in ("succeeded", "failed"):
            return job
        if time.monotonic() > deadline:
            pytest.fail(f"job {job_id} still {job['state']} after {seconds:.0f} s")
        time.sleep(POLL_SECONDS)


QUICK_SYNC = {"debounce_ms": 200, "max_debounce_ms": 2000, "stable_seconds": 0.5, "poll_seconds": 0.2,
              "heartbeat_seconds": 1.0, "lease_seconds": 60.0}
"""A watcher's ``sync`` settings with short waits, so a test's changes show in seconds (the defaults suit people)."""
