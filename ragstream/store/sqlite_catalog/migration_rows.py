"""The SQLite catalog's rows in key order for ``ragstream migrate``, and turns stored back exactly."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ragstream.store.catalog_base import TurnRow
from ragstream.store.sqlite_catalog.connection import SqliteRole


class SqliteMigrationRows(SqliteRole):
    """The :class:`~ragstream.store.catalog_base.MigrationRows` in SQLite."""

    def embedding_rows(self, after: tuple[str, str] | None, limit: int) -> list[tuple[str, str, np.ndarray]]:
        """Up to ``limit`` embedding-cache entries (model_id, content_hash, vector) in key order, after ``after``."""
        model_id, content_hash = after or ("", "")
        with self._connection.lock:
            rows = self._connection.db.execute(
                "SELECT model_id, content_hash, vector FROM embeddings WHERE (model_id, content_hash) > (?, ?) "
                "ORDER BY model_id, content_hash LIMIT ?", (model_id, content_hash, limit)).fetchall()
        return [(row[0], row[1], np.frombuffer(row[2], dtype=np.float32)) for row in rows]

    def turn_rows(self, after: str | None, limit: int) -> list[TurnRow]:
        """Up to ``limit`` stored conversation turns in message-id order, after the message id ``after``."""
        with self._connection.lock:
            rows = self._connection.db.execute(
                "SELECT conversation_id, seq, message_id, user_text, assistant_text, created_at, incomplete, owner "
                "FROM conversation_turns WHERE message_id > ? ORDER BY message_id LIMIT ?",
                (after or "", limit)).fetchall()
        return [TurnRow(row[0], row[1], row[2], row[3], row[4], row[5], bool(row[6]), row[7]) for row in rows]

    def import_turns(self, rows: Sequence[TurnRow]) -> None:
        """Store conversation turns exactly as given (position and ids kept; an existing message is replaced)."""
        with self._connection.transaction() as db:
            db.executemany(
                "INSERT OR REPLACE INTO conversation_turns (conversation_id, seq, message_id, user_text, assistant_text, "
                "created_at, incomplete, owner) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                [(*row[:6], int(row.incomplete), row.owner) for row in rows])
