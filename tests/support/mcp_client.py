"""The MCP SDK's own client against ragstream, for the tests (not a test module).

``stdio_session`` starts a real ``ragstream mcp`` subprocess (on the hash embedder unless told
otherwise); ``http_session`` talks streamable HTTP to a running ``ragstream serve``. ``connected``
drives either from synchronous tests through an anyio blocking portal: :class:`Mcp` wraps the
session's calls.
"""

from __future__ import annotations

import sys
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager, contextmanager
from pathlib import Path
from typing import Any, TextIO

import httpx2
import mcp_types as types
from anyio.from_thread import BlockingPortal, start_blocking_portal
from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client

from support.server_process import FAST_SETTINGS, TESTS_DIR, server_env

CLI = "from ragstream.cli import app; app()"
HASH_EMBEDDER = (f"import sys; sys.path.insert(0, {str(TESTS_DIR)!r}); from support import hash_embedder; "
                 "hash_embedder.install_as_default(); ")
HTTP_TIMEOUT_SECONDS = 120.0
LEAVE_WAIT_SECONDS = 60.0
"""How long a test waits for the server to notice that a client left (the LLM stream closed, a log line)."""


@asynccontextmanager
async def stdio_session(data_dir: Path, *, errlog: TextIO, args: tuple[str, ...] = (), before: str = "",
                        hash_embedder: bool = True, **settings: str) -> AsyncIterator[ClientSession]:
    """``ragstream mcp ARGS`` on ``data_dir`` with ``RAGSTREAM_*`` ``settings``, its stderr in ``errlog``;
    ``before`` is Python run in the server process first (after the hash embedder is installed)."""
    code = (HASH_EMBEDDER if hash_embedder else "") + before + CLI
    env = server_env(data_dir, **({**FAST_SETTINGS, **settings} if hash_embedder else settings))
    params = StdioServerParameters(command=sys.executable, args=["-c", code, "mcp", *args], env=env)
    async with stdio_client(params, errlog=errlog) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        yield session


@asynccontextmanager
async def http_session(url: str, key: str | None = None, **headers: str) -> AsyncIterator[ClientSession]:
    """A session with ``ragstream serve`` at ``url`` (its ``/mcp``), sending ``key`` as a bearer token."""
    sent = {**headers, **({"Authorization": f"Bearer {key}"} if key else {})}
    async with (httpx2.AsyncClient(headers=sent, timeout=HTTP_TIMEOUT_SECONDS) as http,
                streamable_http_client(f"{url}/mcp", http_client=http) as (read, write),
                ClientSession(read, write) as session):
        await session.initialize()
        yield session


class Mcp:
    """Blocking calls on an MCP client session."""

    def __init__(self, portal: BlockingPortal, session: ClientSession) -> None:
        self.portal = portal
        self.session = session

    def tools(self) -> dict[str, types.Tool]:
        return {tool.name: tool for tool in self.portal.call(self.session.list_tools).tools}

    def call(self, name: str, arguments: dict[str, Any], progress: list[str] | None = None) -> types.CallToolResult:
        async def record(value: float, total: float | None, message: str | None) -> None:
            assert progress is not None
            progress.append(message or "")

        async def run() -> types.CallToolResult:
            return await self.session.call_tool(name, arguments, progress_callback=record if progress is not None else None)

        return self.portal.call(run)

    def ok(self, name: str, arguments: dict[str, Any], progress: list[str] | None = None) -> dict[str, Any]:
        """The structured result of a call that must succeed."""
        result = self.call(name, arguments, progress)
        assert not result.is_error, result.content
        assert result.structured_content is not None
        return result.structured_content

    def error(self, name: str, arguments: dict[str, Any]) -> dict[str, str]:
        """The ``{code, type, message}`` of a call that must fail as a tool error, checked against its text."""
        result = self.call(name, arguments)
        assert result.is_error, result.structured_content
        assert result.structured_content is not None
        error = result.structured_content["error"]
        text = result.content[0]
        assert isinstance(text, types.TextContent) and text.text.startswith(f"{error['code']}: ")
        return error

    def resources(self, cursor: str | None = None) -> types.ListResourcesResult:
        params = types.PaginatedRequestParams(cursor=cursor) if cursor else None
        return self.portal.call(lambda: self.session.list_resources(params=params))

    def read_resource(self, uri: str) -> str:
        contents = self.portal.call(self.session.read_resource, uri).contents
        assert len(contents) == 1 and isinstance(contents[0], types.TextResourceContents)
        return contents[0].text

    def prompt(self, name: str, arguments: dict[str, str]) -> str:
        messages = self.portal.call(self.session.get_prompt, name, arguments).messages
        assert len(messages) == 1 and isinstance(messages[0].content, types.TextContent)
        return messages[0].content.text


def text_of(result: types.CallToolResult) -> str:
    """The readable text of a tool result."""
    assert len(result.content) == 1 and isinstance(result.content[0], types.TextContent)
    return result.content[0].text


@contextmanager
def connected(session: AbstractAsyncContextManager[ClientSession]) -> Iterator[Mcp]:
    """``session`` opened on a portal's event loop, for blocking calls; closed afterwards."""
    with start_blocking_portal() as portal, portal.wrap_async_context_manager(session) as opened:
        yield Mcp(portal, opened)


def wait_for(condition: Any, what: str) -> None:
    """Poll ``condition`` until it holds; fail naming ``what`` after :data:`LEAVE_WAIT_SECONDS`."""
    deadline = time.monotonic() + LEAVE_WAIT_SECONDS
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"waited {LEAVE_WAIT_SECONDS} s for {what}")
        time.sleep(0.05)
