"""``ragstream mcp``: the MCP server over stdin/stdout for desktop assistants and editors.

stdout carries only MCP messages: the SDK's stdio transport takes the file descriptor for itself and
points fd 1 at stderr, and Python-level prints go to stderr while it serves; logs go to stderr. The
local user sees every document (as the CLI does); ``ingest`` and ``delete`` are offered only when
``mcp.stdio_admin_tools`` (or ``--admin-tools``) is on, and may then name local files and folders.
"""

from __future__ import annotations

import contextlib
import sys
from typing import TYPE_CHECKING

import anyio

from ragstream.mcp_server import require_sdk
from ragstream.observability import configure_logging

if TYPE_CHECKING:
    from ragstream.api import Ragstream


def run_stdio(rs: Ragstream, *, admin_tools: bool) -> None:
    """Serve ``rs`` over stdio until the client closes stdin (or the process is stopped)."""
    require_sdk()
    from mcp.server.stdio import stdio_server

    from ragstream.mcp_server.server import Host, build_server
    from ragstream.mcp_server.tools import Principal, Tools

    configure_logging(rs.config.server.log_level)
    local = Principal(user=None, admin=admin_tools, local=True)
    server = build_server(Tools(rs, rs.config.mcp), Host(identify=lambda ctx: local))

    async def serve() -> None:
        async with stdio_server() as (read, write):
            with contextlib.redirect_stdout(sys.stderr):  # after the transport took fd 1: a stray print is a log line
                await server.run(read, write, server.create_initialization_options())

    sys.stdout.flush()
    anyio.run(serve)
