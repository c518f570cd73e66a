"""``POST /api/search``: the spine's hybrid, dense or BM25 search."""

from __future__ import annotations

from fastapi import APIRouter, Depends

from ragstream.errors import InvalidQueryError
from ragstream.models import SearchResult
from ragstream.server.schemas import ErrorResponse, SearchRequest
from ragstream.server.state import ServerState, get_state
from ragstream.server.users import Caller, get_caller

router = APIRouter(prefix="/api", tags=["search"])


@router.post("/search", response_model=SearchResult, responses={422: {"model": ErrorResponse}},
             summary="Search the index")
def search(body: SearchRequest, state: ServerState = Depends(get_state),
           caller: Caller = Depends(get_caller)) -> SearchResult:
    """Ranked, attributed hits among the caller's and the shared documents, with per-stage
    latencies; BM25 fallback is reported, not hidden."""
    if body.top_k is not None and body.top_k > state.config.max_top_k:
        raise InvalidQueryError(f"top_k must be at most {state.config.max_top_k}")
    found = state.rs.search(body.query, mode=body.mode, top_k=body.top_k, filters=body.filters,
                            score_threshold=body.score_threshold, rerank=body.rerank,
                            scope=caller.scope(body.collections))
    return state.rs.search_with_collection_names(found, user=caller.user, admin=caller.admin)  # names, never ids
