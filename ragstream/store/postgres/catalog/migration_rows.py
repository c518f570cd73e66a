"""The PostgreSQL catalog's rows in key order for ``ragstream migrate`` (byte order, as SQLite sorts), and
turns stored back exactly."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ragstream.store.catalog_base import TurnRow
from ragstream.store.postgres.catalog.connection import PostgresRole


class PostgresMigrationRows(PostgresRole):
    """The :class:`~ragstream.store.catalog_base.MigrationRows` in PostgreSQL."""

    def embedding_rows(self, after: tuple[str, str] | None, limit: int) -> list[tuple[str, str, np.ndarray]]:
        """Up to ``limit`` embedding-cache entries (model_id, content_hash, vector) in key order, after ``after``."""
        model_id, content_hash = after or ("", "")
        with self._db.read() as conn:
            rows = conn.execute("SELECT model_id, content_hash, vector FROM embeddings WHERE (model_id, content_hash) > "
                                "(%s, %s) ORDER BY model_id, content_hash LIMIT %s",
                                (model_id, content_hash, limit)).fetchall()
        return [(str(row[0]), str(row[1]), np.frombuffer(row[2], dtype=np.float32)) for row in rows]

    def turn_rows(self, after: str | None, limit: int) -> list[TurnRow]:
        """Up to ``limit`` stored conversation turns in message-id order, after the message id ``after``."""
        with self._db.read() as conn:
            rows = conn.execute(
                "SELECT conversation_id, seq, message_id, user_text, assistant_text, created_at, incomplete, owner "
                "FROM conversation_turns WHERE message_id COLLATE \"C\" > %s ORDER BY message_id COLLATE \"C\" LIMIT %s",
                (after or "", limit)).fetchall()
        return [TurnRow(row[0], int(row[1]), row[2], row[3], row[4], row[5], bool(row[6]), row[7]) for row in rows]

    def import_turns(self, rows: Sequence[TurnRow]) -> None:
        """Store conversation turns exactly as given (an existing message id is replaced)."""
        if not rows:
            return
        with self._db.write() as conn, conn.cursor() as cursor:
            cursor.executemany(
                "INSERT INTO conversation_turns (conversation_id, seq, message_id, user_text, assistant_text, created_at, "
                "incomplete, owner) VALUES (%s, %s, %s, %s, %s, %s, %s, %s) ON CONFLICT (message_id) DO UPDATE SET "
                "conversation_id = EXCLUDED.conversation_id, seq = EXCLUDED.seq, user_text = EXCLUDED.user_text, "
                "assistant_text = EXCLUDED.assistant_text, created_at = EXCLUDED.created_at, "
                "incomplete = EXCLUDED.incomplete, owner = EXCLUDED.owner", [tuple(row) for row in rows])
