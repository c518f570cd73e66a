"""Opening a file taken from a folder so that it cannot lead out of that folder (``ingest.follow_symlinks``).

A folder walk decides which symlinks it follows (:mod:`ragstream.documents.selection`), but the file can change
between the walk and the read: a regular file swapped for a link to ``/etc/passwd``, a folder on the way swapped
for a link elsewhere. So the read checks again, on what it actually opened: the open does not block (a FIFO
swapped in is refused, not waited on), the handle must be a regular file, and, unless links may go anywhere, the
file's resolved path must lie inside the folder and name the very file that was opened (same device and inode),
so a link swapped back after the open is caught too. With ``never`` the last component is opened without
following a link (``O_NOFOLLOW``).
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path
from typing import BinaryIO, Literal

from ragstream.errors import NotARegularFileError, OutsideRootError

FollowSymlinks = Literal["never", "inside_root", "always"]
_O_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_O_NONBLOCK = getattr(os, "O_NONBLOCK", 0)
_O_BINARY = getattr(os, "O_BINARY", 0)


def inside(path: str, root: str) -> bool:
    """Whether the path ``path`` is ``root`` or lies inside it (both resolved)."""
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


def open_document(path: str | Path, *, root: str | None = None,
                  follow: FollowSymlinks = "inside_root") -> tuple[BinaryIO, str]:
    """Open the regular file ``path`` for reading; the handle and the file's resolved path.

    ``root``: the resolved folder the file was taken from (None: a file named on its own, read wherever it
    leads). Raises :class:`NotARegularFileError` (a FIFO, socket, device or folder), :class:`OutsideRootError`
    (the file resolves outside ``root``, or is a link while ``follow`` is ``never``) and ``OSError`` (gone,
    unreadable, a symlink loop).
    """
    within = None if follow == "always" else root
    flags = os.O_RDONLY | _O_NONBLOCK | _O_BINARY | (_O_NOFOLLOW if within is not None and follow == "never" else 0)
    try:
        fd = os.open(path, flags)
    except OSError as error:
        if error.errno == errno.ELOOP and flags & _O_NOFOLLOW and os.path.islink(path):
            raise OutsideRootError(f"{path}: a symbolic link, not followed (ingest.follow_symlinks = never)") from error
        raise
    try:
        status = os.fstat(fd)
        if not stat.S_ISREG(status.st_mode):
            raise NotARegularFileError(f"{path}: not a regular file (a folder, FIFO, socket or device)")
        real = os.path.realpath(path)
        if within is not None and not (inside(real, within) and _same_file(real, status)):
            raise OutsideRootError(f"{path}: resolves to {real}, outside the folder {within} (ingest.follow_symlinks)")
        if _O_NONBLOCK:
            os.set_blocking(fd, True)
        return os.fdopen(fd, "rb"), real
    except BaseException:
        os.close(fd)
        raise


def _same_file(real: str, opened: os.stat_result) -> bool:
    """Whether ``real`` (a resolved path) is the file that was opened."""
    try:
        status = os.stat(real)
    except OSError:
        return False
    return (status.st_dev, status.st_ino) == (opened.st_dev, opened.st_ino)

