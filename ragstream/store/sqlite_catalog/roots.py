"""The SQLite catalog's registry of synced roots."""

from __future__ import annotations

from collections.abc import Sequence

from ragstream.store.catalog_base import RootRecord
from ragstream.store.catalog_sql import ROOT_COLUMNS
from ragstream.store.sqlite_catalog.connection import SqliteRole


class SqliteRoots(SqliteRole):
    """The :class:`~ragstream.store.catalog_base.SyncRoots` in SQLite."""

    def roots(self) -> list[RootRecord]:
        """Every registered root with its document count, last sync and watcher lease, by root."""
        with self._connection.lock:
            rows = self._connection.db.execute(f"SELECT {ROOT_COLUMNS} FROM sync_roots ORDER BY root").fetchall()
        return [RootRecord(*row) for row in rows]

    def record_sync(self, root: str, synced_at: str, summary: str) -> None:
        """Register ``root`` (if new) and remember its last sync."""
        with self._connection.transaction() as db:
            db.execute("INSERT INTO sync_roots (root, last_sync_at, last_summary) VALUES (?, ?, ?) ON CONFLICT(root) "
                       "DO UPDATE SET last_sync_at = excluded.last_sync_at, last_summary = excluded.last_summary",
                       (root, synced_at, summary))

    def watch_roots(self, roots: Sequence[str], until: float | None) -> None:
        """Set (or drop, with None) a watcher's lease on registered ``roots``."""
        with self._connection.transaction() as db:
            db.executemany("UPDATE sync_roots SET watched_until = ? WHERE root = ?", [(until, root) for root in roots])

    def forget_root(self, root: str) -> None:
        """Unregister ``root``."""
        with self._connection.transaction() as db:
            db.execute("DELETE FROM sync_roots WHERE root = ?", (root,))
