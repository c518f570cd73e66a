"""The SQLite catalog's conversation turns, kept per conversation and owner."""

from __future__ import annotations

from typing import Any

from ragstream.store.catalog_sql import NO_OWNER, turn
from ragstream.store.sqlite_catalog.connection import SqliteRole


class SqliteConversations(SqliteRole):
    """The :class:`~ragstream.store.catalog_base.Conversations` in SQLite."""

    def add_turn(self, conversation_id: str, message_id: str, user_text: str, assistant_text: str,
                 created_at: str, keep: int, *, incomplete: bool = False, owner: str | None = None) -> None:
        """Append a (user, assistant) turn pair and keep only the conversation's last ``keep`` pairs.

        ``incomplete`` marks an answer cut short (the client left, or generation failed midway).
        Conversations are kept per ``owner``: the same id under two owners is two conversations.
        """
        key = (conversation_id, owner or NO_OWNER)
        with self._connection.transaction() as db:
            db.execute(
                "INSERT INTO conversation_turns (message_id, conversation_id, owner, seq, user_text, assistant_text, "
                "created_at, incomplete) VALUES (?, ?, ?, (SELECT COALESCE(MAX(seq), 0) + 1 FROM conversation_turns "
                "WHERE conversation_id = ? AND owner = ?), ?, ?, ?, ?)",
                (message_id, *key, *key, user_text, assistant_text, created_at, int(incomplete)),
            )
            db.execute(
                "DELETE FROM conversation_turns WHERE conversation_id = ? AND owner = ? AND seq NOT IN "
                "(SELECT seq FROM conversation_turns WHERE conversation_id = ? AND owner = ? ORDER BY seq DESC LIMIT ?)",
                (*key, *key, max(keep, 0)),
            )

    def recent_turns(self, conversation_id: str, limit: int, owner: str | None = None) -> list[tuple[str, str]]:
        """The last ``limit`` (user, assistant) pairs of ``owner``'s conversation, oldest first."""
        with self._connection.lock:
            rows = self._connection.db.execute(
                "SELECT user_text, assistant_text FROM conversation_turns WHERE conversation_id = ? AND owner = ? "
                "ORDER BY seq DESC LIMIT ?",
                (conversation_id, owner or NO_OWNER, max(limit, 0)),
            ).fetchall()
        return [(user, assistant) for user, assistant in reversed(rows)]

    def conversation_turns(self, conversation_id: str, owner: str | None = None) -> list[dict[str, Any]]:
        """Every kept turn of ``owner``'s conversation, oldest first, with its message id and completeness."""
        with self._connection.lock:
            rows = self._connection.db.execute(
                "SELECT message_id, user_text, assistant_text, created_at, incomplete FROM conversation_turns "
                "WHERE conversation_id = ? AND owner = ? ORDER BY seq",
                (conversation_id, owner or NO_OWNER),
            ).fetchall()
        return [turn(row) for row in rows]
