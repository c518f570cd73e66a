"""The catalog's answer feedback (``Feedback``) on every catalog backend (the ``catalog`` fixture: SQLite and
PostgreSQL): every answer is kept with its asker; only the asker rates it or counts a citation opened; the
summary gives rates per day and the worst-rated questions."""

from __future__ import annotations

from pathlib import Path

import pytest

from ragstream.config import StoreConfig
from ragstream.store.catalog_base import Catalog, CollectionFeedback, FeedbackDay, FeedbackRow, RatedQuestion
from ragstream.store.factory import postgres_catalog, sqlite_catalog
from ragstream.store.sqlite_catalog import SqliteConnection


def test_an_answer_is_rated_and_its_citations_counted_by_its_asker_only(catalog: Catalog):
    feedback = catalog.feedback
    feedback.record_answer("m1", "alice", "how do I set a timeout", "2026-03-01T10:00:00+00:00")
    feedback.record_answer("m1", "bob", "another question", "2026-03-02T10:00:00+00:00")  # again: no change
    assert not feedback.rate_answer("m1", "bob", "helpful", "", "t")  # another user's answer is none of bob's
    assert not feedback.rate_answer("m1", None, "helpful", "", "t")
    assert not feedback.rate_answer("nope", "alice", "helpful", "", "t")
    assert feedback.record_citation_open("m1", "bob") is None and feedback.record_citation_open("nope", "alice") is None
    assert feedback.rate_answer("m1", "alice", "helpful", "", "t")
    assert feedback.rate_answer("m1", "alice", "not_helpful", "it cites the wrong page", "t2")  # replaces it
    assert feedback.record_citation_open("m1", "alice", 1) and feedback.record_citation_open("m1", "alice", 2)
    assert feedback.feedback_days("2026-01-01") == [FeedbackDay("2026-03-01", 1, 1, 0, 1, 1, 2)]
    assert feedback.worst_questions("2026-01-01", 5) == [RatedQuestion("how do I set a timeout", 1, 0, 1)]


def test_answers_for_no_user_are_their_own_owner(catalog: Catalog):
    feedback = catalog.feedback
    feedback.record_answer("m", None, "q", "2026-03-01T10:00:00+00:00")
    assert not feedback.rate_answer("m", "alice", "helpful", "", "t")
    assert feedback.rate_answer("m", None, "helpful", "", "t")


def test_the_summary_counts_per_day_and_ranks_the_worst_questions(catalog: Catalog):
    feedback = catalog.feedback
    rows = [("a1", "2026-03-01T09:00:00+00:00", "slow download", "not_helpful", 0),
            ("a2", "2026-03-01T23:59:59+00:00", "slow download", "not_helpful", 1),
            ("a3", "2026-03-02T00:00:00+00:00", "slow download", "helpful", 0),
            ("a4", "2026-03-02T08:00:00+00:00", "proxy login", "not_helpful", 3),
            ("a5", "2026-03-02T09:00:00+00:00", "json body", "helpful", 0),
            ("a6", "2026-03-02T10:00:00+00:00", "json body", None, 0),
            ("old", "2026-02-01T10:00:00+00:00", "ancient", "not_helpful", 0)]
    for message_id, at, question, rating, opens in rows:
        feedback.record_answer(message_id, "u", question, at)
        if rating:
            assert feedback.rate_answer(message_id, "u", rating, "", at)
        for number in range(opens):
            assert feedback.record_citation_open(message_id, "u", number + 1)
    assert feedback.feedback_days("2026-03-01") == [FeedbackDay("2026-03-01", 2, 2, 0, 2, 1, 1),
                                                    FeedbackDay("2026-03-02", 4, 3, 2, 1, 1, 3)]
    assert feedback.worst_questions("2026-03-01", 10) == [RatedQuestion("slow download", 3, 1, 2),
                                                          RatedQuestion("proxy login", 1, 0, 1)]
    assert feedback.worst_questions("2026-03-01", 1) == [RatedQuestion("slow download", 3, 1, 2)]
    assert [q.question for q in feedback.worst_questions("2026-01-01", 10)] == [
        "slow download", "ancient", "proxy login"]  # a tie goes by the question's text
    assert feedback.feedback_days("2027-01-01") == [] and feedback.worst_questions("2027-01-01", 5) == []


def test_answers_count_in_each_collection_they_drew_on(catalog: Catalog):
    feedback = catalog.feedback
    for message_id, rating, opens, collections in [("a", "helpful", 1, ["hr"]), ("b", "not_helpful", 0, ["hr", "product"]),
                                                   ("c", None, 2, ["product"]), ("d", "helpful", 0, [])]:
        feedback.record_answer(message_id, "u", f"question {message_id}", "2026-03-01T10:00:00+00:00")
        feedback.record_answer_collections(message_id, collections)
        feedback.record_answer_collections(message_id, collections)  # again: no change
        if rating:
            assert feedback.rate_answer(message_id, "u", rating, "", "t")
        for number in range(opens):
            assert feedback.record_citation_open(message_id, "u", number + 1)
    feedback.record_answer("old", "u", "q", "2026-01-01T10:00:00+00:00")
    feedback.record_answer_collections("old", ["hr"])
    assert feedback.feedback_by_collection("2026-02-01") == [CollectionFeedback("hr", 2, 2, 1, 1, 1, 1),
                                                             CollectionFeedback("product", 2, 1, 0, 1, 1, 2)]
    assert feedback.feedback_by_collection("2025-01-01")[0] == CollectionFeedback("hr", 3, 2, 1, 1, 1, 1)
    assert feedback.feedback_by_collection("2027-01-01") == []


def test_feedback_rows_page_in_byte_order_and_import_exactly(catalog: Catalog):
    feedback = catalog.feedback
    for message_id in ("b", "a", "C", "c"):  # byte order: C < a < b < c on every backend
        feedback.record_answer(message_id, "u" if message_id != "a" else None, f"q {message_id}", "2026-03-01T10:00:00+00:00")
    feedback.record_answer_collections("b", ["z", "hr"])
    assert feedback.rate_answer("b", "u", "not_helpful", "wrong page", "2026-03-01T11:00:00+00:00")
    assert feedback.record_citation_open("b", "u", 3) and feedback.record_citation_open("b", "u")
    first = feedback.feedback_rows(None, 2)
    assert [row.message_id for row in first] == ["C", "a"] and first[1].owner == ""
    rest = feedback.feedback_rows("a", 10)
    assert rest[0] == FeedbackRow("b", "u", "q b", "2026-03-01T10:00:00+00:00", "not_helpful", "wrong page",
                                  "2026-03-01T11:00:00+00:00", (0, 3), ("hr", "z"))
    assert [row.message_id for row in rest] == ["b", "c"] and feedback.feedback_rows("c", 10) == []
    moved = rest[0]._replace(rating="helpful", opened_citations=(2,), collections=("product",))
    feedback.import_feedback([moved, FeedbackRow("new", "v", "q", "2026-03-02T10:00:00+00:00", None, None, None, (), ())])
    assert feedback.feedback_rows("a", 1) == [moved]  # replaced, its collections and citations opened too
    assert feedback.record_citation_open("b", "u", 2) is False and feedback.record_citation_open("b", "u", 3) is True
    assert feedback.feedback_rows("a", 1)[0].opened_citations == (2, 3)
    assert feedback.feedback_days("2026-03-01")[0].citation_opens == 2  # "b" alone opened citations that day
    assert feedback.rate_answer("new", "v", "helpful", "", "t")  # an imported answer is its asker's to rate
    feedback.import_feedback([])


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_a_catalog_that_counted_every_open_keeps_one_per_answer(backend: str, tmp_path: Path,
                                                                request: pytest.FixtureRequest):
    """A catalog from before opens named their citation (every open counted, e.g. 10,000 of one answer): opening
    it keeps one open of an unnamed citation per answer opened, then counts each named citation once."""
    def reopen() -> Catalog:
        if backend == "postgres":
            return postgres_catalog(StoreConfig(backend="postgres", url=request.getfixturevalue("postgres_url")))
        return sqlite_catalog(tmp_path / "catalog.sqlite3")

    catalog = reopen()
    for message_id in ("opened", "closed"):
        catalog.feedback.record_answer(message_id, "alice", "q", "2026-03-01T10:00:00+00:00")
    old = ["DROP TABLE answer_citation_opens", "UPDATE answer_feedback SET citation_opens = 10000 WHERE message_id = 'opened'"]
    if backend == "postgres":  # the tables as a database from before named citations has them
        with catalog.connection.db.write() as conn:  # type: ignore[attr-defined]
            for statement in old:
                conn.execute(statement)
    else:
        with catalog.connection.transaction() as db:  # type: ignore[attr-defined]
            for statement in old:
                db.execute(statement)
    assert catalog.feedback.feedback_days("2026-01-01") == [FeedbackDay("2026-03-01", 2, 0, 0, 0, 1, 10_000)]
    catalog.close()
    upgraded = reopen()
    try:
        assert upgraded.feedback.feedback_days("2026-01-01") == [FeedbackDay("2026-03-01", 2, 0, 0, 0, 1, 1)]
        assert [row.opened_citations for row in upgraded.feedback.feedback_rows(None, 10)] == [(), (0,)]
        assert upgraded.feedback.record_citation_open("opened", "alice") is False  # the unnamed one: counted
        assert upgraded.feedback.record_citation_open("opened", "alice", 1) is True
        assert upgraded.feedback.feedback_days("2026-01-01") == [FeedbackDay("2026-03-01", 2, 0, 0, 0, 1, 2)]
    finally:
        upgraded.close()
    again = reopen()  # the migration ran once: a second open changes nothing
    try:
        assert again.feedback.feedback_days("2026-01-01") == [FeedbackDay("2026-03-01", 2, 0, 0, 0, 1, 2)]
    finally:
        again.close()


def test_a_citation_opened_again_counts_once(catalog: Catalog):
    """Issue 41 item 5: 10,000 opens of one citation of an answer by its asker count once; each other citation of
    it once more; an open naming no citation (a client from before citations were named) is one citation."""
    feedback = catalog.feedback
    feedback.record_answer("m", "alice", "q", "2026-03-01T10:00:00+00:00")
    feedback.record_answer("other", "alice", "q2", "2026-03-01T11:00:00+00:00")
    for _ in range(OPENS):
        assert feedback.record_citation_open("m", "alice") is not None
    assert feedback.feedback_days("2026-01-01") == [FeedbackDay("2026-03-01", 2, 0, 0, 0, 1, 1)]
    assert feedback.record_citation_open("m", "alice", 1) is True  # a named citation: a new one
    assert [feedback.record_citation_open("m", "alice", 1) for _ in range(100)] == [False] * 100  # counted before
    assert feedback.record_citation_open("m", "alice", 2) and feedback.record_citation_open("other", "alice", 1)
    assert feedback.record_citation_open("m", "bob", 3) is None and feedback.record_citation_open("no", "alice", 1) is None
    assert feedback.feedback_days("2026-01-01") == [FeedbackDay("2026-03-01", 2, 0, 0, 0, 2, 4)]
    assert feedback.feedback_rows(None, 10)[0].opened_citations == (0, 1, 2)


def test_re_ratings_keep_the_sqlite_catalog_its_size(tmp_path: Path):
    """Issue 41 item 5: 10,000 re-ratings of one answer replace its rating in place; the catalog file with its
    write-ahead log stays within the log's bound (store.sqlite_wal_limit_bytes) of its size after the first
    rating. Measured after a passive checkpoint, the kind SQLite runs by itself (a truncating one would hide the
    log)."""
    path = tmp_path / "catalog.sqlite3"
    catalog = sqlite_catalog(path)
    try:
        feedback = catalog.feedback
        for number in range(ANSWERS):
            feedback.record_answer(f"m{number}", "alice", f"question {number}", "2026-03-01T10:00:00+00:00")
        assert feedback.rate_answer("m0", "alice", "helpful", "x" * COMMENT_CHARS, "2026-03-01T10:00:00+00:00")
        _checkpoint(catalog, "TRUNCATE")
        first = _on_disk(path)
        for number in range(RE_RATINGS):
            assert feedback.rate_answer("m0", "alice", ("helpful", "not_helpful")[number % 2],
                                        str(number % 10) * COMMENT_CHARS, "2026-03-01T11:00:00+00:00")
        _checkpoint(catalog, "PASSIVE")
        assert _on_disk(path) <= first + StoreConfig().sqlite_wal_limit_bytes + SLACK_BYTES, (first, _on_disk(path))
        _checkpoint(catalog, "TRUNCATE")
        assert _on_disk(path) == first  # the database itself: the rating replaced in place, no page added
        assert feedback.feedback_rows(None, 1)[0].comment == "9" * COMMENT_CHARS
    finally:
        catalog.close()


OPENS = 10_000
RE_RATINGS = 10_000
ANSWERS = 500
COMMENT_CHARS = 2_000
SLACK_BYTES = 64 * 1024  # a few pages: the last transaction's frames beyond the log's bound


def _checkpoint(catalog: Catalog, mode: str) -> None:
    connection = catalog.connection
    assert isinstance(connection, SqliteConnection)
    with connection.lock:
        connection.db.execute(f"PRAGMA wal_checkpoint({mode})")


def _on_disk(path: Path) -> int:
    """The catalog's bytes on disk: the database file, its write-ahead log and the log's index."""
    return sum(file.stat().st_size for file in path.parent.glob(path.name + "*"))
