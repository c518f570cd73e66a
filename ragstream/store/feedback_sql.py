"""The SQL of the catalog's feedback role, shared by the SQLite and the PostgreSQL backends (``?`` marks a
parameter; the PostgreSQL role writes it as ``%s``)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple

from ragstream.store.catalog_feedback import CollectionFeedback, FeedbackDay, FeedbackRow, RatedQuestion

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
CREATE TABLE IF NOT EXISTS answer_feedback_collections (
    message_id TEXT NOT NULL,
    collection_id TEXT NOT NULL,
    PRIMARY KEY (message_id, collection_id)
);
"""
"""One row per answer given: its asker (``owner``), question, time, rating and citation opens; and one row
per collection an answer drew on (the collections its cited documents belonged to when it was given, so a
document moved later leaves the answer's collections as they were)."""

RECORD = ("INSERT INTO answer_feedback (message_id, owner, question, answered_at) VALUES (?, ?, ?, ?) "
          "ON CONFLICT (message_id) DO NOTHING")
RECORD_COLLECTION = ("INSERT INTO answer_feedback_collections (message_id, collection_id) VALUES (?, ?) "
                     "ON CONFLICT (message_id, collection_id) DO NOTHING")
RATE = "UPDATE answer_feedback SET rating = ?, comment = ?, rated_at = ? WHERE message_id = ? AND owner = ?"
"""A rating replaces the answer's rating and comment in place: one per answer, however often it is rated."""

UNNAMED_CITATION = 0
"""The citation an open names when it names none (a client from before opens named their citation)."""
OPENS_TABLE = ("CREATE TABLE IF NOT EXISTS answer_citation_opens (message_id TEXT NOT NULL, citation INTEGER NOT NULL, "
               "PRIMARY KEY (message_id, citation))")
"""The citations of each answer its asker opened, each once (the asker is the answer's: one open per user, answer
and citation); ``answer_feedback.citation_opens`` counts them."""
OPENS_MIGRATION = (OPENS_TABLE,
                   f"INSERT INTO answer_citation_opens (message_id, citation) SELECT message_id, {UNNAMED_CITATION} "
                   "FROM answer_feedback WHERE citation_opens > 0 ON CONFLICT (message_id, citation) DO NOTHING",
                   "UPDATE answer_feedback SET citation_opens = 1 WHERE citation_opens > 1")
"""Run once, in one transaction, where :data:`OPENS_TABLE` is missing (catalogs before it counted every open, none
naming its citation): each answer's opens become one open of an unnamed citation."""
ASKED = "SELECT 1 FROM answer_feedback WHERE message_id = ? AND owner = ?"
OPEN = ("INSERT INTO answer_citation_opens (message_id, citation) VALUES (?, ?) "
        "ON CONFLICT (message_id, citation) DO NOTHING")
COUNT_OPEN = "UPDATE answer_feedback SET citation_opens = citation_opens + 1 WHERE message_id = ?"
_HELPFUL = "SUM(CASE WHEN rating = 'helpful' THEN 1 ELSE 0 END)"
_NOT_HELPFUL = "SUM(CASE WHEN rating = 'not_helpful' THEN 1 ELSE 0 END)"
DAYS = (f"SELECT substr(answered_at, 1, 10) AS day, COUNT(*), COUNT(rating), {_HELPFUL}, {_NOT_HELPFUL}, "
        "SUM(CASE WHEN citation_opens > 0 THEN 1 ELSE 0 END), SUM(citation_opens) FROM answer_feedback "
        "WHERE answered_at >= ? GROUP BY substr(answered_at, 1, 10) ORDER BY day")
BY_COLLECTION = (f"SELECT c.collection_id, COUNT(*), COUNT(f.rating), {_HELPFUL}, {_NOT_HELPFUL}, "
                 "SUM(CASE WHEN f.citation_opens > 0 THEN 1 ELSE 0 END), SUM(f.citation_opens) "
                 "FROM answer_feedback_collections c JOIN answer_feedback f ON f.message_id = c.message_id "
                 "WHERE f.answered_at >= ? GROUP BY c.collection_id ORDER BY c.collection_id")
WORST = (f"SELECT question, COUNT(*), {_HELPFUL}, {_NOT_HELPFUL} FROM answer_feedback WHERE answered_at >= ? "
         f"GROUP BY question HAVING {_NOT_HELPFUL} > 0 ORDER BY {_NOT_HELPFUL} DESC, {_HELPFUL} ASC, question LIMIT ?")


def day(row: tuple[Any, ...]) -> FeedbackDay:
    """A :data:`DAYS` row (PostgreSQL sums are decimals)."""
    return FeedbackDay(str(row[0]), *(int(value or 0) for value in row[1:]))


def rated_question(row: tuple[Any, ...]) -> RatedQuestion:
    """A :data:`WORST` row."""
    return RatedQuestion(str(row[0]), *(int(value or 0) for value in row[1:]))


def by_collection(row: tuple[Any, ...]) -> CollectionFeedback:
    """A :data:`BY_COLLECTION` row."""
    return CollectionFeedback(str(row[0]), *(int(value or 0) for value in row[1:]))


ROWS = ("SELECT message_id, owner, question, answered_at, rating, comment, rated_at "
        "FROM answer_feedback WHERE message_id {collate} > ? ORDER BY message_id {collate} LIMIT ?")
"""An answer's rows after a message id in byte order (``{collate}``: PostgreSQL's ``COLLATE "C"``, SQLite's nothing)."""
ROW_COLLECTIONS = ("SELECT message_id, collection_id FROM answer_feedback_collections WHERE message_id IN ({marks}) "
                   "ORDER BY message_id, collection_id")
ROW_OPENS = ("SELECT message_id, citation FROM answer_citation_opens WHERE message_id IN ({marks}) "
             "ORDER BY message_id, citation")
IMPORT = ("INSERT INTO answer_feedback (message_id, owner, question, answered_at, rating, comment, rated_at, "
          "citation_opens) VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (message_id) DO UPDATE SET "
          "owner = excluded.owner, question = excluded.question, answered_at = excluded.answered_at, "
          "rating = excluded.rating, comment = excluded.comment, rated_at = excluded.rated_at, "
          "citation_opens = excluded.citation_opens")
FORGET_COLLECTIONS = "DELETE FROM answer_feedback_collections WHERE message_id = ?"
FORGET_OPENS = "DELETE FROM answer_citation_opens WHERE message_id = ?"


def feedback_rows(rows: list[tuple[Any, ...]], memberships: list[tuple[Any, ...]],
                  opens: list[tuple[Any, ...]]) -> list[FeedbackRow]:
    """:data:`ROWS` rows with their :data:`ROW_COLLECTIONS` and :data:`ROW_OPENS`."""
    collections: dict[str, list[str]] = {}
    for message_id, collection_id in memberships:
        collections.setdefault(str(message_id), []).append(str(collection_id))
    opened: dict[str, list[int]] = {}
    for message_id, citation in opens:
        opened.setdefault(str(message_id), []).append(int(citation))
    return [FeedbackRow(str(row[0]), str(row[1]), str(row[2]), str(row[3]), row[4], row[5], row[6],
                        tuple(sorted(opened.get(str(row[0]), []))), tuple(sorted(collections.get(str(row[0]), []))))
            for row in rows]


class ImportParams(NamedTuple):
    """The parameters of the statements :meth:`~ragstream.store.catalog_feedback.Feedback.import_feedback` runs."""

    answers: list[tuple[Any, ...]]
    """:data:`IMPORT`'s."""
    forget: list[tuple[str]]
    """:data:`FORGET_COLLECTIONS`' and :data:`FORGET_OPENS`'."""
    collections: list[tuple[str, str]]
    """:data:`RECORD_COLLECTION`'s."""
    opens: list[tuple[str, int]]
    """:data:`OPEN`'s."""


def import_params(rows: Sequence[FeedbackRow]) -> ImportParams:
    """The parameters of the statements that store ``rows`` exactly as given."""
    return ImportParams([(*row[:7], len(row.opened_citations)) for row in rows], [(row.message_id,) for row in rows],
                        [(row.message_id, collection_id) for row in rows for collection_id in row.collections],
                        [(row.message_id, citation) for row in rows for citation in row.opened_citations])
