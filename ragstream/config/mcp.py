"""``mcp``: the MCP server (docs/mcp.md)."""

from __future__ import annotations

from pydantic import Field

from ragstream.config.base import ConfigSection


class McpConfig(ConfigSection):
    """The MCP server (docs/mcp.md): ``ragstream mcp`` over stdio, and ``/mcp`` in ``ragstream serve``."""

    http_enabled: bool = Field(
        True, description="`ragstream serve` serves MCP (streamable HTTP) at http_path, behind the HTTP API's keys and users.")
    http_path: str = Field("/mcp", pattern=r"^/[A-Za-z0-9._~/-]*$", description="Path of the MCP endpoint in `ragstream serve`.")
    http_stateless: bool = Field(
        True, description="Every MCP HTTP request stands alone (no server-side session): works behind "
        "`serve --workers N`; progress still streams in the answer to each request.")
    stdio_admin_tools: bool = Field(
        False, description="`ragstream mcp` (stdio) offers the ingest and delete tools too; over HTTP only admin keys get "
        "them. Env RAGSTREAM_MCP__STDIO_ADMIN_TOOLS=true, or `ragstream mcp --admin-tools`.")
    default_top_k: int = Field(8, ge=1, description="Passages the search tool returns when the model gives no top_k.")
    max_top_k: int = Field(50, ge=1, description="Largest top_k the search tool accepts.")
    page_size: int = Field(
        25, ge=1, description="Documents per page of list_documents and resources/list, and chunks per read of a document.")
    max_page_size: int = Field(200, ge=1, description="Largest limit list_documents and read accept.")
    max_neighbours: int = Field(5, ge=0, description="Most chunks read returns on each side of a chunk it is asked for.")
    max_filter_chars: int = Field(200, ge=1, description="Longest title/source filter list_documents accepts, in characters.")
    max_ingest_documents: int = Field(20, ge=1, description="Most inline documents (and paths) one ingest call takes.")
    progress_every_tokens: int = Field(
        16, ge=1, description="While an answer streams, ask sends a progress notification every this many tokens.")
    prompt_passages: int = Field(
        5, ge=0, description="Passages the 'answer from my documents' prompt quotes for its question (0: none, the "
        "model searches itself).")
