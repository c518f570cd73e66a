"""The PostgreSQL catalog's generations and write intents; each intent names the writer that made it, so
recovery in one process never replays another live process's write in flight."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import psycopg

from ragstream.store.catalog_base import GENERATION_COUNTER
from ragstream.store.postgres.catalog.connection import BUMP, PostgresRole, one

# This writer's intents and those of writers that are gone: their advisory lock (held by a live
# catalog for its whole life) is free.
_ORPHANED = """
SELECT intent_id, document_id, new_generation, old_generation FROM write_intents w
WHERE owner IS NULL OR owner = %s OR NOT EXISTS (
    SELECT 1 FROM pg_locks l WHERE l.locktype = 'advisory' AND l.granted AND l.objsubid = 1
    AND ((l.classid::bigint << 32) | l.objid::bigint) = w.owner)
ORDER BY intent_id
"""


class PostgresVersions(PostgresRole):
    """The :class:`~ragstream.store.catalog_base.Versions` in PostgreSQL."""

    def begin_versions(self, documents: Sequence[tuple[str, int | None]]) -> tuple[list[int], list[int]]:
        """New, never reused generations for (document_id, old_generation) pairs and their write intents."""
        count = len(documents)
        owner = self._connection.owner
        with self._db.write() as conn:
            last = one(conn, BUMP, (GENERATION_COUNTER, count))
            generations = list(range(last - count + 1, last + 1))
            intents = [_add_intent(conn, owner, document_id, generation, old)
                       for (document_id, old), generation in zip(documents, generations, strict=True)]
        return generations, intents

    def add_intents(self, intents: Sequence[tuple[str, int | None, int | None]]) -> list[int]:
        """Record (document_id, new_generation, old_generation) intents; their ids."""
        with self._db.write() as conn:
            return [_add_intent(conn, self._connection.owner, *intent) for intent in intents]

    def clear_intents(self, intent_ids: Sequence[int]) -> None:
        """Forget intents once the vector store matches the catalog."""
        with self._db.write() as conn:
            conn.execute("DELETE FROM write_intents WHERE intent_id = ANY(%s)", (list(intent_ids),))

    def intents(self) -> list[tuple[int, str, int | None, int | None]]:
        """Unfinished intents of this catalog and of writers no longer running (what recovery may
        replay); never those of another live process, whose write may be in flight."""
        with self._db.read() as conn:
            rows = conn.execute(_ORPHANED, (self._connection.owner,)).fetchall()
        return [(int(a), str(b), c, d) for a, b, c, d in rows]

    def raise_generation(self, at_least: int) -> None:
        """Move the generation counter up to ``at_least`` (never down)."""
        with self._db.write() as conn:
            conn.execute("INSERT INTO counters(name, value) VALUES (%s, %s) "
                         "ON CONFLICT (name) DO UPDATE SET value = GREATEST(counters.value, EXCLUDED.value)",
                         (GENERATION_COUNTER, at_least))


def _add_intent(conn: psycopg.Connection[Any], owner: int, document_id: str, new: int | None, old: int | None) -> int:
    return one(conn, "INSERT INTO write_intents(document_id, new_generation, old_generation, owner) "
               "VALUES (%s, %s, %s, %s) RETURNING intent_id", (document_id, new, old, owner))
