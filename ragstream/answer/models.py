"""The data of the answer path: the seed-003 retrieve contract and the seed-002 response shape."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field


class DocumentChunk(BaseModel):
    """Seed 003: one retrieved chunk with its calibrated relevance."""

    chunk_id: str
    document_id: str
    text: str
    metadata: dict[str, Any] = Field(description="source, title, section, url, page, ... plus the document's own metadata.")
    relevance_score: float = Field(description="Dense cosine similarity to the query, clipped to 0..1.")
    position_in_doc: int = Field(description="The chunk's 0-based index in its document.")


class RAGContext(BaseModel):
    """Seed 003: the result of ``retrieve``; chunks ordered by relevance, best first."""

    context_id: str
    query_id: str
    query: str
    context_key: str
    document_chunks: list[DocumentChunk]
    relevance_scores: list[float]
    total_chunks: int
    avg_relevance: float = Field(description="Mean relevance of the returned chunks, or of the top candidates when none qualified.")
    meets_threshold: bool
    min_relevance: float
    latency_ms: float


class Citation(BaseModel):
    """One citation marker of an answer and the prompt chunk it resolved to (if any)."""

    marker: str = Field(description="The bracketed text as written, e.g. '1' or 'Timeouts > Pool'.")
    matched: bool
    match_type: Literal["number", "exact", "contains", "dice", "none"]
    number: int | None = Field(None, description="1-based position of the chunk in the prompt's context.")
    chunk_id: str | None = None
    document_id: str | None = None
    title: str | None = None
    section: str | None = None
    source: str | None = None
    url: str | None = None
    page: int | None = None
    score: float | None = Field(None, description="The chunk's relevance.")


class Source(BaseModel):
    """A cited document location, de-duplicated by URL/source."""

    title: str
    section: str
    url: str
    page: int | None = None
    document_id: str


class RelatedDoc(BaseModel):
    """A parent document of any context chunk (cited or not)."""

    document_id: str
    title: str
    url: str


class Confidence(BaseModel):
    """Seed 002 stage 5."""

    level: Literal["High", "Medium", "Low"]
    reason: str


class Answer(BaseModel):
    """Seed 002's response shape."""

    answer: str
    sources: list[Source]
    relatedDocs: list[RelatedDoc]  # noqa: N815 - the seed's field name
    citations: list[Citation]
    confidence: Confidence
    metadata: dict[str, Any]


class StreamEvent(BaseModel):
    """Seed 001: ``token`` ({token}), ``citation`` ({chunk_id, title, chapter, section, url, page, ...}) or ``done``."""

    type: Literal["token", "citation", "done"]
    data: dict[str, Any]
