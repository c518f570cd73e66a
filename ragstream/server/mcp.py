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
from typing import TYPE_CHECKING, Any

from fastapi import FastAPI
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from ragstream.api import Ragstream
from ragstream.errors import ConfigError
from ragstream.mcp_server import SDK_MISSING, sdk_available
from ragstream.models import DocumentRecord
from ragstream.server.errors import AuthenticationError, error_response
from ragstream.server.intake import public_record, stored_upload
from ragstream.server.security import REQUEST_ID_KEY, is_loopback
from ragstream.server.state import ServerState
from ragstream.server.users import get_caller

if TYPE_CHECKING:
    from mcp.server.context import ServerRequestContext
    from mcp.server.transport_security import TransportSecuritySettings

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

    from ragstream.mcp_server.server import Host, build_server
    from ragstream.mcp_server.tools import Tools

    logging.getLogger(SDK_TRANSPORT_LOGGER).setLevel(logging.WARNING)  # stateless: one INFO line per request
    tools = Tools(state.rs, settings, present=public_record, delete=_deleter(state))
    server = build_server(tools, Host(identify=_identifier(state), request_id=_request_id))
    manager = StreamableHTTPSessionManager(app=server, stateless=True, security_settings=_security(state),
                                           max_request_body_size=state.rs.config.limits.max_json_body_bytes)
    app.router.routes.append(Route(settings.http_path, StreamableHTTPASGIApp(manager), methods=MCP_METHODS,
                                   include_in_schema=False))
    outer = app.router.lifespan_context

    @asynccontextmanager
    async def lifespan(running: Any) -> AsyncIterator[Any]:
        async with outer(running) as inner_state, manager.run():
            yield inner_state

    app.router.lifespan_context = lifespan


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
            record = rs.delete(document_id, user=who.user, allow_shared=who.admin)
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
