"""``/ws/chat``: the streamed answer of ``POST /api/chat`` over a WebSocket (docs/http-api.md, WebSocket chat).

The client's first message is the ``/api/chat`` body; the server sends every event of the same stream
(``Ragstream.stream_answer``, as the SSE route renders it) as ``{"event": TYPE, "data": {...}}`` and closes
with 1000 after ``done``. ``{"type": "stop"}`` stops generation (the partial answer is kept as incomplete,
as when an SSE client leaves) and closes with 1000, reason ``stopped``. The key is checked by the API key
middleware (a header, or the ``key`` query parameter browsers can send); ``X-User-ID`` works as on
``/api/chat``. A first message that cannot be used, or a failure, is one ``error`` event, then a close
with the code of :func:`close_code`.
"""

from __future__ import annotations

import json
import logging
import uuid
from collections.abc import Iterator
from http import HTTPStatus
from typing import Any

import anyio
from fastapi import APIRouter, WebSocket, WebSocketDisconnect
from fastapi.concurrency import run_in_threadpool
from pydantic import ValidationError
from starlette.websockets import WebSocketState

from ragstream.api_types import ErrorEvent, StreamEvent
from ragstream.errors import InvalidQueryError, RagstreamError
from ragstream.server.errors import FirstMessageTimeoutError, RequestTooLargeError, status_for
from ragstream.server.schemas import ChatRequest
from ragstream.server.state import ServerState
from ragstream.server.users import get_caller

logger = logging.getLogger("ragstream.server")
router = APIRouter(tags=["answers"])
PATH = "/ws/chat"
STOP = "stop"
STOPPED = "stopped"

NORMAL = 1000
"""``done`` was sent, or the client's ``stop`` ended generation."""
UNSUPPORTED_DATA = 1003
"""The first message was binary."""
INVALID_MESSAGE = 1007
"""The first message is not JSON, not a valid ``/api/chat`` body, or its question is refused (a 4xx on /api/chat)."""
POLICY = 1008
"""The caller may not act as the ``X-User-ID`` it named, or sent no first message in time."""
TOO_BIG = 1009
"""The first message is larger than ``limits.max_json_body_bytes``."""
SERVER_ERROR = 1011
"""The answer failed on the server's side (a 5xx or 502/503/429 on /api/chat: the error event says which)."""


def close_code(error: RagstreamError) -> int:
    """The close code that follows ``error``'s event, from the HTTP status /api/chat would answer."""
    status = status_for(error)
    if status in (HTTPStatus.UNAUTHORIZED, HTTPStatus.FORBIDDEN, HTTPStatus.REQUEST_TIMEOUT):
        return POLICY
    if status == HTTPStatus.REQUEST_ENTITY_TOO_LARGE:
        return TOO_BIG
    if 400 <= status < 500 and status != HTTPStatus.TOO_MANY_REQUESTS:
        return INVALID_MESSAGE
    return SERVER_ERROR


def _message(event: StreamEvent | ErrorEvent) -> str:
    return json.dumps({"event": event.type, "data": event.data}, ensure_ascii=False)


def _error_event(error: Exception) -> ErrorEvent:
    if isinstance(error, RagstreamError):
        return ErrorEvent(code=error.code, error_type=type(error).__name__, message=error.message)
    return ErrorEvent(code="internal_error", error_type="InternalError",
                      message="internal server error; see the server log")


async def _fail(websocket: WebSocket, error: RagstreamError, code: int | None = None) -> None:
    """One ``error`` event, then the close ``code`` (by default :func:`close_code`)."""
    await websocket.send_text(_message(_error_event(error)))
    await websocket.close(code=code or close_code(error), reason=error.code)


async def _first_message(websocket: WebSocket, state: ServerState) -> ChatRequest:
    """The ``/api/chat`` body the client sends first, within ``server.ws_first_message_seconds``."""
    seconds = state.config.ws_first_message_seconds
    with anyio.move_on_after(seconds):
        message = await websocket.receive()
        if message.get("type") == "websocket.disconnect":
            raise WebSocketDisconnect(message.get("code", NORMAL))
        text = message.get("text")
        if text is None:
            raise _BinaryMessageError()
        limit = state.rs.config.limits.max_json_body_bytes
        if len(text.encode("utf-8", "surrogatepass")) > limit:
            raise RequestTooLargeError(f"the first message is larger than {limit} bytes (limits.max_json_body_bytes)")
        try:
            return ChatRequest.model_validate(json.loads(text))
        except (json.JSONDecodeError, RecursionError) as error:
            raise InvalidQueryError(f"the first message is not JSON: {error}") from None
        except ValidationError as error:
            raise InvalidQueryError("the first message is not an /api/chat body: " + "; ".join(
                f"{'.'.join(str(p) for p in e['loc']) or 'body'}: {e['msg']}" for e in error.errors())) from None
    raise FirstMessageTimeoutError(f"no first message within {seconds:g} s (server.ws_first_message_seconds)")


class _BinaryMessageError(Exception):
    """The first message was binary, not the JSON text of an /api/chat body."""


@router.websocket(PATH)
async def ws_chat(websocket: WebSocket) -> None:
    """The answer of ``POST /api/chat`` as WebSocket messages ``{"event", "data"}`` (see the module docstring)."""
    state: ServerState = websocket.app.state.ragstream
    await websocket.accept()
    try:
        caller = get_caller(websocket, state)
        body = await _first_message(websocket, state)
        conversation_id = body.conversation_id or str(uuid.uuid4())
        events = state.rs.stream_answer(body.message, conversation_id, body.selected_text,
                                        scope=caller.scope(body.collections))  # as /api/chat
    except WebSocketDisconnect:
        return
    except _BinaryMessageError:
        await _fail(websocket, InvalidQueryError("the first message must be text: the JSON /api/chat body"),
                    UNSUPPORTED_DATA)
        return
    except RagstreamError as error:
        await _fail(websocket, error)
        return
    await _stream(websocket, events)


async def _stream(websocket: WebSocket, events: Iterator[StreamEvent]) -> None:
    """Send ``events`` until ``done``, a failure, the client's ``stop`` or its leaving; the iterator is closed
    whatever ends it (which closes the LLM stream and keeps a partial answer as incomplete)."""
    outcome: dict[str, Any] = {"code": NORMAL, "reason": ""}
    sent = 0

    async def send_events(scope: anyio.CancelScope) -> None:
        nonlocal sent
        try:
            while (item := await run_in_threadpool(next, events, None)) is not None:
                await websocket.send_text(_message(item))
                sent += 1
        except RagstreamError as error:
            await websocket.send_text(_message(_error_event(error)))
            outcome.update(code=close_code(error), reason=error.code)
        except WebSocketDisconnect:
            outcome["code"] = None
        except Exception as error:
            logger.exception("websocket stream failed")
            await websocket.send_text(_message(_error_event(error)))
            outcome.update(code=SERVER_ERROR, reason="internal_error")
        scope.cancel()

    async def watch_client(scope: anyio.CancelScope) -> None:
        while True:
            message = await websocket.receive()
            if message.get("type") == "websocket.disconnect":
                outcome["code"] = None
                break
            if _is_stop(message.get("text")):
                outcome.update(code=NORMAL, reason=STOPPED)
                break
        scope.cancel()

    try:
        async with anyio.create_task_group() as group:
            group.start_soon(send_events, group.cancel_scope)
            group.start_soon(watch_client, group.cancel_scope)
    finally:
        with anyio.CancelScope(shield=True):
            close = getattr(events, "close", None)
            if callable(close):
                await run_in_threadpool(close)
            if outcome["code"] is None:
                logger.info("websocket client left after %d events: the stream was cancelled", sent)
            elif websocket.client_state == WebSocketState.CONNECTED:
                await websocket.close(code=outcome["code"], reason=outcome["reason"])


def _is_stop(text: str | None) -> bool:
    """Whether a client message is ``{"type": "stop"}`` (other messages during a stream are ignored)."""
    try:
        return bool(text) and json.loads(text or "").get("type") == STOP
    except (ValueError, AttributeError, RecursionError):
        return False
