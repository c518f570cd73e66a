"""Free-space checks before writes: a full disk gives InsufficientStorageError, never a half write.

Writers call :func:`ensure_free_space` with what they are about to write; it refuses when the
filesystem would keep less than the configured minimum (``limits.min_free_disk_bytes``) after it.
Refusing before the write matters because the vector store maps its files into memory: a write
into a full filesystem there is a SIGBUS, not an error a caller could catch.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterable
from pathlib import Path

from ragstream.errors import InsufficientStorageError


def free_bytes(path: Path) -> int:
    """Free bytes (for an unprivileged writer) on the filesystem holding ``path`` or its nearest existing parent."""
    probe = Path(path).absolute()
    while not probe.exists() and probe != probe.parent:
        probe = probe.parent
    return shutil.disk_usage(probe).free


def unallocated_bytes(folder: Path) -> int:
    """Bytes the files under ``folder`` hold as holes (their size past the blocks the filesystem allocated):
    what writing into them, through memory maps too, may still take from the disk (0 for a missing folder)."""
    total = 0
    for path in folder.rglob("*") if folder.is_dir() else ():
        try:
            stats = path.lstat()
        except OSError:
            continue
        if path.is_file():
            total += max(0, stats.st_size - stats.st_blocks * 512)
    return total


def ensure_free_space(paths: Iterable[Path], needed: int, minimum: int) -> None:
    """Raise InsufficientStorageError unless each path's filesystem has ``needed + minimum`` bytes free."""
    for path in paths:
        free = free_bytes(path)
        if free < needed + minimum:
            raise InsufficientStorageError(
                f"not enough free disk space: {free} bytes free, {needed} needed plus the "
                f"minimum of {minimum} kept free (limits.min_free_disk_bytes)")
