"""Whether an index takes writes: one opened on a full disk is read-only until the disk has room again.

Opened read-only (the catalog or the vector store found too little free space), searches and answers
work over the committed index while every write raises InsufficientStorageError, before any work such
as embedding. Once ``limits.min_free_disk_bytes`` are free again the next write reopens the store and
the catalog for writing (no restart), recovers what an interrupted write left, and then runs the
callbacks that waited for writes (docs/http-api.md, Limits and errors).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path

from ragstream.errors import InsufficientStorageError
from ragstream.store.base import VectorStore
from ragstream.store.catalog_base import CatalogConnection
from ragstream.store.disk import free_bytes


class WriteGate:
    """The read-only state of one index (its ``store`` and ``catalog`` under ``data_dir``) and its way back to writes.

    ``recover`` finishes what an interrupted write left; it runs once the index opens for writing.
    """

    def __init__(self, store: VectorStore, catalog: CatalogConnection, data_dir: Path, min_free_bytes: int,
                 recover: Callable[[], object]) -> None:
        self._store = store
        self._catalog = catalog
        self._data_dir = data_dir
        self._min_free_bytes = min_free_bytes
        self._recover = recover
        self.read_only = catalog.read_only or store.read_only
        self._lock = threading.Lock()
        self._on_writable: list[Callable[[], None]] = []

    def ensure_writable(self) -> None:
        """Return when the index takes writes, reopening it for writing when the disk has room again;
        InsufficientStorageError while it has not."""
        if not self.read_only:
            return
        with self._lock:
            if not self.read_only:
                return
            minimum = self._min_free_bytes
            free = free_bytes(self._data_dir)
            if free < minimum:
                raise InsufficientStorageError(
                    f"the index is read-only: it was opened on a full disk and {free} bytes are free, less than "
                    f"limits.min_free_disk_bytes ({minimum}); writes resume by themselves once there is room")
            self._store.reopen_writable(minimum)
            self._catalog.reopen_writable(minimum)
            self.read_only = False
            self._recover()
            callbacks = list(self._on_writable)
        for callback in callbacks:
            callback()

    def when_writable(self, callback: Callable[[], None]) -> None:
        """Run ``callback`` once the index takes writes: now, or when a read-only index opens for writing."""
        with self._lock:
            if self.read_only:
                self._on_writable.append(callback)
                return
        callback()
