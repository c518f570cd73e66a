"""Build a Qdrant Edge shard's HNSW index without stalling readers: in a child process, on a copy.

qdrant-edge's ``optimize()`` holds Python's GIL for the whole build (``bench/scale.py`` measured a
reader thread frozen for the full build: a minute at 30k points, far more at 1M), so building in the
serving process would stop every search, and every other thread, for that long. Instead the shard
is copied (after a flush, with writers held off by the caller), a child process opens the copy and
optimizes it, and the built copy becomes a new shard folder beside the live one
(``qdrant.hnsw-<n>``). The caller loads it while readers still search the old one, records it in
the pointer file (``qdrant.current``, replaced atomically: the commit of the swap), and swaps the
handle, the only pause readers see; the old folder is closed and deleted after. Leftovers of a
crash at any step are repaired by :func:`recover` when the store opens: the pointer names the one
folder that counts, every other shard folder is deleted.
"""

from __future__ import annotations

import glob
import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

BUILDING = ".building"
RETIRED = ".retired"
STATE = ".hnsw.json"
CURRENT = ".current"
BUILT = ".hnsw-"


def building_path(live: Path) -> Path:
    return live.with_name(live.name + BUILDING)


def retired_path(live: Path) -> Path:
    """Where the swap of earlier versions moved the live folder for a moment (recovered on open)."""
    return live.with_name(live.name + RETIRED)


def state_path(live: Path) -> Path:
    """Where the point count of the last build is kept (beside the shard, never inside it)."""
    return live.with_name(live.name + STATE)


def pointer_path(live: Path) -> Path:
    """The file naming the shard folder in use when it is not ``live`` itself (after a build)."""
    return live.with_name(live.name + CURRENT)


def last_build_points(live: Path) -> int:
    """Points the shard held when its index was last built (0: never built)."""
    try:
        return int(json.loads(state_path(live).read_text())["points"])
    except (OSError, ValueError, KeyError, TypeError):
        return 0


def active_path(live: Path) -> Path:
    """The shard folder in use: the one the pointer names if it exists, else ``live``."""
    try:
        name = str(json.loads(pointer_path(live).read_text())["folder"])
    except (OSError, ValueError, KeyError, TypeError):
        return live
    folder = live.with_name(name)
    return folder if name.startswith(live.name + BUILT) and folder.is_dir() else live


def recover(live: Path) -> None:
    """Undo what a crash in the middle of a build left behind: keep the folder in use, delete the rest."""
    if retired_path(live).exists() and not live.exists():
        retired_path(live).rename(live)
    active = active_path(live)
    leftovers = [building_path(live), retired_path(live), *_built_folders(live)]
    if active == live:
        pointer_path(live).unlink(missing_ok=True)
    else:
        leftovers.append(live)  # replaced by a build whose swap committed; not deleted yet
    for leftover in leftovers:
        if leftover != active and leftover.exists():
            shutil.rmtree(leftover)


def build_copy(live: Path, source: Path, timeout_seconds: float) -> tuple[Path, float]:
    """Copy the (flushed, not being written) shard folder ``source`` and build its index in a child process.

    Returns the built copy and the seconds the child took. Raises ``RuntimeError`` when the child fails.
    """
    target = building_path(live)
    if target.exists():
        shutil.rmtree(target)
    shutil.copytree(source, target, ignore=shutil.ignore_patterns("*.lock"))
    started = time.perf_counter()
    child = subprocess.run([sys.executable, "-m", "ragstream.store.hnsw_build", str(target)],
                           capture_output=True, text=True, timeout=timeout_seconds, check=False)
    if child.returncode != 0:
        shutil.rmtree(target, ignore_errors=True)
        raise RuntimeError(f"HNSW build failed ({child.returncode}): {child.stderr.strip()[-500:]}")
    return target, time.perf_counter() - started


def place(live: Path, built: Path) -> Path:
    """Move the built copy to a new shard folder beside ``live`` (not in use until :func:`commit`)."""
    numbers = [int(match.group(1)) for folder in _built_folders(live)
               if (match := re.fullmatch(re.escape(live.name + BUILT) + r"(\d+)", folder.name))]
    folder = live.with_name(f"{live.name}{BUILT}{max(numbers, default=0) + 1}")
    built.rename(folder)
    return folder


def commit(live: Path, folder: Path) -> None:
    """Make ``folder`` the shard in use: an atomic replace of the pointer file."""
    _write_atomically(pointer_path(live), json.dumps({"folder": folder.name}))


def record_build(live: Path, points: int) -> None:
    """Remember that the index was built over ``points`` points (the policy's next threshold)."""
    _write_atomically(state_path(live), json.dumps({"points": points}))


def discard(folder: Path) -> None:
    """Delete a shard folder no longer in use (what is left is deleted by :func:`recover` at the next open)."""
    shutil.rmtree(folder, ignore_errors=True)


def _built_folders(live: Path) -> list[Path]:
    if not live.parent.exists():
        return []
    return sorted(folder for folder in live.parent.glob(f"{glob.escape(live.name)}{BUILT}*") if folder.is_dir())


def _write_atomically(path: Path, text: str) -> None:
    temporary = path.with_name(path.name + ".tmp")
    with temporary.open("w") as handle:
        handle.write(text)
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(temporary, path)
    directory = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(directory)
    finally:
        os.close(directory)


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
