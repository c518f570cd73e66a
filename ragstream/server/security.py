"""Binding rules, the API key check and the request id: pure ASGI middleware around every request."""

from __future__ import annotations

import ipaddress
import logging
import re
import time
import uuid

from starlette.datastructures import Headers, MutableHeaders, QueryParams
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from ragstream.api_runtime import metrics, request_id_scope
from ragstream.config import ServerConfig
from ragstream.errors import ConfigError
from ragstream.server.errors import AuthenticationError, error_response, internal_error_response
from ragstream.server.users import CALLER_KEY, KeyRing

logger = logging.getLogger("ragstream.server")

LOOPBACK_NAMES = frozenset({"localhost"})
PUBLIC_PATHS = frozenset({"/healthz", "/"})
"""Reachable without the API key: the health check and the redirect to the UI."""
PUBLIC_PREFIXES = ("/ui/", "/static-offline-docs/")
"""Static files only (the web UI and the docs assets); they hold no data. The UI asks for the key."""
WEBSOCKET_KEY_PARAMETER = "key"
"""The query parameter a WebSocket client (a browser) may carry the API key in."""
WEBSOCKET_POLICY_VIOLATION = 1008
UNMATCHED_ROUTE = "unmatched"
REQUEST_ID_KEY = "ragstream_request_id"
"""Where the request id is left in the ASGI scope's ``state``, for work that runs outside the request's own task
(the MCP endpoint's tool calls)."""
_SAFE_REQUEST_ID = re.compile(r"[A-Za-z0-9._:-]+")


def is_loopback(host: str) -> bool:
    """True for ``localhost`` and loopback addresses (127.0.0.0/8, ::1)."""
    if host.lower() in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def api_key_required(config: ServerConfig, keys: KeyRing) -> bool:
    """The key is required off loopback, everywhere when ``require_api_key`` is set, and everywhere
    when per-user keys exist (multi-user mode)."""
    return config.require_api_key or keys.multi_user or not is_loopback(config.host)


def check_binding(config: ServerConfig) -> KeyRing:
    """The server's keys, checked; refuse to serve without a key where one is required (raises ConfigError)."""
    keys = KeyRing.from_config(config)
    if not api_key_required(config, keys) or keys:
        return keys
    why = "server.require_api_key is set" if is_loopback(config.host) else f"binding {config.host} (not loopback)"
    raise ConfigError(f"{why}: it needs an API key; set server.api_key (env RAGSTREAM_SERVER__API_KEY), "
                      "server.keys or server.keys_file, or bind 127.0.0.1")


def presented_key(headers: Headers) -> str | None:
    """The key of ``Authorization: Bearer KEY`` or ``X-API-Key: KEY``."""
    scheme, _, credentials = headers.get("authorization", "").partition(" ")
    if scheme.lower() == "bearer" and credentials.strip():
        return credentials.strip()
    return headers.get("x-api-key")


class ApiKeyMiddleware:
    """Answers 401 to every request without a known key, except the public paths; otherwise leaves
    the key's :class:`~ragstream.server.users.Caller` in the request state for ``get_caller``."""

    def __init__(self, app: ASGIApp, keys: KeyRing) -> None:
        self.app = app
        self._keys = keys

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket") or _is_public(scope["path"]):
            await self.app(scope, receive, send)
            return
        key = presented_key(Headers(scope=scope))
        if scope["type"] == "websocket":  # browsers cannot set a WebSocket's headers: the key query parameter
            key = key or QueryParams(scope.get("query_string", b"").decode("latin-1")).get(WEBSOCKET_KEY_PARAMETER)
        caller = self._keys.caller(key)
        if caller is not None:
            scope.setdefault("state", {})[CALLER_KEY] = caller
            await self.app(scope, receive, send)
            return
        if scope["type"] == "websocket":  # refused before the handshake: the client sees HTTP 403
            await receive()  # websocket.connect
            await send({"type": "websocket.close", "code": WEBSOCKET_POLICY_VIOLATION})
            return
        response = error_response(AuthenticationError("missing or wrong API key: send Authorization: Bearer KEY "
                                                      "or X-API-Key: KEY"))
        response.headers["WWW-Authenticate"] = "Bearer"
        await response(scope, receive, send)


class RequestContextMiddleware:
    """Gives every request an id (incoming ``X-Request-ID`` or a new one), returns it in the response
    header, logs the request, counts it in the metrics and turns an unhandled error into a JSON 500."""

    def __init__(self, app: ASGIApp, config: ServerConfig) -> None:
        self.app = app
        self._header = config.request_id_header
        self._max_chars = config.max_request_id_chars

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        request_id = self._request_id(Headers(scope=scope))
        scope.setdefault("state", {})[REQUEST_ID_KEY] = request_id
        started = time.perf_counter()
        status = 0

        async def send_with_id(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
                MutableHeaders(scope=message)[self._header] = request_id
            await send(message)

        with request_id_scope(request_id):
            try:
                await self.app(scope, receive, send_with_id)
            except Exception:
                logger.exception("unhandled error in %s %s", scope["method"], scope["path"])
                if status:
                    raise
                await internal_error_response()(scope, receive, send_with_id)
            finally:
                elapsed = time.perf_counter() - started
                route = _route_template(scope)
                metrics.observe_http(scope["method"], route, status, elapsed)
                logger.info("%s %s %s %.1f ms", scope["method"], scope["path"], status, elapsed * 1000)

    def _request_id(self, headers: Headers) -> str:
        incoming = headers.get(self._header, "")
        if 0 < len(incoming) <= self._max_chars and _SAFE_REQUEST_ID.fullmatch(incoming):
            return incoming
        return uuid.uuid4().hex


def _is_public(path: str) -> bool:
    return path in PUBLIC_PATHS or path.startswith(PUBLIC_PREFIXES)


def _route_template(scope: Scope) -> str:
    """The matched route's path template (bounded label values), not the raw path."""
    route = scope.get("route")
    return getattr(route, "path", None) or UNMATCHED_ROUTE
