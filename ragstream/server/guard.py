"""Checks every request body passes before a route sees it: size, UTF-8, nesting, numbers, no lone surrogates.

Bodies are read whole up to ``limits.max_json_body_bytes`` (413 ``request_too_large`` past it,
before the rest is read); only multipart bodies sent to the upload route pass, under its own limits.
A body that is not valid UTF-8, or JSON holding a lone surrogate escape (``"\\ud800"``, which no UTF-8 text can
carry), is 400 ``invalid_unicode``; ``NaN`` / ``Infinity`` (not JSON, though Python reads them) is 422
``invalid_number``. JSON nested deeper than ``limits.max_json_depth`` is 400 ``json_too_deep`` and a number
written with more than ``limits.max_json_number_chars`` characters 400 ``json_number_too_large`` (before,
2,000 levels overflowed the parser's recursion and 5,000 digits Python's integer conversion: 500s). A body
is read as JSON when its Content-Type says JSON or when it has none (the routes read such bodies as JSON
too). The user id header must be UTF-8 too. On JSON-RPC paths (``/mcp``) only the body's size and the header are
checked here; the endpoint checks the rest and answers a request with a JSON-RPC error that carries its id.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from starlette.datastructures import Headers
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from ragstream.errors import (
    InvalidNumberError,
    InvalidUnicodeError,
    JSONNumberTooLargeError,
    JSONTooDeepError,
    RagstreamError,
)
from ragstream.server.errors import RequestTooLargeError, error_response

MULTIPART = "multipart/"


@dataclass(frozen=True)
class JSONLimits:
    """How deep a JSON body may nest (``limits.max_json_depth``) and how long its numbers may be written
    (``limits.max_json_number_chars``)."""

    max_depth: int
    max_number_chars: int


class RequestGuardMiddleware:
    """Bounds and validates request bodies and the user id header (see the module doc)."""

    def __init__(self, app: ASGIApp, *, max_json_bytes: int, json_limits: JSONLimits, user_id_header: str,
                 upload_paths: frozenset[str], jsonrpc_paths: frozenset[str] = frozenset()) -> None:
        """``jsonrpc_paths`` (``/mcp``): the body's size is bounded here and its content checked by the endpoint, which
        answers each request with a JSON-RPC error that carries its id."""
        self.app = app
        self._max = max_json_bytes
        self._json_limits = json_limits
        self._upload_paths = upload_paths
        self._jsonrpc_paths = jsonrpc_paths
        self._user_header = user_id_header.lower().encode("latin-1")

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = Headers(scope=scope)
        multipart = headers.get("content-type", "").lower().startswith(MULTIPART)
        passes = (multipart and scope["path"] in self._upload_paths) or scope["method"] in ("GET", "HEAD")
        body: bytes | None = None
        jsonrpc = scope["path"] in self._jsonrpc_paths
        try:
            self._check_headers(scope)
            if not passes:
                body = await self._read(headers, receive)
                if not jsonrpc:
                    _check_body(body, headers.get("content-type", ""), self._json_limits)
        except RagstreamError as error:
            await error_response(error)(scope, receive, send)
            return
        await self.app(scope, receive if body is None else replay_body(body, receive), send)

    def _check_headers(self, scope: Scope) -> None:
        for name, value in scope["headers"]:
            if name.lower() == self._user_header:
                try:
                    value.decode("utf-8")
                except UnicodeDecodeError:
                    raise InvalidUnicodeError(f"the {name.decode('latin-1')} header is not UTF-8") from None

    async def _read(self, headers: Headers, receive: Receive) -> bytes:
        declared = headers.get("content-length", "")
        if declared.isdigit() and int(declared) > self._max:
            raise RequestTooLargeError(f"request body of {declared} bytes exceeds the limit of {self._max} bytes "
                                       "(limits.max_json_body_bytes)")
        parts: list[bytes] = []
        size = 0
        while True:
            message = await receive()
            if message["type"] != "http.request":
                break
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > self._max:
                raise RequestTooLargeError(f"request body exceeds the limit of {self._max} bytes "
                                           "(limits.max_json_body_bytes)")
            parts.append(chunk)
            if not message.get("more_body", False):
                break
        return b"".join(parts)


def _check_body(body: bytes, content_type: str, limits: JSONLimits) -> None:
    if not body:
        return
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError as error:
        raise InvalidUnicodeError(f"the request body is not UTF-8 (byte {error.start})") from None
    if content_type.strip() and "json" not in content_type.lower():
        return
    parsed = _parse_json(text, limits)
    if parsed is _NOT_JSON:
        return  # the route's validation answers 422 with where the JSON breaks
    try:
        json.dumps(parsed, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:
        raise InvalidUnicodeError("the JSON body holds a lone surrogate escape (e.g. \"\\ud800\"): "
                                  "not valid Unicode") from None


_NOT_JSON = object()


def _parse_json(text: str, limits: JSONLimits) -> Any:
    """The JSON value of ``text`` within ``limits`` (``_NOT_JSON`` when it does not parse); raises
    JSONTooDeepError or JSONNumberTooLargeError past them."""

    def bounded(kind: type[int] | type[float]) -> Any:
        def parse(number: str) -> int | float:
            if len(number) > limits.max_number_chars:
                raise JSONNumberTooLargeError(
                    f"a number in the JSON body is written with {len(number)} characters; the limit is "
                    f"{limits.max_number_chars} (limits.max_json_number_chars)")
            return kind(number)
        return parse

    try:
        parsed = json.loads(text, parse_constant=_reject_constant, parse_int=bounded(int), parse_float=bounded(float))
    except json.JSONDecodeError:
        return _NOT_JSON
    except RecursionError:  # deeper than the parser can go, so deeper than the limit (at most 500)
        raise _too_deep("more levels than the parser can follow", limits) from None
    depth = json_depth(parsed)
    if depth > limits.max_depth:
        raise _too_deep(f"{depth} levels deep", limits)
    return parsed


def _too_deep(found: str, limits: JSONLimits) -> JSONTooDeepError:
    return JSONTooDeepError(f"the JSON body nests objects and arrays {found}; the limit is {limits.max_depth} "
                            "levels (limits.max_json_depth)")


def json_depth(value: Any) -> int:
    """How deep ``value`` nests dicts and lists (a scalar is 0, ``{}`` and ``[]`` are 1); without recursion."""
    deepest = 0
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, level = stack.pop()
        if isinstance(item, dict):
            children: Any = item.values()
        elif isinstance(item, list):
            children = item
        else:
            continue
        deepest = max(deepest, level)
        stack.extend((child, level + 1) for child in children if isinstance(child, (dict, list)))
    return deepest


def _reject_constant(name: str) -> Any:
    raise InvalidNumberError(f"{name} is not a valid JSON number: numbers must be finite")


def replay_body(body: bytes, receive: Receive) -> Receive:
    """A receive that yields ``body`` once, then whatever the client sends next (a disconnect)."""
    sent = False

    async def replay() -> Message:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return replay
