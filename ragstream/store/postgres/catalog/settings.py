"""The PostgreSQL catalog's integer settings (rows of the ``counters`` table)."""

from __future__ import annotations

from ragstream.store.postgres.catalog.connection import PostgresRole


class PostgresSettings(PostgresRole):
    """The :class:`~ragstream.store.catalog_base.Settings` in PostgreSQL."""

    def setting(self, name: str) -> int | None:
        """A stored integer setting (e.g. the vector size the store was created with)."""
        with self._db.read() as conn:
            row = conn.execute("SELECT value FROM counters WHERE name = %s", (name,)).fetchone()
        return int(row[0]) if row else None

    def set_setting(self, name: str, value: int) -> None:
        """Store an integer setting."""
        with self._db.write() as conn:
            conn.execute("INSERT INTO counters(name, value) VALUES (%s, %s) "
                         "ON CONFLICT (name) DO UPDATE SET value = EXCLUDED.value", (name, value))
