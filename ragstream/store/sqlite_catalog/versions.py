"""The SQLite catalog's generations and write intents."""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence

from ragstream.store.catalog_base import GENERATION_COUNTER
from ragstream.store.sqlite_catalog.connection import SqliteRole


class SqliteVersions(SqliteRole):
    """The :class:`~ragstream.store.catalog_base.Versions` in SQLite."""

    def begin_versions(self, documents: Sequence[tuple[str, int | None]]) -> tuple[list[int], list[int]]:
        """New, never reused generations for (document_id, old_generation) pairs and their write
        intents, in one transaction: ``(generations, intent_ids)``.

        Allocating and recording together is what lets a snapshot exclude every generation being
        written: one allocated after it is above its ``max_generation``, one allocated before it is
        named by an intent it reads.
        """
        count = len(documents)
        with self._connection.transaction() as db:
            db.execute(
                "INSERT INTO counters(name, value) VALUES(?, ?) ON CONFLICT(name) DO UPDATE SET value = value + ?",
                (GENERATION_COUNTER, count, count),
            )
            last = self._connection.counter(GENERATION_COUNTER)
            generations = list(range(last - count + 1, last + 1))
            intents = [_add_intent(db, document_id, generation, old)
                       for (document_id, old), generation in zip(documents, generations, strict=True)]
        return generations, intents

    def add_intents(self, intents: Sequence[tuple[str, int | None, int | None]]) -> list[int]:
        """Record, before touching the vector store, which generations operations may leave behind.

        Each intent is (document_id, new_generation, old_generation).
        """
        with self._connection.transaction() as db:
            return [_add_intent(db, *intent) for intent in intents]

    def clear_intents(self, intent_ids: Sequence[int]) -> None:
        """Forget intents once the vector store matches the catalog."""
        with self._connection.transaction() as db:
            db.executemany("DELETE FROM write_intents WHERE intent_id = ?", [(i,) for i in intent_ids])

    def intents(self) -> list[tuple[int, str, int | None, int | None]]:
        """Unfinished intents: (intent_id, document_id, new_generation, old_generation)."""
        with self._connection.lock:
            return list(self._connection.db.execute(
                "SELECT intent_id, document_id, new_generation, old_generation FROM write_intents"))

    def raise_generation(self, at_least: int) -> None:
        """Move the generation counter up to ``at_least`` (never down), so generations copied from
        another index under their own numbers are never allocated here again."""
        with self._connection.transaction() as db:
            db.execute("INSERT INTO counters(name, value) VALUES(?, ?) "
                       "ON CONFLICT(name) DO UPDATE SET value = MAX(value, excluded.value)", (GENERATION_COUNTER, at_least))


def _add_intent(db: sqlite3.Connection, document_id: str, new: int | None, old: int | None) -> int:
    row = db.execute("INSERT INTO write_intents(document_id, new_generation, old_generation) VALUES (?, ?, ?)",
                     (document_id, new, old))
    return int(row.lastrowid or 0)
