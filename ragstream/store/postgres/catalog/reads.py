"""The PostgreSQL catalog's read consistency: snapshots in one REPEATABLE READ transaction, so every process
derives the same one from committed state, and reader leases other processes' deletions wait for."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from ragstream.store.base import Snapshot
from ragstream.store.catalog_base import COMMIT_SEQUENCE, GENERATION_COUNTER
from ragstream.store.postgres.catalog.connection import CLOCK, PostgresRole, one

_UNCOMMITTED = """
SELECT g FROM (SELECT new_generation AS g FROM write_intents UNION SELECT old_generation FROM write_intents) AS named
WHERE g IS NOT NULL AND NOT EXISTS (SELECT 1 FROM documents WHERE documents.generation = g)
"""


class PostgresReads(PostgresRole):
    """The :class:`~ragstream.store.catalog_base.ReadConsistency` of a catalog several processes share."""

    @contextmanager
    def read_transaction(self) -> Iterator[None]:
        """One REPEATABLE READ transaction every catalog read of this thread inside it shares (nests)."""
        with self._db.read():
            yield

    def snapshot(self) -> Snapshot:
        """The committed state readers filter by (commit sequence, last generation, uncommitted ones)."""
        with self._db.read() as conn:
            counters = dict(conn.execute("SELECT name, value FROM counters WHERE name = ANY(%s)",
                                         ([COMMIT_SEQUENCE, GENERATION_COUNTER],)).fetchall())
            uncommitted = frozenset(int(row[0]) for row in conn.execute(_UNCOMMITTED))
        return Snapshot(sequence=int(counters.get(COMMIT_SEQUENCE, 0)),
                        max_generation=int(counters.get(GENERATION_COUNTER, 0)), uncommitted=uncommitted)

    def open_reader(self) -> int | None:
        """Every process deletes replaced versions only once no registered reader may read them (a reader of
        another process included); the row is unlogged: a crash loses it, with the readers it protected."""
        with self._db.write() as conn:
            return one(conn, "INSERT INTO reader_leases (sequence, expires_at) VALUES (COALESCE((SELECT value FROM "
                       f"counters WHERE name = %s), 0), {CLOCK} + %s) RETURNING reader_id",
                       (COMMIT_SEQUENCE, self._connection.reader_lease_seconds))

    def close_reader(self, reader_id: int) -> None:
        """The reader ``reader_id`` is done."""
        with self._db.write() as conn:
            conn.execute("DELETE FROM reader_leases WHERE reader_id = %s", (reader_id,))

    def oldest_reader(self) -> float:
        """The oldest commit sequence a live reader of any process may read; infinity when none is."""
        with self._db.write() as conn:
            conn.execute(f"DELETE FROM reader_leases WHERE expires_at < {CLOCK}")  # readers that died or ran over
            row = conn.execute("SELECT MIN(sequence) FROM reader_leases").fetchone()
        return float("inf") if row is None or row[0] is None else float(row[0])
