"""``answer.feedback``: ratings of answers and citation opens (docs/feedback.md)."""

from __future__ import annotations

from pydantic import Field

from ragstream.config.base import ConfigSection


class FeedbackConfig(ConfigSection):
    """What an asker may say about an answer, and how much of it the summary shows."""

    max_comment_chars: int = Field(
        2000, ge=0, description="Longest comment a rating may carry, in characters (longer: 422 invalid_feedback).")
    max_citation_number: int = Field(
        100, ge=1, description="Highest citation number (the n of [n]) a citation open may name (more, or below 1: "
        "422 invalid_feedback), so an answer counts at most this many citations opened, plus one an open did not name "
        "(as many as server.max_top_k lets an answer cite).")
    summary_days: int = Field(
        30, ge=1, description="The feedback summary covers this many days (UTC, today included) unless told otherwise.")
    max_summary_days: int = Field(
        366, ge=1, description="Most days a feedback summary may cover, in days (more: 422 invalid_feedback).")
    worst_questions: int = Field(
        10, ge=0, description="Worst-rated questions the summary lists unless told otherwise (questions).")
    max_worst_questions: int = Field(
        100, ge=0, description="Most worst-rated questions a summary may list (more: 422 invalid_feedback).")
