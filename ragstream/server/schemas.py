"""Request and response bodies of the HTTP API (what /docs shows)."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, Field, StringConstraints

from ragstream.api_types import ConversationPair, SuperPrompt
from ragstream.models import Chunk, DocumentRecord, ErrorDetail, UploadedFile
from ragstream.models import JobStatus as JobStatus  # the body of GET /api/jobs/{id}, and of a 202 upload

INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1
FilterInt = Annotated[int, Field(ge=INT64_MIN, le=INT64_MAX)]
FilterValue = str | FilterInt | bool | list[str] | list[FilterInt]
FilterKey = Annotated[str, StringConstraints(pattern=r"^[A-Za-z0-9_-]+(\.[A-Za-z0-9_-]+)*$")]
"""A metadata field name: core fields (has_code, page, ...) or the document's own metadata keys."""
Scope = list[Annotated[str, StringConstraints(max_length=256)]] | None
"""The collections (names) a read is scoped to (docs/collections.md)."""


class ErrorResponse(BaseModel):
    """The body of every error response."""

    error: ErrorDetail
    request_id: str | None = None


class SearchRequest(BaseModel):
    """``POST /api/search``: the spine's hybrid, dense or BM25 search."""

    query: str = Field(description="What to look for.")
    mode: Literal["hybrid", "dense", "bm25"] | None = Field(None, description="Default: retrieval.mode.")
    top_k: int | None = Field(None, ge=1, description="Default: retrieval.top_k; at most server.max_top_k.")
    filters: dict[FilterKey, FilterValue] | None = Field(None, description="Exact-match metadata filters.")
    score_threshold: float | None = Field(None, allow_inf_nan=False, description="Drop hits scoring below this.")
    rerank: bool = Field(False, description="Re-order the first reranker.top_n hits with the cross-encoder.")
    collections: Scope = Field(None, description="Read only these collections (names); default: every collection "
                               "the caller may read. An unknown or unreadable one is 404 collection_not_found.")



"""``pending``: stored, waiting for its background job to ingest it."""


class UploadResponse(BaseModel):
    """``POST /api/documents``: one result per file; failed files do not stop the others."""

    files: list[UploadedFile]
    ingested: int
    duplicates: int
    failed: int
    request_id: str | None = None


class DocumentDetail(BaseModel):
    """A document and, when asked for, its chunks."""

    document: DocumentRecord
    chunks: list[Chunk] | None = None


class DocumentPageResponse(BaseModel):
    """``GET /api/documents/page``: one page of the document list."""

    items: list[DocumentRecord]
    total: int = Field(description="Documents that matched the filter, on all pages.")
    offset: int
    limit: int
    q: str = Field("", description="The filter: a case-insensitive part of the title or source.")
    sort: str
    order: Literal["asc", "desc"]


class UISettings(BaseModel):
    """``GET /api/ui``: what the web UI shows, from the config and the user's own index."""

    stage_top_entries: int = Field(description="Pipeline page: chunks per stage before 'show all'.")
    documents_page_size: int = Field(description="Documents page: rows per page.")
    documents: int = Field(description="Documents in the index.")
    example_questions: list[str] = Field(description="Questions about the index's own documents.")
    max_selected_text_chars: int = Field(description="Longest text 'Ask about this' may attach to a question "
                                         "(answer.max_selected_text_chars), in characters.")


class DeleteResponse(BaseModel):
    """``DELETE /api/documents/{id}``."""

    deleted: str
    upload_removed: bool = Field(description="True when the stored upload file was removed too.")


class HealthResponse(BaseModel):
    """``GET /healthz``."""

    status: Literal["ok"] = "ok"
    version: str


class NewPromptRequest(BaseModel):
    """``POST /api/pipeline``: start a SuperPrompt."""

    text: str = Field(description="The prompt; headers like 'TASK:' or '## Context' are optional.")
    conversation: list[ConversationPair] = Field(default_factory=list, description="Earlier turns, oldest first.")
    selected_text: str | None = Field(None, description="Text the user selected, quoted in the prompt (Prompt_MD's "
                                      "'Selected text'); at most answer.max_selected_text_chars characters.")
    collections: Scope = Field(None, description="Scope the prompt's searches to these collections (names; the "
                               "scope is checked again at every run).")


class RunStageRequest(BaseModel):
    """``POST /api/pipeline/{id}/run``."""

    stage: str | None = Field(None, description="Stage name (e.g. Retrieval, a3); default: the next one.")


class RunAllRequest(BaseModel):
    """``POST /api/pipeline/{id}/auto``."""

    until: str | None = Field(None, description="Stop after this stage; default: run all remaining.")


class StageInfo(BaseModel):
    """``GET /api/pipeline/stages?detail=true``: one stage as the stage registry describes it."""

    name: str = Field(description="The button name; it, its prefix (a0) or its entry selects the stage.")
    order: int = Field(description="Its place in the pipeline, from 1.")
    entry: str = Field(description="Its entry in history_of_stages and its key in stage_reports and views_by_stage.")
    sets_stage: str | None = Field(description="The lifecycle stage it sets; None keeps the stage (Prompt_Builder).")
    reads: list[str] = Field(description="SuperPrompt fields it reads.")
    writes: list[str] = Field(description="SuperPrompt fields it writes; the controller refuses any other change.")
    logs: list[str] = Field(description="Its keys in extras (logs for people).")
    view: bool = Field(description="True when it writes a view (views_by_stage[entry]).")
    scored: bool = Field(description="True when its view has scores (scores_by_stage[entry]).")
    view_parent: str | None = Field(description="The view its view narrows (a subset of it).")
    cap: str | None = Field(description="The pipeline limit its view may not exceed.")
    llm_key: str | None = Field(description="Its key in pipeline.llm_stages when it may call the LLM.")
    summary: str = Field(description="What it does, in a few words.")


class PipelineState(BaseModel):
    """A SuperPrompt held by the server, and where it stands."""

    id: str
    stages: list[str] = Field(description="The eight stages, in order.")
    stages_run: int = Field(description="How many stages ran.")
    next_stage: str | None = Field(description="The stage that runs next; None when all eight ran.")
    superprompt: SuperPrompt


CONVERSATION_ID_PATTERN = r"^[A-Za-z0-9._:-]{1,128}$"
"""Conversation ids travel in an HTTP header (``X-Conversation-ID``): letters, digits and ``._:-`` only."""


class QueryRequest(BaseModel):
    """``POST /api/query``: one JSON answer (docs/http-api.md)."""

    query: str = Field(description="The question (non-empty, at most answer.max_question_chars).")
    conversation_id: str | None = Field(None, description="Continue this conversation; default: a new one.",
                                        pattern=CONVERSATION_ID_PATTERN)
    selected_text: str | None = Field(None, description="Text the user selected, added to the prompt.")
    collections: Scope = Field(None, description="Read only these collections (names); default: every collection "
                               "the caller may read. An unknown or unreadable one is 404 collection_not_found.")


class ChatRequest(BaseModel):
    """``POST /api/chat``: the answer streams back as Server-Sent Events (docs/http-api.md, ``/api/chat`` events)."""

    message: str = Field(description="The question.")
    conversation_id: str | None = Field(None, description="Continue this conversation; default: a new one.",
                                        pattern=CONVERSATION_ID_PATTERN)
    session_id: str | None = Field(None, description="The client's session (accepted; not used for retrieval).")
    selected_text: str | None = Field(None, description="Text the user selected, added to the prompt.")
    collections: Scope = Field(None, description="Read only these collections (names); default: every collection "
                               "the caller may read. An unknown or unreadable one is 404 collection_not_found.")


class ConversationTurn(BaseModel):
    """One kept (question, answer) turn of a conversation."""

    message_id: str
    user: str
    assistant: str
    created_at: str
    incomplete: bool = Field(description="True when the answer was cut short (client left, or generation failed).")


class RetrieveRequest(BaseModel):
    """``POST /api/retrieve``: the retrieve contract, chunks whose dense relevance reaches ``min_relevance`` (docs/http-api.md)."""

    query: str
    context_key: str = Field("", description="Groups queries (e.g. a conversation id) in the retrieval cache.")
    max_chunks: int | None = Field(None, ge=1, description="Default: answer.max_chunks; at most server.max_top_k.")
    min_relevance: float | None = Field(None, ge=0.0, le=1.0, description="Default: answer.min_relevance.")
    collections: Scope = Field(None, description="Read only these collections (names); default: every collection "
                               "the caller may read. An unknown or unreadable one is 404 collection_not_found.")


class CollectionRequest(BaseModel):
    """``POST /api/collections`` (every field) and ``PATCH /api/collections/{name}`` (the fields given)."""

    name: str | None = Field(None, description="Unique: letters, digits, '.', '_' and '-' (collections.max_name_chars).")
    description: str | None = None
    instructions: str | None = Field(None, description="Added to the answering model's instructions for questions "
                                     "scoped to the collection.")
    access: Literal["private", "readers", "all"] | None = Field(
        None, description="private (default): its owner and editors; readers: also ``readers``; all: every user.")
    readers: list[str] | None = Field(None, description="Users who may read it.")
    editors: list[str] | None = Field(None, description="Users who may read it and add or remove documents.")


class CollectionDeleteResponse(BaseModel):
    """``DELETE /api/collections/{name}``."""

    deleted: str
    documents_deleted: list[str] = Field(description="Documents deleted with it (those in no other collection).")


class MembershipResponse(BaseModel):
    """``PUT`` / ``DELETE /api/collections/{name}/documents/{id}``."""

    collection: str
    document_id: str
    changed: bool = Field(description="False when it was already in (or already out of) the collection.")
