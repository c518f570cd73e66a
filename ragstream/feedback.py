"""What askers say about answers: helpful or not (with an optional comment), and the citations they open.
One rating per answer (a re-rating replaces it in place) and one open per citation of it, however often
the asker rates it or opens the citation.

Every answer given is kept with its message id, its asker and its question (the catalog's ``Feedback``
role), so only the asker rates it or counts a citation opened, however old the answer; the summary
gives, per day, the answers, the share rated helpful and the share whose citations were opened, and
the questions rated not helpful most often. The counters in :mod:`ragstream.metrics` follow every
rating and open.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any, Literal

from pydantic import BaseModel, Field

from ragstream import metrics
from ragstream.config.feedback import FeedbackConfig
from ragstream.errors import InsufficientStorageError, InvalidFeedbackError, MessageNotFoundError, VectorDBUnavailableError
from ragstream.store.catalog_feedback import CollectionFeedback, Feedback, FeedbackDay

logger = logging.getLogger("ragstream.feedback")

Rating = Literal["helpful", "not_helpful"]
RATINGS: tuple[str, ...] = ("helpful", "not_helpful")


class Rated(BaseModel):
    """A rating as kept."""

    message_id: str
    rating: Rating
    comment: str


class DaySummary(BaseModel):
    """One day's answers (UTC, by the day they were given) and what their askers did with them."""

    day: str
    answers: int
    rated: int
    helpful: int
    not_helpful: int
    helpful_rate: float | None = Field(description="Helpful ratings over ratings (None: no rating that day).")
    rated_rate: float = Field(description="Rated answers over answers.")
    citation_open_rate: float = Field(description="Answers with at least one citation opened, over answers.")
    citation_opens: int


class CollectionSummary(BaseModel):
    """One collection's answers (those that cited a document of it when given) and what their askers did with them."""

    collection_id: str
    name: str | None = Field(description="The collection's name now (None: the collection was deleted since).")
    answers: int
    rated: int
    helpful: int
    not_helpful: int
    helpful_rate: float | None = Field(description="Helpful ratings over ratings (None: no rating).")
    rated_rate: float = Field(description="Rated answers over answers.")
    citation_open_rate: float = Field(description="Answers with at least one citation opened, over answers.")
    citation_opens: int


class WorstQuestion(BaseModel):
    """A question rated not helpful, with its answers and ratings."""

    question: str
    answers: int
    helpful: int
    not_helpful: int


class FeedbackSummary(BaseModel):
    """Rates per day and the worst-rated questions since ``since`` (an ISO date, UTC)."""

    since: str
    days: list[DaySummary]
    collections: list[CollectionSummary] = Field(description="Per collection an answer drew on (in name order; "
                                                 "an answer citing two collections counts in both).")
    worst_questions: list[WorstQuestion]
    answers: int
    helpful_rate: float | None
    citation_open_rate: float


class AnswerFeedback:
    """Keeps answers for rating, takes ratings and citation opens from their askers, summarises them."""

    def __init__(self, feedback: Feedback, config: FeedbackConfig,
                 collection_names: Callable[[], dict[str, str]] = dict) -> None:
        self._feedback = feedback
        self._config = config
        self._collection_names = collection_names  # collection id -> its name now, for the summary

    def record_answer(self, message_id: str, owner: str | None, question: str) -> None:
        """Keep an answer given to ``owner`` so its asker can rate it; on a full disk it is logged, not kept."""
        try:
            self._feedback.record_answer(message_id, owner, question, _now())
        except InsufficientStorageError as error:  # the answer is still served; only its rating is lost
            logger.warning("answer not kept for feedback: %s", error.message)
            return
        metrics.record_answer_given()

    def record_collections(self, message_id: str, collection_ids: Sequence[str]) -> None:
        """Keep the collections (ids) the answer ``message_id`` drew on, as they were when it was given (a document
        moved later does not move its past answers); on a full disk or a catalog down it is logged, not kept."""
        if not collection_ids:
            return
        try:
            self._feedback.record_answer_collections(message_id, sorted(set(collection_ids)))
        except (InsufficientStorageError, VectorDBUnavailableError) as error:  # the answer is still served
            logger.warning("answer's collections not kept for feedback: %s", error.message)

    def rate(self, message_id: str, rating: str, comment: str = "", *, user: str | None = None) -> Rated:
        """``user``'s rating of their answer ``message_id`` (a later one replaces it).

        InvalidFeedbackError for a rating other than helpful / not_helpful or a comment over
        ``max_comment_chars``; MessageNotFoundError when ``user`` was given no answer with that id."""
        if rating not in RATINGS:
            raise InvalidFeedbackError(f"rating must be one of {', '.join(RATINGS)}, not {rating!r}")
        comment = comment or ""
        if len(comment) > self._config.max_comment_chars:
            raise InvalidFeedbackError(f"comment is {len(comment)} characters; "
                                       f"the limit is {self._config.max_comment_chars}")
        if not self._feedback.rate_answer(message_id, user, rating, comment, _now()):
            raise _not_found(message_id)
        metrics.record_rating(rating)
        return Rated(message_id=message_id, rating=rating, comment=comment)

    def citation_opened(self, message_id: str, citation: int | None = None, *, user: str | None = None) -> bool:
        """Count the citation ``[citation]`` of ``user``'s answer ``message_id`` opened, once however often it is
        opened (None: a citation the caller did not name; all such count as one): True when counted now, False
        when counted before. InvalidFeedbackError for a citation number outside 1..``max_citation_number``;
        MessageNotFoundError as :meth:`rate`."""
        limit = self._config.max_citation_number
        if citation is not None and (isinstance(citation, bool) or not 1 <= citation <= limit):
            raise InvalidFeedbackError(f"citation must be a number between 1 and {limit}, not {citation!r}")
        counted = self._feedback.record_citation_open(message_id, user, citation)
        if counted is None:
            raise _not_found(message_id)
        if counted:
            metrics.record_citation_open()
        return counted

    def summary(self, days: int | None = None, worst: int | None = None) -> FeedbackSummary:
        """The last ``days`` days (today included) and the ``worst`` most often not-helpful questions."""
        config = self._config
        days = config.summary_days if days is None else days
        worst = config.worst_questions if worst is None else worst
        if not 1 <= days <= config.max_summary_days:
            raise InvalidFeedbackError(f"days must be between 1 and {config.max_summary_days}, not {days}")
        if not 0 <= worst <= config.max_worst_questions:
            raise InvalidFeedbackError(f"worst must be between 0 and {config.max_worst_questions}, not {worst}")
        since = (datetime.now(UTC).date() - timedelta(days=days - 1)).isoformat()
        rows = self._feedback.feedback_days(since)
        answers = sum(row.answers for row in rows)
        rated = sum(row.helpful + row.not_helpful for row in rows)
        return FeedbackSummary(
            since=since,
            days=[DaySummary(day=row.day, **_rates(row)) for row in rows],
            collections=self._by_collection(self._feedback.feedback_by_collection(since)),
            worst_questions=[WorstQuestion(**row._asdict()) for row in self._feedback.worst_questions(since, worst)],
            answers=answers,
            helpful_rate=_share(sum(row.helpful for row in rows), rated),
            citation_open_rate=_share(sum(row.answers_with_citation_opens for row in rows), answers) or 0.0,
        )


    def _by_collection(self, rows: list[CollectionFeedback]) -> list[CollectionSummary]:
        names = self._collection_names() if rows else {}
        summaries = [CollectionSummary(collection_id=row.collection_id, name=names.get(row.collection_id), **_rates(row))
                     for row in rows]
        return sorted(summaries, key=lambda summary: (summary.name is None, summary.name or "", summary.collection_id))


def _rates(row: FeedbackDay | CollectionFeedback) -> dict[str, Any]:
    """The counts and rates a day's and a collection's summary share, from its catalog row."""
    return {"answers": row.answers, "rated": row.rated, "helpful": row.helpful, "not_helpful": row.not_helpful,
            "helpful_rate": _share(row.helpful, row.rated), "rated_rate": _share(row.rated, row.answers) or 0.0,
            "citation_open_rate": _share(row.answers_with_citation_opens, row.answers) or 0.0,
            "citation_opens": row.citation_opens}


def _share(part: int, whole: int) -> float | None:
    return round(part / whole, 4) if whole else None


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def _not_found(message_id: str) -> MessageNotFoundError:
    return MessageNotFoundError(f"no answer with message id {message_id!r}")
