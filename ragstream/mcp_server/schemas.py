"""The MCP tools' arguments (strict: an unknown argument is an error) and structured results.

Each result model is also the tool's ``outputSchema``. ``AskResult`` extends the answer model
(:class:`ragstream.answer.models.Answer`), so a field added to answers reaches MCP clients unchanged.
"""

from __future__ import annotations

import json
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StringConstraints, field_validator

from ragstream.api_types import Answer, Rated, Rating
from ragstream.models import DocumentRecord, SearchMode

INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1
FilterInt = Annotated[int, Field(ge=INT64_MIN, le=INT64_MAX)]
FilterValue = str | FilterInt | bool | list[str] | list[FilterInt]
FilterKey = Annotated[str, StringConstraints(pattern=r"^[A-Za-z0-9_-]+(\.[A-Za-z0-9_-]+)*$")]
DocumentSort = Literal["title", "source", "mime", "chunks", "ingested", "updated"]


class StrictArguments(BaseModel):
    """Tool arguments: unknown keys are refused (``invalid_arguments``), never silently dropped."""

    model_config = ConfigDict(extra="forbid")


class SearchArguments(StrictArguments):
    query: str = Field(description="One stand-alone search query: name the subject, no pronouns.")
    mode: SearchMode | None = Field(None, description="hybrid (default: keywords and meaning), dense (meaning) or "
                                    "bm25 (exact words, names, error messages).")
    top_k: int | None = Field(None, ge=1, description="How many passages (default mcp.default_top_k, at most mcp.max_top_k).")
    filters: dict[FilterKey, FilterValue] | None = Field(
        None, description="Exact-match metadata filters, e.g. {\"has_code\": true} or {\"chapter\": \"Timeouts\"}; "
        "fields: document_id, source, title, section, header_path, chapter, page, has_code, has_equations, ocr, mime, and "
        "the documents' own metadata keys. A list matches any of its values.")

    rerank: bool = Field(False, description="Re-order the best passages with the cross-encoder (slower; often more "
                         "precise for questions).")
    collections: list[str] | None = Field(None, description="Only these collections (names); default: every "
                                          "collection you may read.")

    @field_validator("filters", mode="before")
    @classmethod
    def _decode(cls, value: Any) -> Any:
        """Some clients send an object argument as a JSON string."""
        if isinstance(value, str):
            try:
                return json.loads(value)
            except ValueError:
                return value
        return value


class AskArguments(StrictArguments):
    question: str = Field(description="One stand-alone question, pronouns resolved (\"How do I set a read timeout "
                          "in httpx?\", not \"and for that one?\").")
    conversation_id: str | None = Field(
        None, pattern=r"^[A-Za-z0-9._:-]{1,128}$",
        description="Continue this conversation (the id a previous ask returned); default: a new one.")
    collections: list[str] | None = Field(None, description="Only these collections (names); default: every "
                                          "collection you may read.")


class ListDocumentsArguments(StrictArguments):
    offset: int = Field(0, ge=0, le=INT64_MAX, description="Skip this many documents (paging).")
    limit: int | None = Field(None, ge=1, description="Documents per page (default mcp.page_size, at most mcp.max_page_size).")
    query: str = Field("", description="Only documents whose title or source contains this (case-insensitive).")
    sort: DocumentSort = Field("source", description="Sort key; ingested: first ingest, updated: the live version's.")
    order: Literal["asc", "desc"] = "asc"
    collections: list[str] | None = Field(None, description="Only these collections (names); default: every "
                                          "collection you may read.")


class ReadArguments(StrictArguments):
    document_id: str = Field(description="The document (document_id from search or list_documents).")
    chunk_id: str | None = Field(None, description="Read this chunk (chunk_id from search) and its neighbours "
                                 "instead of the document from offset.")
    neighbours: int = Field(1, ge=0, description="With chunk_id: chunks before and after it (at most mcp.max_neighbours).")
    offset: int = Field(0, ge=0, le=INT64_MAX, description="Without chunk_id: the first chunk to read (paging).")
    limit: int | None = Field(None, ge=1, description="Without chunk_id: chunks to read (default mcp.page_size).")


class InlineDocument(StrictArguments):
    name: str = Field(min_length=1, max_length=255, description="File name, e.g. notes.md; the same name replaces the "
                      "document.")
    text: str = Field(description="The content: Markdown, plain text, reST or HTML.")
    metadata: dict[str, str | int | float | bool] | None = Field(None, description="Metadata kept on every chunk.")


class IngestArguments(StrictArguments):
    documents: list[InlineDocument] = Field(default_factory=list, description="Documents given inline.")
    paths: list[str] = Field(default_factory=list, description="Files or folders on the server's machine (stdio only).")
    shared: bool = Field(False, description="Shared with every user instead of owned by the caller (HTTP, admins).")
    collection: str | None = Field(None, description="The collection the documents join (by name; readable by whoever "
                                   "reads it); default: the default one.")


class DeleteArguments(StrictArguments):
    document_id: str = Field(description="The document to delete, with every chunk of it.")


class RateAnswerArguments(StrictArguments):
    message_id: str = Field(description="The message_id of an answer ask gave you.")
    rating: Rating = Field(description="helpful or not_helpful; a later rating of the same answer replaces it.")
    comment: str = Field("", description="Optional: what was good or wrong (at most "
                         "answer.feedback.max_comment_chars characters).")


# -- results -------------------------------------------------------------------------------------


class Passage(BaseModel):
    """One search hit: a chunk and where it comes from."""

    rank: int
    chunk_id: str
    document_id: str
    title: str
    source: str
    section_path: str = Field(description="Headings from the top, joined with ' > '.")
    page: int | None = None
    score: float = Field(description="The mode's score: fused (hybrid), cosine (dense) or BM25.")
    rerank_score: float | None = Field(None, description="The cross-encoder's score, when the search was reranked.")
    text: str


class SearchResult(BaseModel):
    query: str
    mode: SearchMode = Field(description="The mode that ran.")
    requested_mode: SearchMode
    fallback_reason: str | None = Field(None, description="Why the mode that ran differs from the requested one.")
    reranked: bool = Field(False, description="Whether the cross-encoder re-ordered the passages.")
    rerank_reason: str | None = Field(None, description="Why a requested rerank did not run.")
    num_candidates: dict[str, int] = Field(
        default_factory=dict, description="Candidates each retriever (dense, bm25) produced before fusion and the cut.")
    passages: list[Passage]


class AskResult(Answer):
    """The answer (text with [n] citations, sources, citations, confidence, metadata) and how it was made."""

    conversation_id: str = Field(description="Pass it back as conversation_id to ask a follow-up.")
    message_id: str = Field(description="This answer's id: its asker rates it with the rate_answer tool (or "
                            "POST /api/feedback): helpful / not_helpful.")
    mode: Literal["llm", "extractive", "no_results", "no_retrieval"]
    degraded_reason: str | None = None
    incomplete: bool = Field(False, description="Generation stopped early (token limit, or the LLM failed midway).")


class RateAnswerResult(Rated):
    """The rating as kept for the caller's answer."""


class DocumentInfo(BaseModel):
    """A document as MCP clients see it (no private metadata)."""

    document_id: str
    uri: str = Field(description="Its resource URI: ragstream://documents/{document_id}.")
    title: str
    source: str
    mime: str
    chunks: int
    ingested_at: str = Field(description="When the live version was ingested.")
    first_ingested_at: str | None = None
    shared: bool = Field(description="Shared with every user (else the caller's own).")
    metadata: dict[str, Any]


class DocumentList(BaseModel):
    documents: list[DocumentInfo]
    total: int = Field(description="Documents that matched, on all pages.")
    offset: int
    limit: int
    next_offset: int | None = Field(description="offset of the next page; null on the last one.")


class ChunkText(BaseModel):
    chunk_id: str
    index: int = Field(description="0-based position in the document.")
    section_path: str
    page: int | None = None
    text: str


class ReadResult(BaseModel):
    document: DocumentInfo
    chunks: list[ChunkText]
    total_chunks: int
    focus_chunk_id: str | None = Field(None, description="The chunk asked for (its neighbours around it).")
    next_offset: int | None = Field(None, description="Without chunk_id: offset of the next chunks; null at the end.")


class IngestFailure(BaseModel):
    source: str
    code: str
    message: str


class IngestResult(BaseModel):
    ingested: int = Field(description="Documents written (new or changed).")
    unchanged: int
    failed: int
    chunks_written: int
    document_ids: list[str]
    failures: list[IngestFailure]


class DeleteResult(BaseModel):
    deleted: str
    title: str
    source: str


def document_info(record: DocumentRecord, uri: str) -> DocumentInfo:
    """``record`` (already stripped of private metadata) as a :class:`DocumentInfo`."""
    return DocumentInfo(document_id=record.document_id, uri=uri, title=record.title, source=record.source,
                        mime=record.mime, chunks=record.chunk_count, ingested_at=record.ingested_at,
                        first_ingested_at=record.first_ingested_at, shared=record.owner is None,
                        metadata=record.metadata)
