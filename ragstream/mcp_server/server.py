"""The MCP server over one index: tools, resources and the prompt, on the MCP SDK's low-level ``Server``.

Every request first asks the transport who it acts as (:class:`Host.identify`): over stdio the local
user, over HTTP the API key's user. Tool failures come back as tool errors (``isError``) whose text starts
with ragstream's error code and whose structured content is ``{"error": {"code", "type", "message"}}``;
nothing a client sends can stop the server.
"""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import anyio.to_thread
import mcp_types as types
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server
from mcp.shared.exceptions import MCPError
from pydantic import BaseModel, ValidationError

from ragstream.api_runtime import request_id_scope
from ragstream.errors import DocumentNotFoundError, InvalidQueryError, PermissionDeniedError, RagstreamError
from ragstream.mcp_server import render
from ragstream.mcp_server.errors import ChunkNotFoundError, InvalidArgumentsError, ResourceNotFoundError, UnknownToolError
from ragstream.mcp_server.prompt import PROMPT, answer_prompt
from ragstream.mcp_server.schemas import (
    AskArguments,
    AskResult,
    DeleteArguments,
    DeleteResult,
    DocumentList,
    IngestArguments,
    IngestResult,
    ListDocumentsArguments,
    RateAnswerArguments,
    RateAnswerResult,
    ReadArguments,
    ReadResult,
    SearchArguments,
    SearchResult,
)
from ragstream.mcp_server.tools import CHUNK_URI, DOCUMENT_URI, Principal, Tools, admin_refusal
from ragstream.models import Scope

logger = logging.getLogger("ragstream.mcp")

SERVER_NAME = "ragstream"
INSTRUCTIONS = (
    "ragstream searches and answers from the user's own indexed documents. Use `ask` for a cited answer and "
    "`search` for passages; ask one stand-alone question per call, with pronouns and references resolved from the "
    "conversation, and split compound questions into several calls. Keep the [n] citations when you quote an "
    "answer. `read` shows a passage in its document; `list_documents` shows what is indexed.")
RESOURCE_NOT_FOUND = -32002
"""The MCP specification's JSON-RPC error code for a resource that does not exist."""
NOT_FOUND_ERRORS = (DocumentNotFoundError, ChunkNotFoundError, ResourceNotFoundError)
CLIENT_ERRORS = (InvalidQueryError, PermissionDeniedError)
"""Errors of a non-tool request the client caused (JSON-RPC invalid params); any other is an internal error."""
_DOCUMENT = re.compile(r"^ragstream://documents/(?P<document_id>[^/]+)(?:/chunks/(?P<chunk_id>[^/]+))?$")
Identify = Callable[[ServerRequestContext[Any, Any]], Principal]
RequestId = Callable[[ServerRequestContext[Any, Any]], str]


def _stdio_request_id(ctx: ServerRequestContext[Any, Any]) -> str:
    return f"mcp-{ctx.request_id}"


@dataclass(frozen=True)
class Host:
    """What the transport around the server decides: who a request acts as, and its id in the logs."""

    identify: Identify
    request_id: RequestId = _stdio_request_id


@dataclass(frozen=True)
class ToolSpec:
    """One tool: its arguments, result, readable text and whether only admins get it."""

    name: str
    title: str
    description: str
    arguments: type[BaseModel]
    result: type[BaseModel]
    render: Callable[[Any], str]
    annotations: types.ToolAnnotations
    admin: bool = False
    input_schema: dict[str, Any] = field(init=False)
    output_schema: dict[str, Any] = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "input_schema", self.arguments.model_json_schema())
        object.__setattr__(self, "output_schema", self.result.model_json_schema())

    def tool(self) -> types.Tool:
        """The tool as ``tools/list`` shows it."""
        return types.Tool(name=self.name, title=self.title, description=self.description, input_schema=self.input_schema,
                          output_schema=self.output_schema, annotations=self.annotations)


QUERY_ADVICE = ("Query well: one stand-alone query per call about one thing, with pronouns and references resolved "
                "from the conversation (\"httpx read timeout\", not \"how do I set it?\"); use the words the documents "
                "would use; for several sub-questions make several calls.")
READ_ONLY = types.ToolAnnotations(read_only_hint=True, destructive_hint=False, idempotent_hint=True, open_world_hint=False)
TOOLS = (
    ToolSpec("search", "Search my documents",
             "Search the user's indexed documents (hybrid keyword and meaning search) and return the best passages, "
             f"each with its text, source, section path, page, score, document_id and chunk_id. {QUERY_ADVICE} "
             "Call read with a passage's document_id and chunk_id to see its surroundings.",
             SearchArguments, SearchResult, render.search_text, READ_ONLY),
    ToolSpec("ask", "Ask my documents",
             "Answer a question from the user's indexed documents: a short answer whose sentences cite passages as "
             "[n], the sources, each sentence's support by what it cites (supported, unsupported or uncertain, with "
             "the reason and the supporting passage; an unsupported sentence is marked ⚠ in the text), and a "
             "confidence (High, Medium, Low with the reason). Ask ONE stand-alone question per "
             "call with every pronoun and reference resolved (\"How do I set a read timeout in httpx?\", not \"and for "
             "reads?\"); split compound questions into separate calls. Pass conversation_id from an earlier answer to "
             "continue that conversation. Keep the [n] citations when you quote the answer; Low confidence means the "
             "documents may not cover the question.",
             AskArguments, AskResult, render.ask_text,
             types.ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=False,
                                   open_world_hint=False)),
    ToolSpec("rate_answer", "Rate an answer",
             "Say whether an answer of ask helped: its message_id, the rating helpful or not_helpful, and an optional "
             "comment (what was good or wrong). Rate when the user says so or clearly shows it; a later rating of "
             "the same answer replaces the earlier one. Only answers given to the same user can be rated.",
             RateAnswerArguments, RateAnswerResult, render.rate_text,
             types.ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=True,
                                   open_world_hint=False)),
    ToolSpec("list_documents", "List my documents",
             "List the indexed documents the user can see (theirs and the shared ones), a page at a time: title, "
             "source, chunks, ids and resource URI. Filter by a part of the title or source with query.",
             ListDocumentsArguments, DocumentList, render.list_text, READ_ONLY),
    ToolSpec("read", "Read a document",
             "Read a document's text chunk by chunk (offset, limit), or one chunk (chunk_id from search) with its "
             "neighbouring chunks, each with its section path and page.",
             ReadArguments, ReadResult, render.read_text, READ_ONLY),
    ToolSpec("ingest", "Add documents",
             "Admins: add documents to the index, given inline (name and text: Markdown, plain text, reST, HTML) or, "
             "over stdio, as paths of files and folders (PDF, Word, PowerPoint, Excel, CSV, OpenDocument, EPUB too). The "
             "same name replaces the earlier document.",
             IngestArguments, IngestResult, render.ingest_text,
             types.ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=True,
                                   open_world_hint=False), admin=True),
    ToolSpec("delete", "Delete a document",
             "Admins: delete a document and every chunk of it from the index.",
             DeleteArguments, DeleteResult, render.delete_text,
             types.ToolAnnotations(read_only_hint=False, destructive_hint=True, idempotent_hint=True,
                                   open_world_hint=False), admin=True),
)


def build_server(tools: Tools, host: Host) -> Server[Any]:
    """The MCP server offering ``tools`` (over ``tools.rs``) to whoever ``host`` says a request is."""
    from ragstream import __version__

    handlers = _Handlers(tools, host)
    return Server(SERVER_NAME, version=__version__, title="ragstream", instructions=INSTRUCTIONS,
                  on_list_tools=handlers.list_tools, on_call_tool=handlers.call_tool,
                  on_list_resources=handlers.list_resources, on_list_resource_templates=handlers.list_templates,
                  on_read_resource=handlers.read_resource, on_list_prompts=handlers.list_prompts,
                  on_get_prompt=handlers.get_prompt)


class _Handlers:
    """The request handlers; each resolves the caller, runs the facade on a worker thread and maps errors."""

    def __init__(self, tools: Tools, host: Host) -> None:
        self.tools = tools
        self.host = host
        self.specs = {spec.name: spec for spec in TOOLS}
        self.runs: dict[str, Callable[[Any, Principal], Any]] = {
            "search": tools.search, "list_documents": tools.list_documents, "read": tools.read,
            "ingest": tools.ingest, "delete": tools.delete, "rate_answer": tools.rate_answer}

    # -- tools -----------------------------------------------------------------------------------

    async def list_tools(self, ctx: ServerRequestContext[Any, Any],
                         params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
        who = self._who(ctx)
        return types.ListToolsResult(tools=[spec.tool() for spec in TOOLS if who.admin or not spec.admin],
                                     cache_scope="private")

    async def call_tool(self, ctx: ServerRequestContext[Any, Any],
                        params: types.CallToolRequestParams) -> types.CallToolResult:
        started = time.perf_counter()
        with request_id_scope(self.host.request_id(ctx)):
            try:
                result = await self._call(ctx, params)
            except RagstreamError as error:
                logger.info("tool %s failed: %s: %s", params.name, error.code, error.message)
                return _tool_error(error.to_dict())
            except Exception:
                logger.exception("tool %s raised an unexpected error", params.name)
                return _tool_error({"code": "internal_error", "type": "InternalError",
                                    "message": "internal server error; see the server log"})
            logger.info("tool %s answered in %.1f ms", params.name, (time.perf_counter() - started) * 1000)
            return result

    async def _call(self, ctx: ServerRequestContext[Any, Any], params: types.CallToolRequestParams) -> types.CallToolResult:
        who = self.host.identify(ctx)
        spec = self.specs.get(params.name)
        if spec is None:
            raise UnknownToolError(f"no tool {params.name!r}; the tools are "
                                   f"{', '.join(s.name for s in TOOLS if who.admin or not s.admin)}")
        if spec.admin and not who.admin:
            raise admin_refusal(spec.name, who)
        args = _arguments(spec, params.arguments or {})
        if spec.name == "ask":
            result: BaseModel = await self.tools.ask(args, who, _progress(ctx))  # type: ignore[arg-type]
        else:
            result = await anyio.to_thread.run_sync(self.runs[spec.name], args, who)
        return types.CallToolResult(content=[types.TextContent(type="text", text=spec.render(result))],
                                    structured_content=result.model_dump(mode="json"))

    # -- resources -------------------------------------------------------------------------------

    async def list_resources(self, ctx: ServerRequestContext[Any, Any],
                             params: types.PaginatedRequestParams | None) -> types.ListResourcesResult:
        who = self._who(ctx)
        offset = _cursor(params.cursor if params else None)
        page = await anyio.to_thread.run_sync(
            lambda: self.tools.rs.document_page(offset, self.tools.config.page_size, scope=Scope(who.user)))
        following = offset + len(page.records)
        resources = [types.Resource(uri=DOCUMENT_URI.format(document_id=record.document_id), name=record.title,
                                    title=record.title, mime_type="text/markdown",
                                    description=f"{record.source} ({record.chunk_count} chunks)")
                     for record in page.records]
        return types.ListResourcesResult(resources=resources, cache_scope="private",
                                         next_cursor=str(following) if following < page.total else None)

    async def list_templates(self, ctx: ServerRequestContext[Any, Any],
                             params: types.PaginatedRequestParams | None) -> types.ListResourceTemplatesResult:
        templates = [
            types.ResourceTemplate(uri_template=DOCUMENT_URI, name="document", title="A document",
                                   description="A document's whole text, as extracted at ingest.",
                                   mime_type="text/markdown"),
            types.ResourceTemplate(uri_template=CHUNK_URI, name="chunk", title="A chunk of a document",
                                   description="One chunk (a search passage) with its section path and page.",
                                   mime_type="text/markdown")]
        return types.ListResourceTemplatesResult(resource_templates=templates)

    async def read_resource(self, ctx: ServerRequestContext[Any, Any],
                            params: types.ReadResourceRequestParams) -> types.ReadResourceResult:
        who = self._who(ctx)
        match = _DOCUMENT.match(str(params.uri))
        try:
            if match is None:
                raise ResourceNotFoundError(f"no resource {params.uri!r}: the URIs are {DOCUMENT_URI} and {CHUNK_URI}")
            text = await anyio.to_thread.run_sync(self._resource_text, match["document_id"], match["chunk_id"], who)
        except RagstreamError as error:
            raise _protocol_error(error) from None
        return types.ReadResourceResult(contents=[types.TextResourceContents(uri=params.uri, mime_type="text/markdown",
                                                                             text=text)])

    def _resource_text(self, document_id: str, chunk_id: str | None, who: Principal) -> str:
        if chunk_id is None:
            record, text = self.tools.rs.document_text(document_id, user=who.user, admin=who.admin)
            return f"# {record.title}\n\nsource: {record.source}\n\n{text}"
        found = self.tools.read(ReadArguments(document_id=document_id, chunk_id=chunk_id, neighbours=0), who)
        chunk = found.chunks[0]
        page = f", page {chunk.page}" if chunk.page is not None else ""
        where = " > ".join(part for part in (found.document.title, chunk.section_path) if part)
        return f"# {where}\n\nsource: {found.document.source}{page}\n\n{chunk.text}"

    # -- the prompt ------------------------------------------------------------------------------

    async def list_prompts(self, ctx: ServerRequestContext[Any, Any],
                           params: types.PaginatedRequestParams | None) -> types.ListPromptsResult:
        return types.ListPromptsResult(prompts=[PROMPT])

    async def get_prompt(self, ctx: ServerRequestContext[Any, Any],
                         params: types.GetPromptRequestParams) -> types.GetPromptResult:
        who = self._who(ctx)
        try:
            if params.name != PROMPT.name:
                raise ResourceNotFoundError(f"no prompt {params.name!r}; the prompt is {PROMPT.name!r}")
            question = (params.arguments or {}).get("question", "").strip()
            if not question:
                raise InvalidArgumentsError("the prompt needs its question argument")
            return await anyio.to_thread.run_sync(answer_prompt, self.tools, question, who)
        except RagstreamError as error:
            raise _protocol_error(error) from None

    def _who(self, ctx: ServerRequestContext[Any, Any]) -> Principal:
        try:
            return self.host.identify(ctx)
        except RagstreamError as error:
            raise _protocol_error(error) from None


def _arguments(spec: ToolSpec, raw: dict[str, Any]) -> BaseModel:
    """``raw`` checked against the tool's arguments; InvalidArgumentsError saying what is wrong."""
    try:
        return spec.arguments.model_validate(raw)
    except ValidationError as error:
        problems = []
        for item in error.errors(include_url=False):
            where = ".".join(str(part) for part in item["loc"]) or "arguments"
            problems.append(f"unknown argument {where!r}" if item["type"] == "extra_forbidden" else f"{where}: {item['msg']}")
        known = ", ".join(spec.input_schema.get("properties", {}))
        raise InvalidArgumentsError(f"{spec.name}: {'; '.join(problems)} (arguments: {known})") from None


def _progress(ctx: ServerRequestContext[Any, Any]) -> Callable[[str], Awaitable[None]]:
    """Progress notifications for this request (none unless the client asked with a progress token)."""
    step = 0

    async def report(message: str) -> None:
        nonlocal step
        step += 1
        await ctx.session.report_progress(step, None, message)

    return report


def _cursor(cursor: str | None) -> int:
    if cursor is None:
        return 0
    if not cursor.isdigit():
        raise _protocol_error(InvalidQueryError(f"invalid cursor {cursor!r}"))
    return int(cursor)


def _tool_error(error: dict[str, str]) -> types.CallToolResult:
    return types.CallToolResult(is_error=True, content=[types.TextContent(type="text",
                                                                          text=f"{error['code']}: {error['message']}")],
                                structured_content={"error": error})


def _protocol_error(error: RagstreamError) -> MCPError:
    """A ragstream error as a JSON-RPC error of a non-tool request, its code and type in ``data``."""
    if isinstance(error, NOT_FOUND_ERRORS):
        code = RESOURCE_NOT_FOUND
    elif isinstance(error, CLIENT_ERRORS):
        code = types.INVALID_PARAMS
    else:
        code = types.INTERNAL_ERROR
    return MCPError(code=code, message=f"{error.code}: {error.message}", data=error.to_dict())
