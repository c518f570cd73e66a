"""The catalog's answer feedback (``Feedback``) on every catalog backend (the ``catalog`` fixture: SQLite and
PostgreSQL): every answer is kept with its asker; only the asker rates it or counts a citation opened; the
summary gives rates per day and the worst-rated questions."""

from __future__ import annotations

from ragstream.store.catalog_base import Catalog, CollectionFeedback, FeedbackDay, FeedbackRow, RatedQuestion


def test_an_answer_is_rated_and_its_citations_counted_by_its_asker_only(catalog: Catalog):
    feedback = catalog.feedback
    feedback.record_answer("m1", "alice", "how do I set a timeout", "2026-03-01T10:00:00+00:00")
    feedback.record_answer("m1", "bob", "another question", "2026-03-02T10:00:00+00:00")  # again: no change
    assert not feedback.rate_answer("m1", "bob", "helpful", "", "t")  # another user's answer is none of bob's
    assert not feedback.rate_answer("m1", None, "helpful", "", "t")
    assert not feedback.rate_answer("nope", "alice", "helpful", "", "t")
    assert not feedback.record_citation_open("m1", "bob") and not feedback.record_citation_open("nope", "alice")
    assert feedback.rate_answer("m1", "alice", "helpful", "", "t")
    assert feedback.rate_answer("m1", "alice", "not_helpful", "it cites the wrong page", "t2")  # replaces it
    assert feedback.record_citation_open("m1", "alice") and feedback.record_citation_open("m1", "alice")
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
        for _ in range(opens):
            assert feedback.record_citation_open(message_id, "u")
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
        for _ in range(opens):
            assert feedback.record_citation_open(message_id, "u")
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
    assert feedback.record_citation_open("b", "u")
    first = feedback.feedback_rows(None, 2)
    assert [row.message_id for row in first] == ["C", "a"] and first[1].owner == ""
    rest = feedback.feedback_rows("a", 10)
    assert rest[0] == FeedbackRow("b", "u", "q b", "2026-03-01T10:00:00+00:00", "not_helpful", "wrong page",
                                  "2026-03-01T11:00:00+00:00", 1, ("hr", "z"))
    assert [row.message_id for row in rest] == ["b", "c"] and feedback.feedback_rows("c", 10) == []
    moved = rest[0]._replace(rating="helpful", collections=("product",))
    feedback.import_feedback([moved, FeedbackRow("new", "v", "q", "2026-03-02T10:00:00+00:00", None, None, None, 0, ())])
    assert feedback.feedback_rows("a", 1) == [moved]  # replaced, its collections too
    assert feedback.rate_answer("new", "v", "helpful", "", "t")  # an imported answer is its asker's to rate
    feedback.import_feedback([])
