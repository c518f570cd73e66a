"""The SQLite catalog's read consistency: snapshots from one read transaction; readers are this process's."""

from __future__ import annotations

from contextlib import AbstractContextManager

from ragstream.store.base import Snapshot
from ragstream.store.catalog_base import COMMIT_SEQUENCE, GENERATION_COUNTER
from ragstream.store.sqlite_catalog.connection import SqliteRole

_UNCOMMITTED = """
SELECT g FROM (SELECT new_generation AS g FROM write_intents UNION SELECT old_generation FROM write_intents)
WHERE g IS NOT NULL AND NOT EXISTS (SELECT 1 FROM documents WHERE documents.generation = g)
"""


class SqliteReads(SqliteRole):
    """The :class:`~ragstream.store.catalog_base.ReadConsistency` of a catalog one process holds."""

    def read_transaction(self) -> AbstractContextManager[None]:
        """One read transaction: every catalog read inside it sees the same committed state (nests)."""
        return self._connection.read_transaction()

    def snapshot(self) -> Snapshot:
        """The committed state readers filter by (commit sequence, last generation, uncommitted ones)."""
        with self._connection.read_transaction():
            sequence = self._connection.counter(COMMIT_SEQUENCE)
            max_generation = self._connection.counter(GENERATION_COUNTER)
            uncommitted = frozenset(int(row[0]) for row in self._connection.db.execute(_UNCOMMITTED))
        return Snapshot(sequence=sequence, max_generation=max_generation, uncommitted=uncommitted)

    def open_reader(self) -> int | None:
        """None: one process holds a SQLite catalog, and :class:`~ragstream.store.snapshots.Snapshots` tracks its readers."""
        return None

    def close_reader(self, reader_id: int) -> None:
        """Nothing to do (no reader is registered here)."""

    def oldest_reader(self) -> float:
        """Infinity: no reader of another process."""
        return float("inf")
