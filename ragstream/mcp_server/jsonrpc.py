"""The JSON-RPC answer to a message the MCP SDK would drop: every request that carries an id gets a response.

The SDK's transports validate each incoming message and, over stdio, only log one that fails: a client that sent a
request with a lone surrogate in a string, ``params`` that are not an object, a number of thousands of digits or
a JSON-RPC batch waited forever. :func:`screen` runs before the SDK on both transports (``ragstream mcp`` over
stdio, ``/mcp`` of ``ragstream serve``) and says what to answer instead: ``-32700`` parse error (the id cannot be
read, so it is null), ``-32600`` invalid request or ``-32602`` invalid params, with the request's id whenever it
can be recovered, and the ragstream error code in ``data``. A batch (not part of current MCP) gets one invalid
request error per element that carries an id. Notifications and a client's responses are never answered, as
JSON-RPC says.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Any

import mcp_types as types
from pydantic import ValidationError

JSONRPC_VERSION = "2.0"


@dataclass(frozen=True)
class MessageLimits:
    """How deep a message may nest (``limits.max_json_depth``) and how long its numbers may be written
    (``limits.max_json_number_chars``), as for the HTTP API's JSON bodies."""

    max_depth: int
    max_number_chars: int


@dataclass(frozen=True)
class Screened:
    """What to do with one incoming message: pass it to the SDK (``passes``), or send ``errors`` (maybe none:
    a bad notification) instead; ``batch``: the message was a JSON-RPC batch (HTTP answers an array)."""

    passes: bool
    errors: tuple[dict[str, Any], ...] = ()
    batch: bool = False


PASS = Screened(passes=True)


class _TooLong:
    """A number written with more characters than the limit, kept as a marker where it stood."""


class _NotFinite:
    """``NaN`` or ``Infinity``, which JSON does not have."""


def screen(raw: str | bytes, limits: MessageLimits) -> Screened:
    """What to do with the incoming message ``raw``: :data:`PASS` when it is within ``limits`` and the SDK
    accepts it, else the JSON-RPC errors that answer it."""
    if isinstance(raw, bytes):
        try:
            raw = raw.decode("utf-8")
        except UnicodeDecodeError as error:
            return _single(None, types.PARSE_ERROR, "invalid_unicode",
                           f"Parse error: the message is not UTF-8 (byte {error.start})")
    if not raw.strip():
        return Screened(passes=False)  # a blank line: nothing was asked
    try:
        parsed = json.loads(raw, parse_int=_number(limits, int), parse_float=_number(limits, float),
                            parse_constant=lambda _: _NotFinite())
    except (ValueError, RecursionError) as error:  # JSONDecodeError is a ValueError
        detail = "nested deeper than the parser can follow" if isinstance(error, RecursionError) else str(error)
        return _single(None, types.PARSE_ERROR, "parse_error", f"Parse error: {detail}")
    if isinstance(parsed, list):
        return _batch(parsed)
    if isinstance(parsed, dict) and _problem(parsed, limits) is None and not _bad_id(parsed):
        try:  # exactly as the SDK's transports read it
            types.jsonrpc_message_adapter.validate_json(raw, by_name=False)
        except ValidationError:
            pass
        else:
            return PASS
    return Screened(passes=False, errors=tuple(_answer(parsed, limits)))


def _number(limits: MessageLimits, kind: type[int] | type[float]) -> Any:
    def parse(text: str) -> Any:
        if len(text) > limits.max_number_chars:
            return _TooLong()
        value = kind(text)
        return _NotFinite() if isinstance(value, float) and not math.isfinite(value) else value  # 1e400
    return parse


def _batch(items: list[Any]) -> Screened:
    if not items:
        return _single(None, types.INVALID_REQUEST, "invalid_request", "Invalid Request: an empty batch")
    errors = []
    for item in items:
        request_id = _request_id(item)
        if request_id is not None:
            errors.append(_error(request_id, types.INVALID_REQUEST, "batch_not_supported",
                                 "Invalid Request: JSON-RPC batches are not part of MCP; send each request as a message "
                                 "of its own"))
    return Screened(passes=False, errors=tuple(errors), batch=True)


def _answer(message: Any, limits: MessageLimits) -> list[dict[str, Any]]:
    """The error answering one message that is out of bounds or that the SDK refuses (none for a notification or a
    client's response)."""
    if not isinstance(message, dict):
        return [_error(None, types.INVALID_REQUEST, "invalid_request", "Invalid Request: a message must be an object")]
    if "id" not in message:
        return []  # a notification: never answered
    request_id = _request_id(message)
    if "method" not in message and ("result" in message or "error" in message):
        return []  # the client's response to a request of ours: never answered
    if request_id is None:
        return [_error(None, types.INVALID_REQUEST, "invalid_request",
                       "Invalid Request: the id must be a string or an integer of at most "
                       f"{limits.max_number_chars} digits")]
    envelope = {key: value for key, value in message.items() if key != "params"}
    problem = _problem(envelope, limits)
    if problem is not None:
        return [_error(request_id, types.INVALID_REQUEST, problem[0], f"Invalid Request: {problem[1]}")]
    if message.get("jsonrpc") != JSONRPC_VERSION or not isinstance(message.get("method"), str):
        return [_error(request_id, types.INVALID_REQUEST, "invalid_request",
                       'Invalid Request: a request needs "jsonrpc": "2.0", an id and a method name')]
    params = message.get("params")
    if params is not None and not isinstance(params, dict):
        return [_error(request_id, types.INVALID_PARAMS, "invalid_params",
                       f"Invalid params: params must be an object, not {_kind(params)}")]
    problem = _problem(params, limits, depth=1)  # params sit one level inside the message
    if problem is not None:
        return [_error(request_id, types.INVALID_PARAMS, problem[0], f"Invalid params: {problem[1]}")]
    return [_error(request_id, types.INVALID_REQUEST, "invalid_request", "Invalid Request: not a valid MCP message")]


def _problem(value: Any, limits: MessageLimits, depth: int = 0) -> tuple[str, str] | None:
    """The first thing in ``value`` no MCP message may hold: (ragstream error code, what), or None. Iterative: a
    deeply nested message cannot overflow the stack here."""
    stack: list[tuple[Any, int]] = [(value, depth)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, (dict, list)) and depth + 1 > limits.max_depth:
            return "json_too_deep", f"the message nests deeper than {limits.max_depth} levels (limits.max_json_depth)"
        if isinstance(item, dict):
            for key, child in item.items():
                stack.extend(((key, depth + 1), (child, depth + 1)))
        elif isinstance(item, list):
            stack.extend((child, depth + 1) for child in item)
        elif isinstance(item, str) and not _valid_unicode(item):
            return "invalid_unicode", "a string holds a lone surrogate (e.g. \"\\ud800\"): not valid Unicode"
        elif isinstance(item, _TooLong):
            return ("json_number_too_large", f"a number is written with more than {limits.max_number_chars} "
                    "characters (limits.max_json_number_chars)")
        elif isinstance(item, _NotFinite):
            return "invalid_number", "NaN, Infinity and numbers too large for a float are not allowed"
    return None


def _valid_unicode(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _request_id(message: Any) -> int | str | None:
    """The message's id when it is one JSON-RPC allows (a string, or an integer that is not a bool), else None."""
    if not isinstance(message, dict):
        return None
    found = message.get("id")
    if isinstance(found, bool) or not isinstance(found, (int, str)):
        return None
    if isinstance(found, str) and not _valid_unicode(found):
        return None
    return found


def _bad_id(message: dict[str, Any]) -> bool:
    """A request whose id JSON-RPC does not allow (``true``, ``null``, ``1.5``, an object): the SDK would take it
    for a notification and never answer."""
    return "method" in message and "id" in message and _request_id(message) is None


def _kind(value: Any) -> str:
    if isinstance(value, list):
        return "an array"
    if isinstance(value, str):
        return "a string"
    return "a boolean" if isinstance(value, bool) else "a number"


def _error(request_id: int | str | None, code: int, reason: str, message: str) -> dict[str, Any]:
    return {"jsonrpc": JSONRPC_VERSION, "id": request_id,
            "error": {"code": code, "message": message, "data": {"code": reason}}}


def _single(request_id: int | str | None, code: int, reason: str, message: str) -> Screened:
    return Screened(passes=False, errors=(_error(request_id, code, reason, message),))


def sdk_errors(screened: Screened) -> list[types.JSONRPCError]:
    """The errors as the SDK's messages (what the stdio transport writes)."""
    return [types.JSONRPCError.model_validate(error) for error in screened.errors]
