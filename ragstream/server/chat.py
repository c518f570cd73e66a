"""The answer path over HTTP: ``POST /api/query``, ``POST /api/chat`` as Server-Sent
Events and ``POST /api/retrieve``."""

from __future__ import annotations

import uuid
from typing import Any

from fastapi import APIRouter, Depends
from fastapi.responses import StreamingResponse

from ragstream.api_types import Answer, RAGContext, StreamEvent
from ragstream.errors import ConversationNotFoundError, InvalidQueryError
from ragstream.server.schemas import ChatRequest, ConversationTurn, ErrorResponse, QueryRequest, RetrieveRequest
from ragstream.server.sse import MEDIA_TYPE, frame, stream_response
from ragstream.server.state import ServerState, get_state
from ragstream.server.users import Caller, get_caller

router = APIRouter(prefix="/api", tags=["answers"])
ERRORS: dict[int | str, dict[str, Any]] = {status: {"model": ErrorResponse} for status in (422, 502, 503)}
CONVERSATION_HEADER = "X-Conversation-ID"
SSE_DOC: dict[int | str, dict[str, Any]] = {200: {"content": {MEDIA_TYPE: {"schema": {"type": "string"}}},
                 "description": "`event: token|citation|support|done|error` + `data: <json>` messages.",
                 "headers": {CONVERSATION_HEADER: {"schema": {"type": "string"}}}}}


@router.post("/query", response_model=Answer, responses=ERRORS, summary="Ask a question (one JSON answer)")
def query(body: QueryRequest, state: ServerState = Depends(get_state), caller: Caller = Depends(get_caller)) -> Answer:
    """A cited answer with sources, related documents, citations, confidence and metadata, from the
    caller's and the shared documents, in the caller's conversation."""
    return state.rs.ask(body.query, body.conversation_id, body.selected_text, scope=caller.scope(body.collections))


@router.post("/chat", response_class=StreamingResponse, responses={**ERRORS, **SSE_DOC},
             summary="Ask a question (streamed answer)")
async def chat(body: ChatRequest, state: ServerState = Depends(get_state),
               caller: Caller = Depends(get_caller)) -> StreamingResponse:
    """``token`` events as the answer is written, a ``citation`` event per cited chunk, a ``support`` event
    per sentence once it is complete (its verdict: supported, unsupported or uncertain, with the score,
    reason and supporting span), then ``done`` (ids, tokens, latency and the whole response, its
    ``sentences`` included); an ``error`` event if it fails midway.
    Closing the connection stops the generation and records the partial answer as incomplete. The
    conversation id (new unless given) is in the ``X-Conversation-ID`` response header."""
    conversation_id = body.conversation_id or str(uuid.uuid4())
    events = state.rs.stream_answer(body.message, conversation_id, body.selected_text,
                                    scope=caller.scope(body.collections))
    return await stream_response(events, _render, headers={CONVERSATION_HEADER: conversation_id})


@router.get("/conversations/{conversation_id}", response_model=list[ConversationTurn],
            responses={**ERRORS, 404: {"model": ErrorResponse}}, summary="A conversation's kept turns")
def conversation(conversation_id: str, state: ServerState = Depends(get_state),
                 caller: Caller = Depends(get_caller)) -> list[ConversationTurn]:
    """Oldest first; ``incomplete`` marks an answer cut short (the client left mid-stream). 404
    ``conversation_not_found`` when the caller has none under this id (another user's included)."""
    turns = state.rs.conversation(conversation_id, user=caller.user)
    if not turns:
        raise ConversationNotFoundError(f"no conversation with id {conversation_id!r}")
    return [ConversationTurn(**turn) for turn in turns]


@router.post("/retrieve", response_model=RAGContext, responses=ERRORS, summary="Retrieve context chunks")
def retrieve(body: RetrieveRequest, state: ServerState = Depends(get_state),
             caller: Caller = Depends(get_caller)) -> RAGContext:
    """Chunks of the caller's and the shared documents whose relevance reaches ``min_relevance``,
    best first (cached per query, context_key and user)."""
    if body.max_chunks is not None and body.max_chunks > state.config.max_top_k:
        raise InvalidQueryError(f"max_chunks must be at most {state.config.max_top_k}")
    return state.rs.retrieve(body.query, body.context_key, body.max_chunks, body.min_relevance,
                             scope=caller.scope(body.collections))


def _render(event: StreamEvent) -> str:
    return frame(event.type, event.data)
