"""``ragstream mcp``: the MCP server over stdin/stdout for desktop assistants and editors.

stdout carries only MCP messages: the SDK's stdio transport takes the file descriptor for itself and
points fd 1 at stderr, and Python-level prints go to stderr while it serves; logs go to stderr. stdin is
read here, from a private copy of fd 0 (fd 0 itself then reads the null device, as the SDK does), so that
each line passes :func:`ragstream.mcp_server.jsonrpc.screen` first: a request the SDK would drop gets its
JSON-RPC error instead of no answer. The local user sees every document (as the CLI does); ``ingest`` and
``delete`` are offered only when ``mcp.stdio_admin_tools`` (or ``--admin-tools``) is on, and may then name
local files and folders.
"""

from __future__ import annotations

import contextlib
import io
import logging
import os
import sys
from collections.abc import AsyncIterable, AsyncIterator, Iterator
from typing import TYPE_CHECKING, Any, BinaryIO, cast

import anyio

from ragstream.api_runtime import configure_logging
from ragstream.mcp_server import require_sdk

if TYPE_CHECKING:
    from ragstream.api import Ragstream
    from ragstream.mcp_server.jsonrpc import MessageLimits

logger = logging.getLogger("ragstream.mcp")


def run_stdio(rs: Ragstream, *, admin_tools: bool) -> None:
    """Serve ``rs`` over stdio until the client closes stdin (or the process is stopped)."""
    require_sdk()
    from mcp.server.stdio import stdio_server

    from ragstream.mcp_server.jsonrpc import MessageLimits
    from ragstream.mcp_server.server import Host, build_server
    from ragstream.mcp_server.tools import Principal, Tools

    configure_logging(rs.config.server.log_level)
    local = Principal(user=None, admin=admin_tools, local=True)
    server = build_server(Tools(rs, rs.config.mcp), Host(identify=lambda ctx: local))
    limits = MessageLimits(rs.config.limits.max_json_depth, rs.config.limits.max_json_number_chars)

    async def serve() -> None:
        with _claimed_stdin() as wire:
            lines = ScreenedLines(anyio.wrap_file(io.TextIOWrapper(wire, encoding="utf-8", errors="replace")), limits)
            async with stdio_server(stdin=cast(Any, lines)) as (read, write):
                lines.answer_with(write)
                with contextlib.redirect_stdout(sys.stderr):  # after the transport took fd 1: a stray print is a log line
                    await server.run(read, write, server.create_initialization_options())

    sys.stdout.flush()
    anyio.run(serve)


class ScreenedLines:
    """The lines of stdin that the SDK accepts; every other line's JSON-RPC errors are written back at once."""

    def __init__(self, source: AsyncIterable[str], limits: MessageLimits) -> None:
        self._source = source
        self._limits = limits
        self._write: Any = None
        self._ready = anyio.Event()

    def answer_with(self, write: Any) -> None:
        """Send the errors on ``write`` (the SDK's stream of outgoing messages)."""
        self._write = write
        self._ready.set()

    async def __aiter__(self) -> AsyncIterator[str]:
        from mcp.shared.message import SessionMessage

        from ragstream.mcp_server.jsonrpc import screen, sdk_errors

        await self._ready.wait()
        async for line in self._source:
            screened = screen(line, self._limits)
            if screened.passes:
                yield line
                continue
            for error in sdk_errors(screened):
                logger.info("answered a message the SDK refuses with JSON-RPC error %d (%s)", error.error.code,
                            error.error.message)
                await self._write.send(SessionMessage(error))


@contextlib.contextmanager
def _claimed_stdin() -> Iterator[BinaryIO]:
    """A private copy of fd 0 to read the client from, fd 0 reading the null device meanwhile (a child process or
    a stray ``input()`` then reads nothing); fd 0 points at the client again at the end."""
    try:
        private = os.dup(0)
    except OSError:  # no fd 0 to claim (an embedding host): read sys.stdin as it is
        yield sys.stdin.buffer
        return
    null = os.open(os.devnull, os.O_RDONLY)
    try:
        os.dup2(null, 0)
    finally:
        os.close(null)
    try:
        yield os.fdopen(private, "rb", closefd=False)
    finally:  # the copy stays open: a reader thread may still wait on it (the SDK keeps its own the same way)
        os.dup2(private, 0)
