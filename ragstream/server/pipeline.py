"""The SuperPrompt pipeline over HTTP: create, run the next or a named stage, run all, read it."""

from __future__ import annotations

from http import HTTPStatus
from typing import Any

from fastapi import APIRouter, Depends, Query
from fastapi.responses import StreamingResponse

from ragstream.api_pipeline import STAGE_NAMES, STAGES, describe_stage, next_stage
from ragstream.api_types import StreamEvent, SuperPrompt
from ragstream.server.schemas import (
    ErrorResponse,
    NewPromptRequest,
    PipelineState,
    RunAllRequest,
    RunStageRequest,
    StageInfo,
)
from ragstream.server.sse import MEDIA_TYPE, frame, stream_response
from ragstream.server.state import ServerState, get_state
from ragstream.server.users import Caller, get_caller

router = APIRouter(prefix="/api/pipeline", tags=["pipeline"])
ERRORS: dict[int | str, dict[str, Any]] = {status: {"model": ErrorResponse} for status in (404, 409, 422)}
ANSWER_DOC: dict[int | str, dict[str, Any]] = {200: {"content": {MEDIA_TYPE: {"schema": {"type": "string"}}},
                    "description": "The events of /api/chat: `event: token|citation|support|done|error` + `data: <json>`."}}


@router.get("/stages", response_model=list[str] | list[StageInfo], summary="The eight stages")
def stages(detail: bool = Query(False, description="Describe each stage (what it reads and writes, its view, "
                                                   "its cap, its LLM key) instead of listing its name.")
           ) -> list[str] | list[StageInfo]:
    """The stage names in the order they run or, with ``detail=true``, the stage registry's entries."""
    if detail:
        return [StageInfo.model_validate(describe_stage(spec)) for spec in STAGES]
    return list(STAGE_NAMES)


@router.post("", status_code=HTTPStatus.CREATED, response_model=PipelineState, summary="Start a SuperPrompt")
def create(body: NewPromptRequest, state: ServerState = Depends(get_state),
           caller: Caller = Depends(get_caller)) -> PipelineState:
    """A fresh SuperPrompt (stage ``raw``), held by the server under a new id for the caller only."""
    sp = state.rs.new_prompt(body.text, body.conversation, body.selected_text,
                             scope=caller.scope(body.collections))  # 404 now for a collection the caller may not read
    return _state(state, caller, state.prompts.add(sp, caller.user), sp)


@router.get("/{prompt_id}", response_model=PipelineState, responses=ERRORS, summary="Read a SuperPrompt")
def read(prompt_id: str, state: ServerState = Depends(get_state), caller: Caller = Depends(get_caller)) -> PipelineState:
    """The SuperPrompt as JSON, with the next stage to run (another user's is 404)."""
    return _state(state, caller, prompt_id, state.prompts.get(prompt_id, caller.user))


@router.post("/{prompt_id}/run", response_model=PipelineState, responses=ERRORS, summary="Run one stage")
def run(prompt_id: str, body: RunStageRequest, state: ServerState = Depends(get_state),
        caller: Caller = Depends(get_caller)) -> PipelineState:
    """Manual mode: run the next stage, or ``stage`` when its predecessor ran last (else 409); its
    searches see the caller's and the shared documents."""
    sp = state.prompts.get(prompt_id, caller.user)
    sp = state.rs.run_stage(sp, body.stage, scope=caller.scope(sp.collections or None))
    state.prompts.put(prompt_id, sp, caller.user)
    return _state(state, caller, prompt_id, sp)


@router.post("/{prompt_id}/auto", response_model=PipelineState, responses=ERRORS, summary="Run all stages")
def auto(prompt_id: str, body: RunAllRequest, state: ServerState = Depends(get_state),
         caller: Caller = Depends(get_caller)) -> PipelineState:
    """Auto mode: run every remaining stage (through ``until``) over the caller's and the shared documents."""
    sp = state.prompts.get(prompt_id, caller.user)
    sp = state.rs.run_pipeline(sp, until=body.until, scope=caller.scope(sp.collections or None))
    state.prompts.put(prompt_id, sp, caller.user)
    return _state(state, caller, prompt_id, sp)


@router.post("/{prompt_id}/answer", response_class=StreamingResponse, responses={**ERRORS, 503: {"model": ErrorResponse}, **ANSWER_DOC},
             summary="The Answer step (streamed)")
async def answer(prompt_id: str, state: ServerState = Depends(get_state),
                 caller: Caller = Depends(get_caller)) -> StreamingResponse:
    """After Prompt_Builder: the answering model's reply to the rendered ``messages``, exactly as built (the
    extractive answer without an LLM), as ``/api/chat``'s events (tokens, citations, sentence support, ``done``),
    in a new conversation. 409 ``prompt_not_built`` before Prompt_Builder ran; the SuperPrompt is not changed, so
    the step can run again."""
    sp = state.prompts.get(prompt_id, caller.user)
    events = state.rs.stream_prompt_answer(sp, scope=caller.scope(sp.collections or None))
    return await stream_response(events, _event)


def _event(event: StreamEvent) -> str:
    return frame(event.type, event.data)


def _state(state: ServerState, caller: Caller, prompt_id: str, sp: SuperPrompt) -> PipelineState:
    """The prompt as ``caller`` sees it: its chunks name the collections the caller may read (never their ids)."""
    step = next_stage(sp)
    chunks = state.rs.chunks_with_collection_names(sp.base_context_chunks, user=caller.user, admin=caller.admin)
    return PipelineState(id=prompt_id, stages=list(STAGE_NAMES), stages_run=len(sp.history_of_stages),
                         next_stage=step.name if step else None,
                         superprompt=sp.model_copy(update={"base_context_chunks": chunks}))
