"""Server-Sent Events over a blocking event iterator, cancelled when the client goes away.

Bad input must still get a plain JSON 4xx: the first item is produced before the response starts
(validation, retrieval and the pipeline run then), so its errors reach the normal error handlers.
Later errors become one ``error`` event. Whenever the stream ends early (client disconnect), the
iterator is closed, which closes the LLM stream behind it.
"""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any, TypeVar

import anyio
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import StreamingResponse

from ragstream.api_runtime import current_request_id
from ragstream.api_types import ErrorEvent
from ragstream.errors import RagstreamError

T = TypeVar("T")
logger = logging.getLogger("ragstream.server")

MEDIA_TYPE = "text/event-stream"
NO_BUFFERING = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}
_END = object()


def frame(event: str | None, data: Any) -> str:
    """One SSE message: ``event: <type>`` (when given) and ``data: <json>`` (or raw text)."""
    payload = data if isinstance(data, str) else json.dumps(data, ensure_ascii=False)
    head = f"event: {event}\n" if event else ""
    return f"{head}data: {payload}\n\n"


def error_frame(error: Exception) -> str:
    """The ``error`` event: a ragstream error's code, or ``internal_error``."""
    if isinstance(error, RagstreamError):
        event = ErrorEvent(code=error.code, error_type=type(error).__name__, message=error.message,
                           request_id=current_request_id())
    else:
        event = ErrorEvent(code="internal_error", error_type="InternalError",
                           message="internal server error; see the server log", request_id=current_request_id())
    return frame(event.type, event.data)


async def stream_response(events: Iterator[T], render: Callable[[T], str], closing: str = "",
                          headers: dict[str, str] | None = None) -> StreamingResponse:
    """A streaming response of ``render(event)`` frames, then ``closing``.

    Raises the iterator's first error before anything is sent (so it becomes a JSON error response).
    """
    first = await run_in_threadpool(next, events, _END)
    return StreamingResponse(_frames(events, first, render, closing), media_type=MEDIA_TYPE,
                             headers={**NO_BUFFERING, **(headers or {})})


async def _frames(events: Iterator[T], first: Any, render: Callable[[T], str], closing: str) -> AsyncIterator[str]:
    item = first
    sent = 0
    ended = False  # False while the client may still be reading: any other exit is a disconnect
    try:
        while item is not _END:
            yield render(item)
            sent += 1
            item = await run_in_threadpool(next, events, _END)
        ended = True
        if closing:
            yield closing
    except RagstreamError as error:
        ended = True
        yield error_frame(error)
    except Exception as error:
        ended = True
        logger.exception("stream failed")
        yield error_frame(error)
    finally:
        if not ended:
            logger.info("client disconnected after %d events: cancelling the stream", sent)
        close = getattr(events, "close", None)
        if callable(close):
            with anyio.CancelScope(shield=True):
                await run_in_threadpool(close)
        if not ended:
            logger.info("stream cancelled after %d events", sent)
