"""What each MCP tool does, over :class:`ragstream.Ragstream` only: blocking functions (run on a worker
thread), plus ``ask``, which streams the answer and reports progress as it goes.

Nothing here knows the MCP SDK: :mod:`ragstream.mcp_server.server` turns these into tools.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import anyio
import anyio.to_thread

from ragstream.config import McpConfig
from ragstream.errors import (
    DocumentError,
    InvalidQueryError,
    InvalidUnicodeError,
    PermissionDeniedError,
    check_unicode,
)
from ragstream.mcp_server.errors import ChunkNotFoundError, ReportedError, UnknownFilterFieldError
from ragstream.mcp_server.schemas import (
    AskArguments,
    AskResult,
    ChunkText,
    DeleteArguments,
    DeleteResult,
    DocumentInfo,
    DocumentList,
    IngestArguments,
    IngestFailure,
    IngestResult,
    ListDocumentsArguments,
    Passage,
    RateAnswerArguments,
    RateAnswerResult,
    ReadArguments,
    ReadResult,
    SearchArguments,
    SearchResult,
    document_info,
)
from ragstream.models import FILTERABLE_FIELDS, Chunk, DocumentRecord, IngestReport, Scope, Writer, public_metadata

if TYPE_CHECKING:
    from ragstream.api import Ragstream
    from ragstream.api_types import StreamEvent

logger = logging.getLogger("ragstream.mcp")

DOCUMENT_URI = "ragstream://documents/{document_id}"
CHUNK_URI = "ragstream://documents/{document_id}/chunks/{chunk_id}"
INLINE_SOURCE = "mcp://{name}"
COLLECTION_INLINE_SOURCE = "mcp://collection-{collection_id}/{name}"
"""An inline document ingested into a collection: keyed by the collection, as an upload into one is, so the same
name in another collection is another document (one collection's ingest never replaces another's document)."""
Progress = Callable[[str], Awaitable[None]]
"""Reports one step of a running tool (a progress notification with this message)."""


@dataclass(frozen=True)
class Principal:
    """Who a request acts as: ``user`` None sees every document (stdio, like the CLI); ``admin`` may ingest
    and delete; ``local`` may name files on this machine (stdio only)."""

    user: str | None
    admin: bool = False
    local: bool = False

    def scope(self, collections: list[str] | None = None) -> Scope:
        """What one tool call of ``who`` reads: the collections ``collections`` (names; none: every one it may
        read), resolved by the facade (an unreadable one is collection_not_found there)."""
        return Scope(self.user, collections, self.admin)


def admin_refusal(tool: str, who: Principal) -> PermissionDeniedError:
    """Why ``who`` may not run the admin-only ``tool``: over stdio, which has no keys, how to turn the admin tools
    on; over HTTP, that it needs an admin key."""
    if who.local:
        return PermissionDeniedError(f"the {tool} tool is off in this ragstream mcp (stdio has no keys): start it as "
                                     "`ragstream mcp --admin-tools`, or set mcp.stdio_admin_tools = true "
                                     "(RAGSTREAM_MCP__STDIO_ADMIN_TOOLS=true)")
    return PermissionDeniedError(f"the {tool} tool needs an admin key")


def _public(record: DocumentRecord) -> DocumentRecord:
    return record.model_copy(update={"metadata": public_metadata(record.metadata)})


def _default_delete(rs: Ragstream, document_id: str, who: Principal) -> DocumentRecord:
    return rs.delete(document_id, user=who.user, allow_shared=who.admin, admin=who.admin)


class Tools:
    """The tools' work for one index. ``present`` shows a record to clients (the HTTP server also hides what
    older uploads stored in the open); ``delete`` removes a document (the HTTP server also removes its upload)."""

    def __init__(self, rs: Ragstream, config: McpConfig,
                 present: Callable[[DocumentRecord], DocumentRecord] = _public,
                 delete: Callable[[Ragstream, str, Principal], DocumentRecord] = _default_delete) -> None:
        self.rs = rs
        self.config = config
        self._present = present
        self._delete = delete

    # -- reads -----------------------------------------------------------------------------------

    def search(self, args: SearchArguments, who: Principal) -> SearchResult:
        """Ranked passages among the documents ``who`` may see."""
        top_k = args.top_k or self.config.default_top_k
        if top_k > self.config.max_top_k:
            raise InvalidQueryError(f"top_k must be at most {self.config.max_top_k} (mcp.max_top_k)")
        if args.filters and not set(args.filters) <= FILTERABLE_FIELDS:  # else no need to read every record
            known = self.rs.filter_fields(user=who.user)
            unknown = sorted(set(args.filters) - known)
            if unknown:
                raise UnknownFilterFieldError(f"unknown filter field {', '.join(map(repr, unknown))}; "
                                              f"known fields: {', '.join(sorted(known))}")
        found = self.rs.search(args.query, mode=args.mode, top_k=top_k, filters=args.filters, rerank=args.rerank,
                               scope=who.scope(args.collections))
        passages = [Passage(rank=hit.rank, chunk_id=hit.chunk.chunk_id, document_id=hit.chunk.metadata.document_id,
                            title=hit.chunk.metadata.title, source=hit.chunk.metadata.source,
                            section_path=hit.chunk.metadata.header_path, page=hit.chunk.metadata.page,
                            score=hit.score, rerank_score=hit.rerank_score, text=hit.chunk.text) for hit in found.hits]
        return SearchResult(query=found.query, mode=found.mode, requested_mode=found.requested_mode,
                            fallback_reason=found.fallback_reason, reranked=found.reranked,
                            rerank_reason=found.rerank_reason, num_candidates=found.num_candidates, passages=passages)

    def list_documents(self, args: ListDocumentsArguments, who: Principal) -> DocumentList:
        """One page of the documents ``who`` may see."""
        limit = self._limit(args.limit)
        if len(args.query) > self.config.max_filter_chars:
            raise InvalidQueryError(f"query must be at most {self.config.max_filter_chars} characters (mcp.max_filter_chars)")
        page = self.rs.document_page(args.offset, limit, args.query.strip(), args.sort, args.order == "desc",
                                     scope=who.scope(args.collections))
        following = args.offset + len(page.records)
        return DocumentList(documents=[self.info(record) for record in page.records], total=page.total,
                            offset=args.offset, limit=limit, next_offset=following if following < page.total else None)

    def read(self, args: ReadArguments, who: Principal) -> ReadResult:
        """A page of a document's chunks, or one chunk with its neighbours."""
        record, chunks = self.rs.document_with_chunks(args.document_id, user=who.user, admin=who.admin)
        if args.chunk_id is None:
            limit = self._limit(args.limit)
            shown = chunks[args.offset:args.offset + limit]
            following = args.offset + len(shown)
            return ReadResult(document=self.info(record), chunks=[_chunk_text(chunk) for chunk in shown],
                              total_chunks=len(chunks), next_offset=following if following < len(chunks) else None)
        if args.neighbours > self.config.max_neighbours:
            raise InvalidQueryError(f"neighbours must be at most {self.config.max_neighbours} (mcp.max_neighbours)")
        position = next((at for at, chunk in enumerate(chunks) if chunk.chunk_id == args.chunk_id), None)
        if position is None:
            raise ChunkNotFoundError(f"document {args.document_id!r} has no chunk {args.chunk_id!r} (it may have "
                                     "changed since: search again)")
        shown = chunks[max(position - args.neighbours, 0):position + args.neighbours + 1]
        return ReadResult(document=self.info(record), chunks=[_chunk_text(chunk) for chunk in shown],
                          total_chunks=len(chunks), focus_chunk_id=args.chunk_id)

    def info(self, record: DocumentRecord) -> DocumentInfo:
        """A record as clients see it."""
        return document_info(self._present(record), DOCUMENT_URI.format(document_id=record.document_id))

    def _limit(self, asked: int | None) -> int:
        limit = asked or self.config.page_size
        if limit > self.config.max_page_size:
            raise InvalidQueryError(f"limit must be at most {self.config.max_page_size} (mcp.max_page_size)")
        return limit

    # -- feedback --------------------------------------------------------------------------------

    def rate_answer(self, args: RateAnswerArguments, who: Principal) -> RateAnswerResult:
        """``who``'s rating of an answer ``ask`` gave them (message_not_found for anyone else's)."""
        rated = self.rs.feedback.rate(args.message_id, args.rating, args.comment, user=who.user)
        return RateAnswerResult.model_validate(rated.model_dump())

    # -- writes (admins) -------------------------------------------------------------------------

    def ingest(self, args: IngestArguments, who: Principal) -> IngestResult:
        """Ingest inline documents and (over stdio) paths, owned by ``who`` unless ``shared``."""
        self._admin(who, "ingest")
        if not args.documents and not args.paths:
            raise InvalidQueryError("give documents (name and text) or paths to ingest")
        if len(args.documents) + len(args.paths) > self.config.max_ingest_documents:
            raise InvalidQueryError(f"at most {self.config.max_ingest_documents} documents and paths per call "
                                    "(mcp.max_ingest_documents)")
        if args.paths and not who.local:
            raise PermissionDeniedError("paths name files on the server's machine and are read only over stdio; "
                                        "send the documents' text instead")
        owner = None if args.shared or args.collection or who.user is None else who.user
        writer = Writer(user=who.user, admin=who.admin)  # the write path checks where they may write
        failures: list[IngestFailure] = []
        reports: list[IngestReport] = []
        collection_id = self.rs.collection(args.collection, user=who.user, admin=who.admin).collection_id \
            if args.collection and args.documents else None
        for doc in args.documents:
            source = INLINE_SOURCE.format(name=doc.name) if collection_id is None else \
                COLLECTION_INLINE_SOURCE.format(collection_id=collection_id, name=doc.name)
            try:
                data = check_unicode(doc.text, f"the text of {doc.name!r}").encode("utf-8")
                reports.append(self.rs.ingest_bytes(data, doc.name, source=source, owner=owner, metadata=doc.metadata,
                                                    collection=args.collection, writer=writer))
            except (DocumentError, InvalidUnicodeError) as error:
                failures.append(IngestFailure(source=source, code=error.code, message=error.message))
        if args.paths:
            reports.append(self.rs.ingest([Path(path) for path in args.paths], owner=owner, collection=args.collection,
                                          writer=writer))
        failures += [IngestFailure(source=f.source, code=f.code, message=f.message) for r in reports for f in r.failures]
        return IngestResult(ingested=sum(r.documents_processed for r in reports),
                            unchanged=sum(r.documents_skipped for r in reports), failed=len(failures),
                            chunks_written=sum(r.chunks_written for r in reports),
                            document_ids=[i for r in reports for i in r.document_ids], failures=failures)

    def delete(self, args: DeleteArguments, who: Principal) -> DeleteResult:
        """Delete a document ``who`` may see (a shared one: admins)."""
        self._admin(who, "delete")
        record = self._delete(self.rs, args.document_id, who)
        return DeleteResult(deleted=record.document_id, title=record.title, source=record.source)

    @staticmethod
    def _admin(who: Principal, tool: str) -> None:
        if not who.admin:
            raise admin_refusal(tool, who)

    # -- ask -------------------------------------------------------------------------------------

    async def ask(self, args: AskArguments, who: Principal, progress: Progress) -> AskResult:
        """The cited answer, streamed: progress while the pipeline runs and every
        ``mcp.progress_every_tokens`` tokens. The collection names and the caller go to the answer path, which
        reads the scope inside its retried attempt (as /api/chat does): with the store down the answer comes without
        retrieval, not as a vector_db_unavailable error; an unknown collection is still collection_not_found.
        Cancelled (the client left or cancelled), it closes the stream, which stops the LLM call and keeps the turn
        marked incomplete, as the SSE endpoint does."""
        await progress("retrieving passages and running the pipeline")
        events = await anyio.to_thread.run_sync(  # the first call builds the answer path (models): off the event loop
            lambda: self.rs.stream_answer(args.question, args.conversation_id, scope=who.scope(args.collections)))
        done = False
        try:
            result = await self._consume(events, progress)
            done = True
            return result
        finally:
            with anyio.CancelScope(shield=True):
                await anyio.to_thread.run_sync(_close, events)
            if not done:
                logger.info("ask ended before its answer was done (cancelled, disconnected or failed): "
                            "the answer stream is closed")

    async def _consume(self, events: Iterator[StreamEvent], progress: Progress) -> AskResult:
        tokens = 0
        first = True
        while True:
            event = await anyio.to_thread.run_sync(_next, events)
            if event is None:
                raise ReportedError("internal_error", "InternalError", "the answer stream ended without its result")
            if first:
                first = False
                await progress("writing the answer")
            if event.type == "token":
                tokens += 1
                if tokens % self.config.progress_every_tokens == 0:
                    await progress(f"{tokens} tokens written")
            elif event.type == "error":
                raise ReportedError(event.code, event.error_type, event.message)
            elif event.type == "done":
                await progress("done")
                extra = {"conversation_id": event.conversation_id, "message_id": event.message_id, "mode": event.mode,
                         "degraded_reason": event.degraded_reason, "incomplete": event.incomplete}
                return AskResult.model_validate({**event.response.model_dump(), **extra})


def _next(events: Iterator[StreamEvent]) -> StreamEvent | None:
    return next(events, None)


def _close(events: Iterator[StreamEvent]) -> None:
    close = getattr(events, "close", None)
    if callable(close):
        close()


def _chunk_text(chunk: Chunk) -> ChunkText:
    return ChunkText(chunk_id=chunk.chunk_id, index=chunk.metadata.chunk_index, section_path=chunk.metadata.header_path,
                     page=chunk.metadata.page, text=chunk.text)
