"""Reader snapshots of the committed catalog, and the deletion of old versions they may still read.

A reader takes one :class:`~ragstream.store.base.Snapshot` at the start of its request and does
every read of that request through it. Deleting a replaced (or deleted) version's points waits
until no snapshot taken before the switch is still open, in this process or (on a catalog other
processes share: postgres) in any process, as each reader registers in the catalog first, so a multi-part read
(a document and its chunks, the searches of one answer) never loses half of what it started
reading. Until then the version's write intent stays open: newer snapshots exclude it, and a crash
leaves it to recovery. docs/consistency.md tells the whole protocol.
"""

from __future__ import annotations

import itertools
import logging
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TypeVar

from ragstream.store.base import Snapshot, VectorStore
from ragstream.store.catalog_base import ReadConsistency, Versions

T = TypeVar("T")
logger = logging.getLogger("ragstream.store")


@dataclass(frozen=True)
class Retired:
    """One write intent to finish once no older snapshot is open: delete ``generation`` (if any)
    of ``document_id``, then clear the intent."""

    document_id: str
    generation: int | None
    intent_id: int


@dataclass(frozen=True)
class _Pending:
    sequence: int
    retired: Retired


class Snapshots:
    """The open snapshots of this process and the deletions waiting for them."""

    def __init__(self, reads: ReadConsistency, versions: Versions, store: VectorStore) -> None:
        self._reads = reads
        self._versions = versions
        self._store = store
        self._lock = threading.Lock()
        self._ids = itertools.count()
        self._open: dict[int, int | None] = {}  # snapshot id -> its commit sequence (None while being read)
        self._pending: list[_Pending] = []

    @contextmanager
    def open(self) -> Iterator[Snapshot]:
        """A snapshot of the committed state, held open (its versions kept) until the block ends."""
        with self.open_with(lambda: None) as (snapshot, _):
            yield snapshot

    @contextmanager
    def open_with(self, read: Callable[[], T]) -> Iterator[tuple[Snapshot, T]]:
        """A snapshot and ``read()`` (catalog reads) from the same catalog read transaction."""
        token = next(self._ids)
        with self._lock:
            self._open[token] = None  # registered before reading: no deletion can slip in between
        reader: int | None = None
        try:
            reader = self._reads.open_reader()  # the same, for other processes (on a shared catalog)
            with self._reads.read_transaction():
                snapshot = self._reads.snapshot()
                value = read()
            with self._lock:
                self._open[token] = snapshot.sequence
            yield snapshot, value
        finally:
            with self._lock:
                del self._open[token]
                due = self._has_due()
            if reader is not None:
                self._close_quietly(reader)
            if due:
                self._collect_quietly()

    def retire(self, sequence: int, retired: Sequence[Retired]) -> None:
        """Finish ``retired`` intents of the switch with commit ``sequence``: now when no older
        snapshot is open (errors propagate), else when the last of them closes."""
        with self._lock:
            self._pending.extend(_Pending(sequence, item) for item in retired)
        self.collect()

    def collect(self) -> int:
        """Delete the versions no open snapshot can read any more; returns how many intents finished."""
        with self._lock:
            if not self._has_due():
                return 0
        shared = self._reads.oldest_reader()  # readers of every process, this one's included
        with self._lock:
            horizon = min(self._horizon(), shared)
            due = [item for item in self._pending if item.sequence <= horizon]
            self._pending = [item for item in self._pending if item.sequence > horizon]
        if not due:
            return 0
        try:
            for item in due:
                if item.retired.generation is not None:
                    self._store.delete_generation(item.retired.document_id, item.retired.generation)
            if any(item.retired.generation is not None for item in due):
                self._store.flush()
            self._versions.clear_intents([item.retired.intent_id for item in due])
        except BaseException:
            with self._lock:
                self._pending = due + self._pending
            raise
        return len(due)

    def waiting(self) -> int:
        """Intents whose deletion waits for older snapshots to close."""
        with self._lock:
            return len(self._pending)

    def open_count(self) -> int:
        """Snapshots open in this process."""
        with self._lock:
            return len(self._open)

    def _horizon(self) -> float:
        """The oldest commit sequence an open snapshot may read (infinite when none is open)."""
        sequences = [-1 if sequence is None else sequence for sequence in self._open.values()]
        return min(sequences, default=float("inf"))

    def _has_due(self) -> bool:
        horizon = self._horizon()
        return any(item.sequence <= horizon for item in self._pending)

    def _close_quietly(self, reader: int) -> None:
        """Unregister a reader; a failure leaves its registration to expire (``store.reader_lease_seconds``)."""
        try:
            self._reads.close_reader(reader)
        except Exception as error:
            logger.warning("could not unregister a reader (it expires on its own): %s", error)

    def _collect_quietly(self) -> None:
        """Collect on a reader's way out; a failure leaves the work for the next collect or recovery."""
        try:
            self.collect()
        except Exception as error:
            logger.warning("deleting replaced document versions failed (retried later): %s", error)
