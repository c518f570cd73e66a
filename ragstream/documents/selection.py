"""Which files an ingest takes: folders by document type, include/exclude globs and ignore files.

A file named on its own is always taken (sniffing still refuses what is not a document). A folder
is walked recursively in sorted order; each file is taken when it matches ``ingest.include`` and is
not excluded, ignored or hidden. Globs follow ``.gitignore`` rules (``*.md`` matches at any depth,
``drafts/`` a folder, ``/notes.txt`` only at the top). Ignore files (``ingest.ignore_files``) apply
to the folder they sit in and below, the deepest one with a matching pattern deciding, as in git.
A skipped folder is not walked and counts once.

Links and special files (``ingest.follow_symlinks``): a file symlink in a folder is followed only when the policy
allows it (by default when its target, resolved, lies inside the folder given and would itself be taken); links to
folders are never walked; broken links, symlink loops, FIFOs, sockets, devices and unreadable files and folders are
skipped with their reason. Each file taken remembers the resolved folder it came from (:attr:`FileSelection.within`)
so the read can check again (:func:`ragstream.documents.file_access.open_document`).
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pathspec

from ragstream.config import IngestConfig
from ragstream.documents.file_access import inside
from ragstream.models import SkippedFile

NOT_A_DOCUMENT = "not_a_document"
EXCLUDED = "excluded"
IGNORED = "ignored"
HIDDEN = "hidden"
SYMLINK = "symlink"
"""A file symlink, while ``ingest.follow_symlinks`` is ``never``."""
SYMLINK_OUTSIDE_ROOT = "symlink_outside_root"
FOLDER_SYMLINK = "folder_symlink"
BROKEN_SYMLINK = "broken_symlink"
SYMLINK_LOOP = "symlink_loop"
SPECIAL_FILE = "special_file"
"""A FIFO, socket or device: never opened (reading a FIFO would wait forever)."""
UNREADABLE = "unreadable"


@dataclass
class FileSelection:
    """The files an ingest takes and the entries it skipped (with their reason)."""

    files: list[Path] = field(default_factory=list)
    skipped: list[SkippedFile] = field(default_factory=list)
    within: dict[Path, str] = field(default_factory=dict)
    """File taken from a folder -> that folder, resolved (a file named on its own has no entry)."""


@dataclass(frozen=True)
class _IgnoreFile:
    """The compiled patterns of one ignore file and the folder they are relative to."""

    base: Path
    spec: pathspec.GitIgnoreSpec


class FileSelector:
    """Walks paths under one :class:`IngestConfig`."""

    def __init__(self, config: IngestConfig) -> None:
        self._config = config
        self._include = _case_insensitive_spec(config.include)
        self._exclude = _case_insensitive_spec(config.exclude)
        self._ignore_names = frozenset(config.ignore_files)

    def select(self, paths: Iterable[str | Path]) -> FileSelection:
        """Files to ingest from ``paths`` (files as given, folders walked) and what was skipped."""
        selection = FileSelection()
        for raw in paths:
            path = Path(raw)
            if path.is_dir():
                real_root = os.path.realpath(path)
                for entry, reason in self._walk(path, real_root, path, []):
                    if reason is None:
                        selection.files.append(entry)
                        selection.within[entry] = real_root
                    else:
                        selection.skipped.append(SkippedFile(source=str(entry), reason=reason))
            else:
                selection.files.append(path)
        return selection

    def skip_reason(self, root: Path, path: Path) -> str | None:
        """Why a walk of the folder ``root`` would not take the file ``path`` inside it (None: it would), looking
        only at the folders between them, not at the rest of the tree. ``path`` equal to ``root`` (a file named
        on its own) is always taken."""
        if path == root:
            return None
        real_root = os.path.realpath(root)
        folder, ignores = root, self._ignore_files_in(root)
        for part in path.relative_to(root).parts[:-1]:
            folder = folder / part
            reason = self._skip_reason(root, folder, True, ignores)
            if reason is None and folder.is_symlink():
                reason = FOLDER_SYMLINK
            if reason is not None:
                return reason
            ignores = [*ignores, *self._ignore_files_in(folder)]
        if path.name in self._ignore_names:
            return IGNORED
        return self._skip_reason(root, path, False, ignores) or self._file_reason(real_root, path)

    def _walk(self, root: Path, real_root: str, folder: Path,
              ignores: list[_IgnoreFile]) -> Iterator[tuple[Path, str | None]]:
        ignores = [*ignores, *self._ignore_files_in(folder)]
        try:
            entries = sorted(os.scandir(folder), key=lambda entry: entry.name)
        except PermissionError:
            yield folder, UNREADABLE
            return
        except OSError:
            return
        for entry in entries:
            path = Path(entry.path)
            is_dir = entry.is_dir(follow_symlinks=False)
            link_to_folder = entry.is_symlink() and _is_folder(path)
            if entry.name in self._ignore_names and not is_dir:
                continue
            reason = self._skip_reason(root, path, is_dir or link_to_folder, ignores)
            if reason is not None:
                yield path, reason
            elif is_dir:
                yield from self._walk(root, real_root, path, ignores)
            else:
                yield path, self._file_reason(real_root, path)

    def _file_reason(self, real_root: str, path: Path) -> str | None:
        """Why the entry ``path`` of a folder (resolved: ``real_root``) is not read as a file, by what it is:
        a link the policy does not follow, a broken link or a loop, a link to a folder, a special file, a file
        that cannot be read (None: a regular file to read, or gone meanwhile, which the read reports)."""
        try:
            status = os.lstat(path)
        except FileNotFoundError:
            return None
        except OSError:  # a folder that may be listed but not entered
            return UNREADABLE
        if stat.S_ISLNK(status.st_mode):
            try:
                status = os.stat(path)
            except OSError as error:
                return _stat_reason(error)
            if stat.S_ISDIR(status.st_mode):
                return FOLDER_SYMLINK
            reason = self._link_reason(real_root, path)
            if reason is not None:
                return reason
        if not stat.S_ISREG(status.st_mode):
            return None if stat.S_ISDIR(status.st_mode) else SPECIAL_FILE
        return None if os.access(path, os.R_OK) else UNREADABLE

    def _link_reason(self, real_root: str, path: Path) -> str | None:
        """Whether ``ingest.follow_symlinks`` lets the file link ``path`` be followed: with ``inside_root``, its
        target must lie inside the folder and be a file the walk would take itself."""
        policy = self._config.follow_symlinks
        if policy == "always":
            return None
        if policy == "never":
            return SYMLINK
        target = os.path.realpath(path)
        if not inside(target, real_root):
            return SYMLINK_OUTSIDE_ROOT
        return self.skip_reason(Path(real_root), Path(target))

    def _skip_reason(self, root: Path, path: Path, is_dir: bool, ignores: list[_IgnoreFile]) -> str | None:
        if self._config.skip_hidden and path.name.startswith("."):
            return HIDDEN
        suffix = "/" if is_dir else ""
        relative = path.relative_to(root).as_posix() + suffix
        if self._exclude.match_file(relative.lower()):
            return EXCLUDED
        if _ignored(path, suffix, ignores):
            return IGNORED
        if not is_dir and not self._include.match_file(relative.lower()):
            return NOT_A_DOCUMENT
        return None

    def _ignore_files_in(self, folder: Path) -> list[_IgnoreFile]:
        found = []
        for name in self._config.ignore_files:
            candidate = folder / name
            try:
                if not candidate.is_file():
                    continue
                lines = candidate.read_text(encoding="utf-8", errors="replace").splitlines()
            except OSError:
                continue
            found.append(_IgnoreFile(base=folder, spec=pathspec.GitIgnoreSpec.from_lines(lines)))
        return found


def select_files(paths: Iterable[str | Path], config: IngestConfig) -> FileSelection:
    """Files to ingest from ``paths`` under ``config`` (see the module docstring)."""
    return FileSelector(config).select(paths)


def _ignored(path: Path, suffix: str, ignores: list[_IgnoreFile]) -> bool:
    """True when the deepest ignore file with a matching pattern ignores ``path``."""
    for ignore in reversed(ignores):
        result = ignore.spec.check_file(path.relative_to(ignore.base).as_posix() + suffix)
        if result.include is not None:
            return bool(result.include)
    return False


def _is_folder(path: Path) -> bool:
    """Whether ``path`` leads to a folder (False for a broken link or a loop)."""
    try:
        return stat.S_ISDIR(os.stat(path).st_mode)
    except OSError:
        return False


def _stat_reason(error: OSError) -> str:
    """The skip reason of a link whose target cannot be looked at."""
    if error.errno == errno.ELOOP:
        return SYMLINK_LOOP
    if isinstance(error, FileNotFoundError | NotADirectoryError):
        return BROKEN_SYMLINK
    return UNREADABLE


def _case_insensitive_spec(patterns: Iterable[str]) -> pathspec.GitIgnoreSpec:
    return pathspec.GitIgnoreSpec.from_lines(pattern.lower() for pattern in patterns)
