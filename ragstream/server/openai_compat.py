"""``POST /v1/chat/completions``: ragstream as an OpenAI-compatible model whose answers are grounded
and cited. The last user message is the question; the answer keeps its ``[n]`` markers and the
extra ``ragstream`` field carries sources, citations and confidence. ``GET /v1/models`` lists the one
model, ``ragstream``, as OpenAI clients expect before they call it. ``ragstream.sentences`` holds each
sentence of the answer with its support verdict (docs/answers.md)."""

from __future__ import annotations

import contextlib
import functools
import itertools
import time
import uuid
from collections.abc import Iterator
from typing import Any, Literal

from fastapi import APIRouter, Depends
from fastapi.concurrency import run_in_threadpool
from pydantic import BaseModel, Field

from ragstream.api_types import Answer, StreamEvent
from ragstream.errors import CollectionNotFoundError, InvalidQueryError
from ragstream.server.errors import ModelNotFoundError
from ragstream.server.schemas import ErrorResponse
from ragstream.server.sse import MEDIA_TYPE, frame, stream_response
from ragstream.server.state import ServerState, get_state
from ragstream.server.users import Caller, get_caller

router = APIRouter(prefix="/v1", tags=["openai"])
MODEL_NAME = "ragstream"
MODEL_OWNER = "ragstream"
COLLECTION_MODEL_PREFIX = f"{MODEL_NAME}/"
"""``ragstream/NAME``: the model that answers from the collection NAME only (docs/collections.md)."""
STARTED = int(time.time())
"""``created`` of the listed model: when the server process started."""
DONE = frame(None, "[DONE]")
STOP = "stop"


class TextPart(BaseModel):
    """One part of a multi-part message; only text parts carry the question."""

    type: str
    text: str | None = None


class ChatMessage(BaseModel):
    """An OpenAI chat message."""

    role: Literal["system", "user", "assistant", "tool", "developer"]
    content: str | list[TextPart] | None = None


class CompletionRequest(BaseModel):
    """The OpenAI chat-completions request; sampling fields are accepted and ignored."""

    model: str = MODEL_NAME
    messages: list[ChatMessage] = Field(min_length=1)
    stream: bool = False
    user: str | None = Field(None, description="Used as the ragstream conversation id when given.")


class CompletionChoice(BaseModel):
    """One answer of a completion."""

    index: int
    message: ChatMessage
    finish_reason: str


class Completion(BaseModel):
    """The OpenAI chat-completion response plus ``ragstream`` (sources, citations, confidence, sentences)."""

    id: str
    object: Literal["chat.completion"] = "chat.completion"
    created: int
    model: str
    choices: list[CompletionChoice]
    usage: dict[str, int | None]
    ragstream: dict[str, Any]


class ModelCard(BaseModel):
    """One model as ``GET /v1/models`` lists it."""

    id: str
    object: Literal["model"] = "model"
    created: int
    owned_by: str


class ModelList(BaseModel):
    """The OpenAI model list."""

    object: Literal["list"] = "list"
    data: list[ModelCard]


@router.get("/models", response_model=ModelList, summary="OpenAI-compatible model list")
def list_models(state: ServerState = Depends(get_state), caller: Caller = Depends(get_caller)) -> ModelList:
    """``ragstream`` (every collection the caller may read; any other ``model`` sent to chat completions is
    answered by it too), then ``ragstream/NAME`` for each collection the caller may read (that collection only;
    NAME is ``OWNER:NAME`` when the bare name would mean another collection or several)."""
    names = state.rs.collection_references(user=caller.user, admin=caller.admin)
    return ModelList(data=[_model_card(), *(_model_card(f"{COLLECTION_MODEL_PREFIX}{name}") for name in names)])


@router.get("/models/{model:path}", response_model=ModelCard, responses={404: {"model": ErrorResponse}},
            summary="OpenAI-compatible model details")
def get_model(model: str, state: ServerState = Depends(get_state), caller: Caller = Depends(get_caller)) -> ModelCard:
    """A model card of :func:`list_models`; any other name is 404 ``model_not_found``."""
    if model != MODEL_NAME:
        _check_model(state, caller, model)
    return _model_card(model)


def _model_card(name: str = MODEL_NAME) -> ModelCard:
    return ModelCard(id=name, created=STARTED, owned_by=MODEL_OWNER)


def _check_model(state: ServerState, caller: Caller, model: str) -> None:
    """That ``model`` is ``ragstream/NAME`` of a collection the caller may read: 404 ``model_not_found`` otherwise
    (one the caller may not read as one that does not exist)."""
    if not model.startswith(COLLECTION_MODEL_PREFIX):
        raise ModelNotFoundError(f"no model {model!r}; this server answers as {MODEL_NAME!r} and "
                                 f"{COLLECTION_MODEL_PREFIX}NAME for each collection you may read")
    with _model_not_found(model):
        state.rs.collection(model.removeprefix(COLLECTION_MODEL_PREFIX), user=caller.user, admin=caller.admin)


@router.post("/chat/completions", response_model=Completion,
             responses={422: {"model": ErrorResponse}, 200: {"content": {MEDIA_TYPE: {"schema": {"type": "string"}}}}},
             summary="OpenAI-compatible chat completion (stream or not)")
async def chat_completions(body: CompletionRequest, state: ServerState = Depends(get_state),
                           caller: Caller = Depends(get_caller)) -> Any:
    """Answer the last user message from the caller's and the shared documents, as ``chat.completion``
    or a stream of ``chat.completion.chunk`` objects ending in ``data: [DONE]``."""
    question = _question(body.messages)
    completion_id = f"chatcmpl-{uuid.uuid4().hex}"
    # the collection is checked inside the answer's attempt (a store down then answers without retrieval)
    names = [body.model.removeprefix(COLLECTION_MODEL_PREFIX)] if body.model.startswith(COLLECTION_MODEL_PREFIX) else None
    scope = caller.scope(names)
    if body.stream:
        events = _as_model_errors(state.rs.stream_answer(question, body.user, scope=scope), body.model)
        return await stream_response(_chunks(events, completion_id, body.model), _as_data, closing=DONE)
    with _model_not_found(body.model):
        answer = await run_in_threadpool(functools.partial(state.rs.ask, question, body.user, scope=scope))
    return _completion(answer, completion_id, body.model)


@contextlib.contextmanager
def _model_not_found(model: str) -> Iterator[None]:
    """A collection the caller may not read, as a model: 404 ``model_not_found`` (the same as for none)."""
    try:
        yield
    except CollectionNotFoundError as error:
        raise ModelNotFoundError(f"no model {model!r}") from error


def _as_model_errors(events: Iterator[StreamEvent], model: str) -> Iterator[StreamEvent]:
    with _model_not_found(model):
        yield from events


def _question(messages: list[ChatMessage]) -> str:
    for message in reversed(messages):
        if message.role == "user":
            content = message.content
            if isinstance(content, list):
                content = "".join(part.text or "" for part in content if part.type == "text")
            if content:
                return content
    raise InvalidQueryError("no user message with text content")


def _completion(answer: Answer, completion_id: str, model: str) -> Completion:
    tokens = answer.metadata.get("tokens") or {}
    usage = {"prompt_tokens": tokens.get("prompt_tokens"), "completion_tokens": tokens.get("completion_tokens")}
    return Completion(id=completion_id, created=int(time.time()), model=model,
                      choices=[CompletionChoice(index=0, message=ChatMessage(role="assistant", content=answer.answer),
                                                finish_reason=STOP)],
                      usage=usage, ragstream=_extension(answer.model_dump()))


def _chunks(events: Iterator[StreamEvent], completion_id: str, model: str) -> Iterator[dict[str, Any]]:
    """Token events as ``chat.completion.chunk`` deltas; ``done`` as the final chunk."""
    created = int(time.time())
    base = {"id": completion_id, "object": "chat.completion.chunk", "created": created, "model": model}
    first = next(events, None)  # the answer's attempt runs here: its errors (404 model_not_found) precede any chunk
    yield {**base, "choices": [{"index": 0, "delta": {"role": "assistant"}, "finish_reason": None}]}
    for event in itertools.chain([first] if first is not None else [], events):
        if event.type == "token":
            yield {**base, "choices": [{"index": 0, "delta": {"content": event.data["token"]}, "finish_reason": None}]}
        elif event.type == "done":
            yield {**base, "choices": [{"index": 0, "delta": {}, "finish_reason": STOP}],
                   "ragstream": _extension(event.data.get("response", {}))}


def _extension(response: dict[str, Any]) -> dict[str, Any]:
    """The ``ragstream`` extension field: sources, citations, confidence, related documents and every sentence's
    support verdict, and ``degraded_reason`` (why the answer is not what the configuration asked for, e.g. the
    documents could not be searched)."""
    extension = {key: response.get(key) for key in ("sources", "citations", "confidence", "relatedDocs", "sentences")}
    return {**extension, "degraded_reason": (response.get("metadata") or {}).get("degraded_reason")}


def _as_data(chunk: dict[str, Any]) -> str:
    return frame(None, chunk)
