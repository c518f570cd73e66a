"""MCP over streamable HTTP at ``mcp.http_path`` (``/mcp``) of ``ragstream serve`` (docs/mcp.md).

It sits behind the same middleware as every route: the API key (401 without one when keys are on),
the request guard (body size, Unicode) and the request id. Each MCP request acts as the key's user
(``X-User-ID`` as for the HTTP API), so it sees that user's documents and the shared ones only. The
endpoint is stateless (no server-side session): it works behind ``serve --workers N``, and a client
that disconnects mid-answer cancels the tool call, which stops the LLM call. Without the MCP SDK
the path answers ``503 config_error`` naming the extra to install.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from http import HTTPStatus
from typing import TYPE_CHECKING, Any

from fastapi import FastAPI
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

from ragstream.api import Ragstream
from ragstream.api_writes import public_record, stored_upload
from ragstream.errors import ConfigError
from ragstream.mcp_server import SDK_MISSING, sdk_available
from ragstream.models import DocumentRecord
from ragstream.server.errors import AuthenticationError, error_response
from ragstream.server.guard import replay_body
from ragstream.server.security import REQUEST_ID_KEY, is_loopback
from ragstream.server.state import ServerState
from ragstream.server.users import get_caller

if TYPE_CHECKING:
    from mcp.server.context import ServerRequestContext
    from mcp.server.transport_security import TransportSecuritySettings

    from ragstream.mcp_server.jsonrpc import MessageLimits
    from ragstream.mcp_server.tools import Principal

logger = logging.getLogger("ragstream.server")

MCP_METHODS = ["GET", "POST", "DELETE"]
LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "[::1]")
SDK_TRANSPORT_LOGGER = "mcp.server.streamable_http"


def mount_mcp(app: FastAPI, state: ServerState) -> None:
    """Serve MCP at ``mcp.http_path`` (unless ``mcp.http_enabled`` is off), its session manager running for the
    app's lifetime."""
    settings = state.rs.config.mcp
    if not settings.http_enabled:
        return
    if not sdk_available():
        logger.warning("%s is not served: %s", settings.http_path, SDK_MISSING)
        app.router.add_route(settings.http_path, _sdk_missing, methods=MCP_METHODS, include_in_schema=False)
        return
    from mcp.server.streamable_http_manager import StreamableHTTPASGIApp, StreamableHTTPSessionManager

    from ragstream.mcp_server.jsonrpc import MessageLimits
    from ragstream.mcp_server.server import Host, build_server
    from ragstream.mcp_server.tools import Tools

    logging.getLogger(SDK_TRANSPORT_LOGGER).setLevel(logging.WARNING)  # stateless: one INFO line per request
    tools = Tools(state.rs, settings, present=public_record, delete=_deleter(state))
    server = build_server(tools, Host(identify=_identifier(state), request_id=_request_id))
    manager = StreamableHTTPSessionManager(app=server, stateless=True, security_settings=_security(state),
                                           max_request_body_size=state.rs.config.limits.max_json_body_bytes)
    limits = state.rs.config.limits
    screened = _Screened(StreamableHTTPASGIApp(manager), MessageLimits(limits.max_json_depth,
                                                                       limits.max_json_number_chars))
    app.router.routes.append(Route(settings.http_path, screened, methods=MCP_METHODS, include_in_schema=False))
    outer = app.router.lifespan_context

    @asynccontextmanager
    async def lifespan(running: Any) -> AsyncIterator[Any]:
        async with outer(running) as inner_state, manager.run():
            yield inner_state

    app.router.lifespan_context = lifespan


class _Screened:
    """The SDK's endpoint behind :func:`ragstream.mcp_server.jsonrpc.screen`: a POSTed message the SDK would refuse
    (it answers such with a null id) or that passes the JSON bounds gets its JSON-RPC error, with the request's id, as
    a 400; a batch gets an array of them, one per request in it."""

    def __init__(self, app: ASGIApp, limits: MessageLimits) -> None:
        self._app = app
        self._limits = limits

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        from ragstream.mcp_server.jsonrpc import screen

        if scope["type"] != "http" or scope["method"] != "POST":
            await self._app(scope, receive, send)
            return
        body = await _read_body(receive)  # bounded by the request guard (limits.max_json_body_bytes)
        screened = screen(body, self._limits)
        if screened.passes:
            await self._app(scope, replay_body(body, receive), send)
            return
        if not screened.errors:  # a notification or a response: accepted, nothing to answer
            response: Response = Response(status_code=HTTPStatus.ACCEPTED)
        else:
            content = list(screened.errors) if screened.batch else screened.errors[0]
            response = JSONResponse(content, status_code=HTTPStatus.BAD_REQUEST)
        await response(scope, receive, send)


async def _read_body(receive: Receive) -> bytes:
    parts: list[bytes] = []
    while True:
        message = await receive()
        if message["type"] != "http.request":
            break
        parts.append(message.get("body", b""))
        if not message.get("more_body", False):
            break
    return b"".join(parts)


async def _sdk_missing(request: Request) -> Response:
    return error_response(ConfigError(SDK_MISSING))


def _identifier(state: ServerState) -> Callable[[ServerRequestContext[Any, Any]], Principal]:
    from ragstream.mcp_server.tools import Principal

    def identify(ctx: ServerRequestContext[Any, Any]) -> Principal:
        """The key's user (``X-User-ID`` as for every route), never a local one: paths are refused over HTTP."""
        request = ctx.request
        if not isinstance(request, Request):
            raise AuthenticationError("an MCP request over HTTP carries no HTTP request")
        caller = get_caller(request, state)
        return Principal(user=caller.user, admin=caller.admin, local=False)

    return identify


def _request_id(ctx: ServerRequestContext[Any, Any]) -> str:
    request = ctx.request
    found = request.scope.get("state", {}).get(REQUEST_ID_KEY) if isinstance(request, Request) else None
    return found or f"mcp-{ctx.request_id}"


def _deleter(state: ServerState) -> Callable[[Ragstream, str, Principal], DocumentRecord]:
    def delete(rs: Ragstream, document_id: str, who: Principal) -> DocumentRecord:
        """As ``DELETE /api/documents/{id}``: under the document's lock, and its stored upload goes too."""
        with state.documents.hold(document_id):
            record = rs.delete(document_id, user=who.user, allow_shared=who.admin, admin=who.admin)
        stored = stored_upload(record)
        if stored is not None:
            state.uploads.remove(stored)
        return record

    return delete


def _security(state: ServerState) -> TransportSecuritySettings | None:
    """On loopback, the SDK's DNS-rebinding guard (Host and Origin must be loopback or a CORS origin); elsewhere the
    API key (required off loopback) guards the endpoint."""
    from mcp.server.transport_security import TransportSecuritySettings

    if not is_loopback(state.config.host):
        return None
    return TransportSecuritySettings(
        enable_dns_rebinding_protection=True, allowed_hosts=[f"{host}:*" for host in LOOPBACK_HOSTS],
        allowed_origins=[*(f"http://{host}:*" for host in LOOPBACK_HOSTS), *state.config.cors_origins])
