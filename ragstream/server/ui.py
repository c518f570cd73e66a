"""``GET /api/ui``: the web UI's settings and the example questions of the user's own index."""

from __future__ import annotations

from fastapi import APIRouter, Depends

from ragstream.models import Scope
from ragstream.server.schemas import UISettings
from ragstream.server.state import ServerState, get_state
from ragstream.server.users import Caller, get_caller

router = APIRouter(prefix="/api", tags=["ui"])

EXAMPLE_QUESTION = "What do my documents say about {title}?"
"""The Chat page's example question about a document title ({title})."""


def example_questions(titles: list[str]) -> list[str]:
    """The Chat page's example questions about ``titles``; a title that is already a question is kept."""
    return [title if title.endswith("?") else EXAMPLE_QUESTION.format(title=title) for title in titles]


@router.get("/ui", response_model=UISettings, summary="Web UI settings and example questions")
def ui_settings(state: ServerState = Depends(get_state), caller: Caller = Depends(get_caller)) -> UISettings:
    """Page sizes from the config; example questions from the titles of the largest documents the caller sees."""
    cfg = state.config
    return UISettings(stage_top_entries=cfg.ui_stage_top_entries, documents_page_size=cfg.documents_page_size,
                      documents=state.rs.document_page(0, 0, scope=Scope(caller.user)).total,
                      example_questions=example_questions(state.rs.example_titles(user=caller.user)),
                      max_selected_text_chars=state.rs.config.answer.max_selected_text_chars)
