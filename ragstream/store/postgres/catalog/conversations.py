"""The PostgreSQL catalog's conversation turns, kept per conversation and owner."""

from __future__ import annotations

from typing import Any

from ragstream.store.catalog_sql import NO_OWNER, turn
from ragstream.store.postgres.catalog.connection import PostgresRole


class PostgresConversations(PostgresRole):
    """The :class:`~ragstream.store.catalog_base.Conversations` in PostgreSQL."""

    def add_turn(self, conversation_id: str, message_id: str, user_text: str, assistant_text: str,
                 created_at: str, keep: int, *, incomplete: bool = False, owner: str | None = None) -> None:
        """Append a (user, assistant) turn pair to ``owner``'s conversation and keep only its last ``keep`` pairs."""
        key = (conversation_id, owner or NO_OWNER)
        with self._db.write() as conn:
            conn.execute(
                "INSERT INTO conversation_turns (message_id, conversation_id, owner, seq, user_text, assistant_text, "
                "created_at, incomplete) VALUES (%s, %s, %s, (SELECT COALESCE(MAX(seq), 0) + 1 FROM conversation_turns "
                "WHERE conversation_id = %s AND owner = %s), %s, %s, %s, %s)",
                (message_id, *key, *key, user_text, assistant_text, created_at, incomplete),
            )
            conn.execute(
                "DELETE FROM conversation_turns WHERE conversation_id = %s AND owner = %s AND seq NOT IN "
                "(SELECT seq FROM conversation_turns WHERE conversation_id = %s AND owner = %s ORDER BY seq DESC LIMIT %s)",
                (*key, *key, max(keep, 0)),
            )

    def recent_turns(self, conversation_id: str, limit: int, owner: str | None = None) -> list[tuple[str, str]]:
        """The last ``limit`` (user, assistant) pairs of ``owner``'s conversation, oldest first."""
        with self._db.read() as conn:
            rows = conn.execute("SELECT user_text, assistant_text FROM conversation_turns WHERE conversation_id = %s "
                                "AND owner = %s ORDER BY seq DESC LIMIT %s",
                                (conversation_id, owner or NO_OWNER, max(limit, 0))).fetchall()
        return [(user, assistant) for user, assistant in reversed(rows)]

    def conversation_turns(self, conversation_id: str, owner: str | None = None) -> list[dict[str, Any]]:
        """Every kept turn of ``owner``'s conversation, oldest first, with its message id and completeness."""
        with self._db.read() as conn:
            rows = conn.execute("SELECT message_id, user_text, assistant_text, created_at, incomplete FROM conversation_turns "
                                "WHERE conversation_id = %s AND owner = %s ORDER BY seq",
                                (conversation_id, owner or NO_OWNER)).fetchall()
        return [turn(row) for row in rows]
