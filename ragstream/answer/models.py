"""The data of the answer path: the retrieve contract and the response shape."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, Field


class DocumentChunk(BaseModel):
    """One retrieved chunk with its calibrated relevance (the ``retrieve`` contract, docs/http-api.md)."""

    chunk_id: str
    document_id: str
    text: str
    metadata: dict[str, Any] = Field(description="source, title, section, url, page, ... plus the document's own metadata.")
    relevance_score: float = Field(description="Dense cosine similarity to the query, clipped to 0..1.")
    position_in_doc: int = Field(description="The chunk's 0-based index in its document.")


class RAGContext(BaseModel):
    """The result of ``retrieve``; chunks ordered by relevance, best first."""

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
    match_type: Literal["number", "exact", "contains", "dice", "inferred", "none"] = Field(
        description="How the marker resolved; 'inferred': the answer cited nothing and this attachment is the "
        "closest to one of its sentences.")
    number: int | None = Field(None, description="1-based position of the chunk in the prompt's context.")
    chunk_id: str | None = None
    document_id: str | None = None
    title: str | None = None
    section: str | None = None
    source: str | None = None
    url: str | None = None
    page: int | None = None
    score: float | None = Field(None, description="The chunk's relevance.")
    checksum: str | None = Field(None, description="sha256 of the cited document's source file, as ingested.")
    collections: list[str] = Field(default_factory=list, description="The collections (names) the cited document "
                                   "came from: those of the question's scope it belongs to (docs/collections.md).")


class Source(BaseModel):
    """A cited document location, de-duplicated by URL/source."""

    title: str
    section: str
    url: str
    page: int | None = None
    document_id: str
    checksum: str = Field("", description="sha256 of the document's source file, as ingested: which version was cited.")
    collections: list[str] = Field(default_factory=list, description="The collections (names) the cited document "
                                   "came from: those of the question's scope it belongs to (docs/collections.md).")


class RelatedDoc(BaseModel):
    """A parent document of any context chunk (cited or not)."""

    document_id: str
    title: str
    url: str


class Confidence(BaseModel):
    """High, Medium or Low, with the reason."""

    level: Literal["High", "Medium", "Low"]
    reason: str
    probability: float | None = Field(
        None, description="The calibrated probability (0..1) that the answer cites a page that answers the question "
        "(answer.confidence.method = calibrated; None with the rules, docs/answers.md).")
    signals: dict[str, float] = Field(
        default_factory=dict, description="What the probability rests on: the ReRanker's, the retrievers' and the "
        "citations' signals of this answer (answer/confidence_signals.py); empty for no-results answers.")


Verdict = Literal["supported", "unsupported", "uncertain"]


class SupportSpan(BaseModel):
    """The passage sentence that best supports an answer sentence."""

    number: int = Field(description="The attachment (1-based) holding it.")
    chunk_id: str
    text: str = Field(description="The passage sentence as read (Markdown markup removed).")
    start: int | None = Field(None, description="Its first character in the chunk's text (None: not found verbatim).")
    end: int | None = Field(None, description="One past its last character in the chunk's text.")


class SentenceSupport(BaseModel):
    """One answer sentence and whether what it cites supports it (docs/answers.md, "Support")."""

    index: int = Field(description="0-based position among the answer's sentences.")
    text: str = Field(description="The sentence as read: markers, list bullets and emphasis removed.")
    start: int = Field(description="Its first character in the answer text (markers included).")
    end: int = Field(description="One past its last character in the answer text.")
    citations: list[int] = Field(description="Attachment numbers its markers cite; empty: it cites none.")
    checked: list[int] = Field(description="Attachments it was checked against: the cited ones, else all of them.")
    supported: bool = Field(description="verdict == 'supported'.")
    verdict: Verdict
    score: float = Field(description="Support, 0..1: the mean of word coverage, embedder similarity and "
                         "cross-encoder relevance; at most answer.support.failed_score_cap after a failed check.")
    reason: str
    span: SupportSpan | None = None
    signals: dict[str, Any] = Field(default_factory=dict, description="What the verdict rests on: coverage, "
                                    "similarity, cross_encoder, missing_numbers, missing_entities, negation, judge.")


class Answer(BaseModel):
    """The response shape."""

    answer: str
    sources: list[Source]
    relatedDocs: list[RelatedDoc]  # noqa: N815 - the response field's documented name (docs/http-api.md)
    citations: list[Citation]
    confidence: Confidence
    metadata: dict[str, Any]
    sentences: list[SentenceSupport] = Field(
        default_factory=list, description="Every sentence of the answer with its support verdict (empty for the "
        "no-results answer, or with answer.support.enabled off).")


class CitationPayload(BaseModel):
    """What a ``citation`` event says about one cited chunk (``chapter`` is the document title)."""

    chunk_id: str | None
    document_id: str | None
    number: int | None
    marker: str
    title: str | None
    chapter: str | None
    section: str | None
    url: str | None
    source: str | None
    page: int | None
    score: float | None
    collections: list[str] = Field(default_factory=list, description="The collections (names) the cited document "
                                   "came from: those of the question's scope it belongs to (docs/collections.md).")


class TokenEvent(BaseModel):
    """A piece of the answer text."""

    type: Literal["token"] = "token"
    token: str

    @property
    def data(self) -> dict[str, Any]:
        """The event's wire payload."""
        return {"token": self.token}


class CitationEvent(BaseModel):
    """A marker that resolved to an attachment, sent right after the token that completed it."""

    type: Literal["citation"] = "citation"
    citation: CitationPayload

    @property
    def data(self) -> dict[str, Any]:
        """The event's wire payload."""
        return self.citation.model_dump()


class SupportEvent(BaseModel):
    """A sentence's support verdict, sent once the sentence is complete (again if the LLM judge revises it)."""

    type: Literal["support"] = "support"
    sentence: SentenceSupport

    @property
    def data(self) -> dict[str, Any]:
        """The event's wire payload: the sentence's verdict."""
        return self.sentence.model_dump()


class QueuedEvent(BaseModel):
    """The question waits in line for the answering model (many questions at once, or the provider's rate
    limit); sent at once, then every ``llm.queue_event_seconds`` while it waits."""

    type: Literal["queued"] = "queued"
    position: int = Field(description="Place in line: 1 is next.")
    waited_seconds: float = Field(description="Seconds waited so far.")
    reason: Literal["busy", "rate_limited"] = Field(
        description="busy: every slot (llm.max_concurrent) is answering; rate_limited: the provider answered 429.")
    retry_after_seconds: float | None = Field(None, description="rate_limited: the provider's Retry-After.")

    @property
    def data(self) -> dict[str, Any]:
        """The event's wire payload."""
        return self.model_dump(exclude={"type"})


class DoneEvent(BaseModel):
    """The last event of an answer: ids, tokens, latency, how it was made, and the whole response."""

    type: Literal["done"] = "done"
    conversation_id: str
    message_id: str
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    total_tokens: int | None = None
    latency_ms: float
    first_token_ms: float | None = Field(
        None, description="Milliseconds from the question's arrival to the first token event (None: no token).")
    unmatched_citations: list[str] = Field(default_factory=list)
    mode: Literal["llm", "extractive", "no_results", "no_retrieval"]
    degraded_reason: str | None = Field(None, description="Why the answer is not what the configuration asked for.")
    incomplete: bool = Field(False, description="Generation stopped early (token limit, or the LLM failed midway).")
    response: Answer

    @property
    def data(self) -> dict[str, Any]:
        """The event's wire payload."""
        return self.model_dump(exclude={"type"})


class ErrorEvent(BaseModel):
    """A failure after the stream started (errors before it are plain JSON error responses)."""

    type: Literal["error"] = "error"
    code: str
    error_type: str
    message: str
    request_id: str | None = None

    @property
    def data(self) -> dict[str, Any]:
        """The event's wire payload: ``{code, type, message, request_id}``."""
        return {"code": self.code, "type": self.error_type, "message": self.message, "request_id": self.request_id}


StreamEvent = Annotated[TokenEvent | CitationEvent | SupportEvent | QueuedEvent | DoneEvent | ErrorEvent,
                        Field(discriminator="type")]
"""One event of a streamed answer: queued, token, citation, support, done or error."""
