"""A file's sha256, read once per file version (path, size, mtime) in this process."""

from __future__ import annotations

import hashlib
import threading
from pathlib import Path

HASH_BLOCK_BYTES = 1 << 20
"""Bytes read at a time while hashing."""

_digests: dict[tuple[str, int, int], str] = {}
_lock = threading.Lock()


def file_sha256(path: Path) -> str:
    """``path``'s sha256 (hex); a file already hashed in this process (same size and mtime) is not read again."""
    stat = path.stat()
    key = (str(path), stat.st_size, stat.st_mtime_ns)
    with _lock:
        digest = _digests.get(key)
    if digest is None:
        hasher = hashlib.sha256()
        with path.open("rb") as handle:
            while block := handle.read(HASH_BLOCK_BYTES):
                hasher.update(block)
        digest = hasher.hexdigest()
        with _lock:
            _digests[key] = digest
    return digest
