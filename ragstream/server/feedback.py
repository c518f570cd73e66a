"""Feedback on answers over HTTP: ``POST /api/feedback`` (helpful / not helpful, an optional comment),
``POST /api/feedback/citation-open`` (the web UI calls it when a citation is opened) and, for admins,
``GET /api/feedback/summary`` (docs/feedback.md)."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends, Query
from pydantic import BaseModel, Field, StrictInt

from ragstream.api_types import FeedbackSummary, Rated
from ragstream.errors import PermissionDeniedError
from ragstream.server.schemas import ErrorResponse
from ragstream.server.state import ServerState, get_state
from ragstream.server.users import Caller, get_caller

router = APIRouter(prefix="/api/feedback", tags=["feedback"])
ERRORS: dict[int | str, dict[str, Any]] = {status: {"model": ErrorResponse} for status in (404, 422, 507)}


class FeedbackRequest(BaseModel):
    """A rating of one of the caller's answers."""

    message_id: str = Field(description="The answer's id: `message_id` of the `done` event or of `metadata`.")
    rating: str = Field(description="`helpful` or `not_helpful` (anything else: 422 invalid_feedback).")
    comment: str = Field("", description="Optional; at most answer.feedback.max_comment_chars characters.")


class CitationOpenRequest(BaseModel):
    """A citation of one of the caller's answers, opened."""

    message_id: str = Field(description="The answer whose citation was opened.")
    citation: StrictInt | None = Field(None, description="The citation's number, the n of its [n] marker: 1 to "
                                       "answer.feedback.max_citation_number (else 422 invalid_feedback; not an "
                                       "integer: 422 validation_error). Omitted (clients before it): one unnamed "
                                       "citation, however often.")


class CitationOpened(BaseModel):
    message_id: str
    citation: int | None = None
    recorded: bool = Field(True, description="False: this citation of the answer was counted opened before (each "
                           "counts once).")


@router.post("", response_model=Rated, responses=ERRORS, summary="Rate an answer")
def rate(body: FeedbackRequest, state: ServerState = Depends(get_state), caller: Caller = Depends(get_caller)) -> Rated:
    """The caller's rating of their answer (a later rating replaces it). 404 ``message_not_found`` for an id
    the caller was given no answer under (another user's included); 422 ``invalid_feedback`` for a rating
    other than helpful / not_helpful or a comment too long."""
    return state.rs.feedback.rate(body.message_id, body.rating, body.comment, user=caller.user)


@router.post("/citation-open", response_model=CitationOpened, responses=ERRORS, summary="Count a citation opened")
def citation_open(body: CitationOpenRequest, state: ServerState = Depends(get_state),
                  caller: Caller = Depends(get_caller)) -> CitationOpened:
    """Counts the citation ``citation`` of the caller's answer opened, once however often (404 as for a rating;
    422 ``invalid_feedback`` for a citation number out of range)."""
    recorded = state.rs.feedback.citation_opened(body.message_id, body.citation, user=caller.user)
    return CitationOpened(message_id=body.message_id, citation=body.citation, recorded=recorded)


@router.get("/summary", response_model=FeedbackSummary, responses={**ERRORS, 403: {"model": ErrorResponse}},
            summary="Feedback per day and the worst-rated questions (admins)")
def summary(days: int | None = Query(None, description="Days covered, today included (default "
                                     "answer.feedback.summary_days)."),
            worst: int | None = Query(None, description="Worst-rated questions listed (default "
                                      "answer.feedback.worst_questions)."),
            state: ServerState = Depends(get_state), caller: Caller = Depends(get_caller)) -> FeedbackSummary:
    """Per day: answers, ratings, the helpful rate and the share of answers whose citations were opened;
    the questions rated not helpful most often. 403 ``forbidden`` without an admin key."""
    if not caller.admin:
        raise PermissionDeniedError("the feedback summary needs an admin key")
    return state.rs.feedback.summary(days, worst)
