"""The catalog's feedback role (:class:`Feedback`): every answer given with its asker, its rating and citation
opens, and the collections its cited documents belonged to when it was given; and its rows in key order for
``ragstream migrate``. Kept apart from :mod:`ragstream.store.catalog_base`, which re-exports it."""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple, Protocol


class FeedbackDay(NamedTuple):
    """One day's answers (by the day they were given, UTC) and what their askers did with them."""

    day: str
    answers: int
    rated: int
    helpful: int
    not_helpful: int
    answers_with_citation_opens: int
    citation_opens: int


class CollectionFeedback(NamedTuple):
    """One collection's answers (those citing a document of it when given) and what their askers did with them."""

    collection_id: str
    answers: int
    rated: int
    helpful: int
    not_helpful: int
    answers_with_citation_opens: int
    citation_opens: int


class RatedQuestion(NamedTuple):
    """A question as asked (the same text counts once), its answers and their ratings."""

    question: str
    answers: int
    helpful: int
    not_helpful: int


class FeedbackRow(NamedTuple):
    """One answer's feedback row as a migration copies it (``owner`` "" for none; ``collections`` sorted ids)."""

    message_id: str
    owner: str
    question: str
    answered_at: str
    rating: str | None
    comment: str | None
    rated_at: str | None
    opened_citations: tuple[int, ...]
    """The citations its asker opened, each once, sorted (0: one an open did not name)."""
    collections: tuple[str, ...]


class Feedback(Protocol):
    """Every answer's message id with its asker, and the asker's rating and citation opens of it."""

    def record_answer(self, message_id: str, owner: str | None, question: str, answered_at: str) -> None:
        """Keep ``message_id`` as ``owner``'s answer to ``question`` (again: no change)."""
        ...

    def record_answer_collections(self, message_id: str, collection_ids: Sequence[str]) -> None:
        """Note that the answer ``message_id`` drew on documents of these collections (ids; again: no change)."""
        ...

    def rate_answer(self, message_id: str, owner: str | None, rating: str, comment: str, rated_at: str) -> bool:
        """Set ``owner``'s rating (and comment) of the answer; a later rating replaces it. False when ``owner``
        has no answer with that id (another user's counts as none)."""
        ...

    def record_citation_open(self, message_id: str, owner: str | None, citation: int | None = None) -> bool | None:
        """Count the citation number ``citation`` (None: one the open did not name) of ``owner``'s answer opened,
        once however often it is opened: True when counted now, False when counted before; None when ``owner``
        has no answer with that id (another user's counts as none)."""
        ...

    def feedback_days(self, since: str) -> list[FeedbackDay]:
        """Per day from ``since`` (an ISO date) on, oldest first: answers, ratings and citation opens."""
        ...

    def feedback_by_collection(self, since: str) -> list[CollectionFeedback]:
        """Per collection (by id, in id order), the answers given from ``since`` on that drew on it: ratings and
        citation opens (an answer drawing on two collections counts in both)."""
        ...

    def worst_questions(self, since: str, limit: int) -> list[RatedQuestion]:
        """At most ``limit`` questions rated not helpful at least once since ``since``, most not-helpful first."""
        ...

    def feedback_rows(self, after: str | None, limit: int) -> list[FeedbackRow]:
        """Up to ``limit`` answers' rows in message-id order (byte order), after the message id ``after``."""
        ...

    def import_feedback(self, rows: Sequence[FeedbackRow]) -> None:
        """Store answers' rows exactly as given (an existing message id is replaced, its collections too)."""
        ...
