"""Build a Qdrant Edge shard's HNSW index without stalling readers: in a child process, on a copy.

qdrant-edge's ``optimize()`` holds Python's GIL for the whole build (``bench/scale.py`` measured a
reader thread frozen for the full build: a minute at 30k points, far more at 1M), so building in the
serving process would stop every search, and every other thread, for that long. Instead the shard
is copied (after a flush, with writers held off by the caller), a child process opens the copy and
optimizes it, and the built copy replaces the live folder in one short swap (close, two renames,
reopen). Leftovers of a crash at any step are repaired by :func:`recover` when the store opens:
an unfinished copy is deleted; a live folder renamed away but not yet replaced is put back.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time
from pathlib import Path

BUILDING = ".building"
RETIRED = ".retired"
STATE = ".hnsw.json"


def building_path(live: Path) -> Path:
    return live.with_name(live.name + BUILDING)


def retired_path(live: Path) -> Path:
    return live.with_name(live.name + RETIRED)


def state_path(live: Path) -> Path:
    """Where the point count of the last build is kept (beside the shard, never inside it)."""
    return live.with_name(live.name + STATE)


def last_build_points(live: Path) -> int:
    """Points the shard held when its index was last built (0: never built)."""
    try:
        return int(json.loads(state_path(live).read_text())["points"])
    except (OSError, ValueError, KeyError, TypeError):
        return 0


def recover(live: Path) -> None:
    """Undo what a crash in the middle of a build left behind."""
    if not live.exists() and retired_path(live).exists():
        retired_path(live).rename(live)
    for leftover in (building_path(live), retired_path(live)):
        if leftover.exists():
            shutil.rmtree(leftover)


def build_copy(live: Path, timeout_seconds: float) -> tuple[Path, float]:
    """Copy the (flushed, not being written) shard at ``live`` and build its index in a child process.

    Returns the built copy and the seconds the child took. Raises ``RuntimeError`` when the child fails.
    """
    target = building_path(live)
    if target.exists():
        shutil.rmtree(target)
    shutil.copytree(live, target, ignore=shutil.ignore_patterns("*.lock"))
    started = time.perf_counter()
    child = subprocess.run([sys.executable, "-m", "ragstream.store.hnsw_build", str(target)],
                           capture_output=True, text=True, timeout=timeout_seconds, check=False)
    if child.returncode != 0:
        shutil.rmtree(target, ignore_errors=True)
        raise RuntimeError(f"HNSW build failed ({child.returncode}): {child.stderr.strip()[-500:]}")
    return target, time.perf_counter() - started


def swap_in(live: Path, built: Path, points: int) -> None:
    """Replace the (closed) shard at ``live`` with ``built`` and record the build."""
    live.rename(retired_path(live))
    built.rename(live)
    shutil.rmtree(retired_path(live), ignore_errors=True)
    state_path(live).write_text(json.dumps({"points": points}))


def _optimize(path: Path) -> None:
    import qdrant_edge as qe

    shard = qe.EdgeShard.load(str(path))
    try:
        shard.optimize()
        shard.flush()
    finally:
        shard.close()


if __name__ == "__main__":
    _optimize(Path(sys.argv[1]))
