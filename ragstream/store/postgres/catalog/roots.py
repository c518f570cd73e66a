"""The PostgreSQL catalog's registry of synced roots."""

from __future__ import annotations

from collections.abc import Sequence

from ragstream.store.catalog_base import RootRecord
from ragstream.store.catalog_sql import ROOT_COLUMNS
from ragstream.store.postgres.catalog.connection import PostgresRole


class PostgresRoots(PostgresRole):
    """The :class:`~ragstream.store.catalog_base.SyncRoots` in PostgreSQL."""

    def roots(self) -> list[RootRecord]:
        """Every registered root with its document count, last sync and watcher lease, by root."""
        with self._db.read() as conn:
            rows = conn.execute(f"SELECT {ROOT_COLUMNS} FROM sync_roots ORDER BY root").fetchall()
        return [RootRecord(str(r[0]), int(r[1]), r[2], str(r[3]), None if r[4] is None else float(r[4])) for r in rows]

    def record_sync(self, root: str, synced_at: str, summary: str) -> None:
        """Register ``root`` (if new) and remember its last sync."""
        with self._db.write() as conn:
            conn.execute("INSERT INTO sync_roots (root, last_sync_at, last_summary) VALUES (%s, %s, %s) ON CONFLICT (root) "
                         "DO UPDATE SET last_sync_at = EXCLUDED.last_sync_at, last_summary = EXCLUDED.last_summary",
                         (root, synced_at, summary))

    def watch_roots(self, roots: Sequence[str], until: float | None) -> None:
        """Set (or drop, with None) a watcher's lease on registered ``roots``."""
        with self._db.write() as conn:
            conn.execute("UPDATE sync_roots SET watched_until = %s WHERE root = ANY(%s)", (until, list(roots)))

    def forget_root(self, root: str) -> None:
        """Unregister ``root``."""
        with self._db.write() as conn:
            conn.execute("DELETE FROM sync_roots WHERE root = %s", (root,))
