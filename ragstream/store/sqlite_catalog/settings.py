"""The SQLite catalog's integer settings (rows of the ``counters`` table)."""

from __future__ import annotations

from ragstream.store.sqlite_catalog.connection import SqliteRole


class SqliteSettings(SqliteRole):
    """The :class:`~ragstream.store.catalog_base.Settings` in SQLite."""

    def setting(self, name: str) -> int | None:
        """A stored integer setting (e.g. the vector size the store was created with)."""
        with self._connection.lock:
            row = self._connection.db.execute("SELECT value FROM counters WHERE name = ?", (name,)).fetchone()
        return int(row[0]) if row else None

    def set_setting(self, name: str, value: int) -> None:
        """Store an integer setting."""
        with self._connection.transaction() as db:
            db.execute("INSERT OR REPLACE INTO counters(name, value) VALUES (?, ?)", (name, value))
