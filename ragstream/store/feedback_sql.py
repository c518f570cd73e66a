"""The SQL of the catalog's feedback role, shared by the SQLite and the PostgreSQL backends (``?`` marks a
parameter; the PostgreSQL role writes it as ``%s``)."""

from __future__ import annotations

from typing import Any

from ragstream.store.catalog_base import FeedbackDay, RatedQuestion

TABLE = """
CREATE TABLE IF NOT EXISTS answer_feedback (
    message_id TEXT PRIMARY KEY,
    owner TEXT NOT NULL,
    question TEXT NOT NULL,
    answered_at TEXT NOT NULL,
    rating TEXT,
    comment TEXT,
    rated_at TEXT,
    citation_opens INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX IF NOT EXISTS answer_feedback_by_time ON answer_feedback(answered_at);
"""
"""One row per answer given: its asker (``owner``), question, time, rating and citation opens."""

RECORD = ("INSERT INTO answer_feedback (message_id, owner, question, answered_at) VALUES (?, ?, ?, ?) "
          "ON CONFLICT (message_id) DO NOTHING")
RATE = "UPDATE answer_feedback SET rating = ?, comment = ?, rated_at = ? WHERE message_id = ? AND owner = ?"
OPEN = "UPDATE answer_feedback SET citation_opens = citation_opens + 1 WHERE message_id = ? AND owner = ?"
_HELPFUL = "SUM(CASE WHEN rating = 'helpful' THEN 1 ELSE 0 END)"
_NOT_HELPFUL = "SUM(CASE WHEN rating = 'not_helpful' THEN 1 ELSE 0 END)"
DAYS = (f"SELECT substr(answered_at, 1, 10) AS day, COUNT(*), COUNT(rating), {_HELPFUL}, {_NOT_HELPFUL}, "
        "SUM(CASE WHEN citation_opens > 0 THEN 1 ELSE 0 END), SUM(citation_opens) FROM answer_feedback "
        "WHERE answered_at >= ? GROUP BY substr(answered_at, 1, 10) ORDER BY day")
WORST = (f"SELECT question, COUNT(*), {_HELPFUL}, {_NOT_HELPFUL} FROM answer_feedback WHERE answered_at >= ? "
         f"GROUP BY question HAVING {_NOT_HELPFUL} > 0 ORDER BY {_NOT_HELPFUL} DESC, {_HELPFUL} ASC, question LIMIT ?")


def day(row: tuple[Any, ...]) -> FeedbackDay:
    """A :data:`DAYS` row (PostgreSQL sums are decimals)."""
    return FeedbackDay(str(row[0]), *(int(value or 0) for value in row[1:]))


def rated_question(row: tuple[Any, ...]) -> RatedQuestion:
    """A :data:`WORST` row."""
    return RatedQuestion(str(row[0]), *(int(value or 0) for value in row[1:]))
