"""Safe storage of uploaded files: ``{upload_dir}/{user folder}/{date}/{uuid}``.

The client's file name never becomes part of a path. Each user has a folder of their own,
:func:`user_folder`: the user id's safe characters plus a hash of the whole id, so no two users
ever share one (``carol@example.com`` and ``carol.example@com`` included). Files are copied in
bounded reads while their sha256 is computed and their size checked.
"""

from __future__ import annotations

import errno
import hashlib
import re
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path, PurePosixPath
from typing import BinaryIO

from ragstream.errors import FileTooLargeError, InsufficientStorageError
from ragstream.store.disk import ensure_free_space

_UNSAFE_USER_CHARS = re.compile(r"[^A-Za-z0-9_-]")
_STORED_NAME = re.compile(r"[0-9a-f]{32}")
"""The name :meth:`UploadStore.save` gives a stored file (a uuid4's hex)."""
UPLOADS_DIRNAME = "uploads"
SHARED_FOLDER = "shared"
"""Folder of shared uploads; no user folder is named like it (theirs always end in ``-{hash}``)."""
USER_HASH_CHARS = 32
"""Hex digits of the user id's sha256 in a user folder's name (128 bits: no two ids collide)."""


@dataclass(frozen=True)
class StoredUpload:
    """An uploaded file as stored: where, how big, and its sha256."""

    path: Path
    relative: str
    size_bytes: int
    sha256: str


class UploadStore:
    """Writes uploads under one root directory and removes them again; nothing escapes the root."""

    def __init__(self, root: Path, *, max_file_bytes: int, read_bytes: int, min_free_bytes: int = 0) -> None:
        self.root = root.resolve()
        self._max_file_bytes = max_file_bytes
        self._read_bytes = read_bytes
        self._min_free_bytes = min_free_bytes

    def save(self, source: BinaryIO, folder: str, display_name: str) -> StoredUpload:
        """Copy ``source`` to a fresh path in ``folder`` (a :func:`user_folder`); raises FileTooLargeError past
        the size limit and InsufficientStorageError when a block would leave less than ``min_free_bytes`` free
        (nothing left behind)."""
        day = datetime.now(UTC).strftime("%Y-%m-%d")
        relative = PurePosixPath(folder, day, uuid.uuid4().hex)
        path = self.root.joinpath(*relative.parts)
        ensure_free_space([self.root], 0, self._min_free_bytes)
        digest = hashlib.sha256()
        size = 0
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            with path.open("xb") as out:
                while block := source.read(self._read_bytes):
                    size += len(block)
                    if size > self._max_file_bytes:
                        raise too_large(display_name, self._max_file_bytes)
                    ensure_free_space([self.root], len(block), self._min_free_bytes)
                    digest.update(block)
                    out.write(block)
        except OSError as error:
            path.unlink(missing_ok=True)
            if error.errno == errno.ENOSPC:
                raise InsufficientStorageError(f"{display_name}: the disk is full") from None
            raise
        except BaseException:
            path.unlink(missing_ok=True)
            raise
        return StoredUpload(path=path, relative=str(relative), size_bytes=size, sha256=digest.hexdigest())

    def remove(self, relative: str) -> bool:
        """Delete a stored upload by its relative path; False when it is gone or not under the root."""
        path = (self.root / relative).resolve()
        if not path.is_relative_to(self.root) or not path.is_file():
            return False
        path.unlink()
        return True

    def sweep(self, keep: set[str]) -> list[str]:
        """Delete every stored upload (``{folder}/{date}/{uuid}``) whose relative path is not in ``keep``, and the
        date folders left empty; the relative paths removed. Only for a root nobody else writes to meanwhile."""
        removed: list[str] = []
        for path in sorted(self.root.glob("*/*/*")):
            relative = path.relative_to(self.root).as_posix()
            if _STORED_NAME.fullmatch(path.name) and path.is_file() and not path.is_symlink() and relative not in keep:
                path.unlink(missing_ok=True)
                removed.append(relative)
        for day in self.root.glob("*/*"):
            if day.is_dir() and not day.is_symlink() and not any(day.iterdir()):
                day.rmdir()
        return removed


def too_large(display_name: str, limit: int) -> FileTooLargeError:
    """The error of a file over ``limits.max_file_bytes``."""
    return FileTooLargeError(f"{display_name}: larger than the limit of {limit} bytes (limits.max_file_bytes)")


def user_folder(owner: str | None) -> str:
    """The upload folder of ``owner`` (None: shared): ``{safe characters of the id}-{hash of the id}``,
    one folder per user id and never the same for two."""
    if owner is None:
        return SHARED_FOLDER
    digest = hashlib.sha256(owner.encode("utf-8")).hexdigest()[:USER_HASH_CHARS]
    return f"{_UNSAFE_USER_CHARS.sub('', owner)}-{digest}"
