"""The files of a root a sync looks at, and whether their content changed since the index took them."""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterable
from pathlib import Path

import pathspec

from ragstream.documents.file_access import FollowSymlinks, inside, open_document


class TemporaryFiles:
    """Editors' lock, swap and backup files and partial downloads, by name (``sync.temporary_files``)."""

    def __init__(self, patterns: Iterable[str]) -> None:
        self._spec = pathspec.GitIgnoreSpec.from_lines(patterns)

    def match(self, path: str | Path) -> bool:
        """Whether ``path``'s name is a temporary file's."""
        return self._spec.match_file(Path(path).name)


class FileDigests:
    """sha256 of files' bytes (what the catalog keeps as a document's checksum), remembered with the file's size
    and modification time so that a later sync of this process reads only the files that changed.

    Not thread-safe: the :class:`~ragstream.sync.syncer.Syncer` runs one sync at a time.
    """

    def __init__(self, block_bytes: int, max_bytes: int, follow: FollowSymlinks = "inside_root") -> None:
        self._block_bytes = block_bytes
        self._max_bytes = max_bytes
        self._follow = follow
        self._known: dict[str, tuple[int, int, str]] = {}

    def digest(self, path: Path, *, root: str | None = None, fresh: bool = False) -> str | None:
        """The file's sha256 (hex); None for a file over ``limits.max_file_bytes`` (ingest refuses it with its own
        error). ``root``: the resolved root the file must lie inside (``ingest.follow_symlinks``). ``fresh``: read
        it even when size and time are unchanged (a file event said it changed). Raises OSError
        (FileNotFoundError when it is gone) and DocumentError (not a regular file, or outside ``root``)."""
        handle, _ = open_document(path, root=root, follow=self._follow)
        with handle:
            stat = os.fstat(handle.fileno())
            if stat.st_size > self._max_bytes:
                return None
            key = str(path)
            known = self._known.get(key)
            if not fresh and known is not None and known[:2] == (stat.st_size, stat.st_mtime_ns):
                return known[2]
            sha = hashlib.sha256()
            while block := handle.read(self._block_bytes):
                sha.update(block)
        self._known[key] = (stat.st_size, stat.st_mtime_ns, sha.hexdigest())
        return sha.hexdigest()

    def prune(self, root: Path, seen: Iterable[str]) -> None:
        """Forget the files under ``root`` that a full sync of it did not see (gone or no longer taken)."""
        keep = set(seen)
        prefix = str(root) + os.sep
        for key in [key for key in self._known if (key == str(root) or key.startswith(prefix)) and key not in keep]:
            del self._known[key]


def under(source: str, root: str) -> bool:
    """Whether the path ``source`` is ``root`` or lies inside it."""
    return inside(source, root)
