"""What an upload request brings over HTTP: the client's file names and the request body's size limits (the files
are stored and ingested below the facade: ragstream/writes/)."""

from __future__ import annotations

import re
from pathlib import PurePosixPath

from starlette.types import Message, Receive

from ragstream.errors import check_unicode
from ragstream.server.errors import RequestTooLargeError

_CONTROL_CHARS = re.compile(r"[\x00-\x1f\x7f]")


def display_name(raw: str | None, max_chars: int) -> str:
    """The last path part of a client file name, without control characters (for display only).

    Raises InvalidUnicodeError for a name holding a lone surrogate (the multipart parser reads names as
    UTF-8, or Latin-1 when they are not, so only a name given from Python can).
    """
    name = check_unicode(raw or "", "the file name")
    name = PurePosixPath(_CONTROL_CHARS.sub("", name).replace("\\", "/")).name
    return name[:max_chars] or "upload"


def check_content_length(header: str | None, limit: int) -> None:
    """Reject a request whose declared body is over ``limit`` before reading any of it."""
    if header is not None and header.isdigit() and int(header) > limit:
        raise RequestTooLargeError(f"request body of {header} bytes exceeds the limit of {limit} bytes")


def limited_receive(receive: Receive, limit: int) -> Receive:
    """``receive`` that raises RequestTooLargeError once more than ``limit`` body bytes arrived."""
    received = 0

    async def wrapped() -> Message:
        nonlocal received
        message = await receive()
        if message["type"] == "http.request":
            received += len(message.get("body", b""))
            if received > limit:
                raise RequestTooLargeError(f"request body exceeds the limit of {limit} bytes")
        return message

    return wrapped
