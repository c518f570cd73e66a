"""``ask`` and ``stream_answer``: validate -> retrieve gate -> SuperPrompt pipeline -> generate ->
citations -> confidence -> the seed-002 response.

The gate is :meth:`AnswerService.retrieve` on the question: when no chunk reaches
``answer.min_relevance`` the no-results answer comes back at once (Low confidence, no pipeline
run, zero LLM calls). Otherwise the pipeline selects the context (its ``final_selection_ids``,
conversation pairs excluded), the first ``answer.prompt_max_chunks`` that fit
``answer.max_context_chars`` become the numbered passages of the prompt, and the answer comes from
the LLM (when ``llm.base_url`` is set) or, without one, is extractive.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

from ragstream.answer.cache import RetrievalCache
from ragstream.answer.citations import (
    CitationResolver,
    CitationTracker,
    build_related_docs,
    build_sources,
    track_text,
)
from ragstream.answer.confidence import calculate_confidence
from ragstream.answer.conversation import ConversationStore
from ragstream.answer.extractive import extractive_answer
from ragstream.answer.generate import build_messages, fit_context
from ragstream.answer.models import Answer, Confidence, DocumentChunk, RAGContext, StreamEvent
from ragstream.answer.retrieve import Retriever, relevance, to_document_chunk
from ragstream.answer.streaming import stream_events
from ragstream.errors import InvalidQueryError, NoRelevantContextError, NoRetrievalResultsError
from ragstream.pipeline.conversation import CONVERSATION_SOURCE
from ragstream.pipeline.super_prompt import ConversationPair
from ragstream.providers.llm_client import LLMClient
from ragstream.retrieval.searcher import validate_query

if TYPE_CHECKING:
    from ragstream.api import Ragstream

Mode = Literal["llm", "extractive", "no_results"]
MS = 1000.0
STAGES_TO_RETRIEVAL = "Retrieval"
STAGES_TO_RERANK = "ReRanker"


@dataclass
class _Turn:
    """One question on its way to an answer."""

    question: str
    conversation_id: str
    message_id: str
    history: list[ConversationPair]
    started: float
    latencies: dict[str, float] = field(default_factory=dict)
    gate: RAGContext | None = None
    cache_hit: bool = False
    question_vector: np.ndarray | None = None
    chunks: list[DocumentChunk] = field(default_factory=list)
    messages: list[dict[str, Any]] = field(default_factory=list)
    pipeline: dict[str, Any] = field(default_factory=dict)

    def lap(self, stage: str, since: float) -> float:
        """Record ``stage``'s latency since ``since``; returns now."""
        now = time.perf_counter()
        self.latencies[stage] = self.latencies.get(stage, 0.0) + (now - since) * MS
        return now


class AnswerService:
    """The answer path over one :class:`Ragstream` index."""

    def __init__(self, rs: Ragstream, cache: RetrievalCache) -> None:
        self._rs = rs
        self._config = rs.config.answer
        self.cache = cache
        self.retriever = Retriever(rs.search, lambda query: rs.embedder().embed_queries([query])[0],
                                   self._config, rs.config.limits.max_query_chars)
        self.conversations = ConversationStore(rs.catalog, rs.config.pipeline.N4_RECENT_CONV_MAX_PAIRS)
        self.llm: LLMClient | None = LLMClient(rs.config.llm) if rs.config.llm.enabled else None

    # -- retrieve (seed 003) -----------------------------------------------------------------------

    def retrieve(self, query: str, context_key: str, max_chunks: int | None = None,
                 min_relevance: float | None = None) -> RAGContext:
        """Seed-003 retrieve, served from the cache for the same (query, context_key, limits)."""
        return self._cached_retrieve(query, context_key, max_chunks, min_relevance)[0]

    def _cached_retrieve(self, query: str, context_key: str, max_chunks: int | None,
                         min_relevance: float | None) -> tuple[RAGContext, bool]:
        key = (query, context_key, max_chunks, min_relevance)
        return self.cache.get_or_compute(key, lambda: self.retriever.retrieve(
            query, context_key, max_chunks=max_chunks, min_relevance=min_relevance))

    # -- answers (seeds 001, 002) ------------------------------------------------------------------

    def ask(self, question: str, conversation_id: str | None = None, selected_text: str | None = None) -> Answer:
        """Answer ``question`` in one piece."""
        turn = self._prepare(question, conversation_id, selected_text)
        if not turn.chunks:
            return self._finish(turn, self._config.no_results_message, "no_results", None, {})
        started = time.perf_counter()
        if self.llm is None:
            text, mode, model, tokens = self._extractive(turn), "extractive", None, {}
        else:
            result = self.llm.chat(turn.messages)
            text, mode, model = result.text, "llm", result.model
            tokens = {"prompt_tokens": result.prompt_tokens, "completion_tokens": result.completion_tokens}
        turn.lap("generation", started)
        return self._finish(turn, text, mode, model, tokens)

    def stream_answer(self, question: str, conversation_id: str | None = None,
                      selected_text: str | None = None) -> Iterator[StreamEvent]:
        """Answer ``question`` as ``token`` / ``citation`` events, then one ``done`` event."""
        turn = self._prepare(question, conversation_id, selected_text)
        tracker = CitationTracker(CitationResolver(turn.chunks, self._config.citations))
        started = time.perf_counter()
        model: str | None = None
        tokens: dict[str, Any] = {}
        if not turn.chunks:
            mode: Mode = "no_results"
            deltas: Any = [self._config.no_results_message]
        elif self.llm is None:
            mode, deltas = "extractive", [self._extractive(turn)]
        else:
            mode, deltas = "llm", self.llm.stream_chat(turn.messages)
        parts: list[str] = []
        received = [0]

        def counted() -> Iterator[str]:
            for delta in deltas:
                received[0] += 1
                yield delta

        completed = False
        try:
            for event in stream_events(counted(), tracker, self._config.citations.max_marker_chars):
                if event.type == "token":
                    if not parts:
                        turn.lap("first_token", started)
                    parts.append(event.data["token"])
                yield event
            completed = True
        finally:
            close = getattr(deltas, "close", None)
            if callable(close):
                close()  # the consumer stopped early: release the LLM connection
            if not completed:  # the client left or generation failed: keep what was said, marked incomplete
                self.conversations.append(turn.conversation_id, turn.message_id, turn.question, "".join(parts),
                                          incomplete=True)
        if mode == "llm":
            result = deltas.result
            model = result.model
            tokens = {"prompt_tokens": result.prompt_tokens, "completion_tokens": result.completion_tokens}
            if result.completion_tokens is None:  # the server sent no usage: one delta is about one token
                tokens["completion_tokens"], tokens["completion_tokens_estimated"] = received[0], True
        turn.lap("generation", started)
        answer = self._finish(turn, "".join(parts), mode, model, tokens)
        yield StreamEvent(type="done", data=_done_data(answer))

    # -- steps -------------------------------------------------------------------------------------

    def _prepare(self, question: str, conversation_id: str | None, selected_text: str | None) -> _Turn:
        """Validate, load the conversation, gate on retrieve, run the pipeline, build the prompt."""
        validate_query(question, self._config.max_question_chars)
        if selected_text is not None and not isinstance(selected_text, str):
            raise InvalidQueryError("selected_text must be a string")
        conversation_id = conversation_id or ConversationStore.new_id()
        turn = _Turn(question=question, conversation_id=conversation_id, message_id=ConversationStore.new_id(),
                     history=self.conversations.recent(conversation_id), started=time.perf_counter())
        started = time.perf_counter()
        turn.gate, turn.cache_hit = self._cached_retrieve(question, conversation_id, None, None)
        turn.lap("retrieval", started)
        if not turn.gate.meets_threshold:
            return turn
        selected = self._run_pipeline(turn)
        turn.question_vector = self._rs.embedder().embed_queries([question])[0]
        context, turn.chunks = fit_context(self._scored(turn.question_vector, selected), self._config.max_context_chars)
        turn.messages = build_messages(self._config.system_prompt, context, question, turn.history, selected_text,
                                       self._config.citation_reminder)
        return turn

    def _run_pipeline(self, turn: _Turn) -> list[DocumentChunk]:
        """The pipeline's final selection (document chunks only, at most ``prompt_max_chunks``)."""
        rs = self._rs
        started = time.perf_counter()
        try:
            sp = rs.run_pipeline(rs.new_prompt(turn.question, turn.history), until=STAGES_TO_RETRIEVAL)
            started = turn.lap("retrieval", started)
            sp = rs.run_pipeline(sp, until=STAGES_TO_RERANK)
            started = turn.lap("rerank", started)
            sp = rs.run_pipeline(sp)
        except (NoRetrievalResultsError, NoRelevantContextError) as error:
            turn.pipeline = {"error": error.to_dict()}
            return []
        finally:
            turn.lap("selection", started)
        turn.pipeline = {"stages": list(sp.history_of_stages), "selected": len(sp.final_selection_ids),
                         "reranker": sp.extras.get("reranker", {}).get("backend")}
        chunks = [chunk for chunk in sp.chunks(sp.final_selection_ids) if chunk.metadata.source != CONVERSATION_SOURCE]
        return [to_document_chunk(chunk, 0.0) for chunk in chunks[: self._config.prompt_max_chunks]]

    def _scored(self, question_vector: np.ndarray, chunks: list[DocumentChunk]) -> list[DocumentChunk]:
        """``chunks`` with their relevance (dense cosine to the question, clipped to 0..1)."""
        if not chunks:
            return []
        cosines = self._rs.embedder().embed_documents([chunk.text for chunk in chunks]) @ question_vector
        return [chunk.model_copy(update={"relevance_score": relevance(float(c))}) for chunk, c in zip(chunks, cosines, strict=True)]

    def _extractive(self, turn: _Turn) -> str:
        config = self._config
        return extractive_answer(turn.question_vector, turn.chunks, self._rs.embedder(), label=config.extractive_label,
                                 max_sentences=config.extractive_max_sentences,
                                 min_chars=config.extractive_min_sentence_chars,
                                 max_example_chars=config.extractive_max_example_chars)

    def _finish(self, turn: _Turn, text: str, mode: Mode, model: str | None, tokens: dict[str, Any]) -> Answer:
        """Citations, confidence, the conversation record and the response."""
        tracker = CitationTracker(CitationResolver(turn.chunks, self._config.citations))
        track_text(text, tracker, self._config.citations)
        if mode == "no_results":
            confidence = Confidence(level="Low", reason=self._no_results_reason(turn))
        else:
            confidence = calculate_confidence([c.relevance_score for c in turn.chunks], len(tracker.matched),
                                              self._config.confidence)
        self.conversations.append(turn.conversation_id, turn.message_id, turn.question, text)
        turn.latencies["total"] = (time.perf_counter() - turn.started) * MS
        return Answer(
            answer=text,
            sources=build_sources(tracker.matched),
            relatedDocs=build_related_docs(turn.chunks),
            citations=tracker.citations,
            confidence=confidence,
            metadata={
                "conversation_id": turn.conversation_id,
                "message_id": turn.message_id,
                "mode": mode,
                "extractive": mode == "extractive",
                "model": model,
                "chunksRetrieved": len(turn.chunks),
                "context_chunk_ids": [chunk.chunk_id for chunk in turn.chunks],
                "unmatched_citations": tracker.unmatched,
                "avg_relevance": turn.gate.avg_relevance if turn.gate else 0.0,
                "retrieval_cache_hit": turn.cache_hit,
                "pipeline": turn.pipeline,
                "tokens": tokens,
                "latencies_ms": {stage: round(ms, 1) for stage, ms in turn.latencies.items()},
            },
        )

    def _no_results_reason(self, turn: _Turn) -> str:
        if turn.gate is not None and not turn.gate.meets_threshold:
            return (f"No source reached the relevance threshold {turn.gate.min_relevance:.0%} "
                    f"(best average {turn.gate.avg_relevance:.0%})")
        return "The pipeline selected no document passage"


def _done_data(answer: Answer) -> dict[str, Any]:
    """Seed 001's ``done`` payload plus token counts, latency and the whole response."""
    meta = answer.metadata
    tokens = meta["tokens"]
    counts = [tokens.get("prompt_tokens"), tokens.get("completion_tokens")]
    total = sum(count for count in counts if count) or None
    return {"conversation_id": meta["conversation_id"], "message_id": meta["message_id"],
            "prompt_tokens": tokens.get("prompt_tokens"), "completion_tokens": tokens.get("completion_tokens"),
            "total_tokens": total, "latency_ms": meta["latencies_ms"]["total"],
            "unmatched_citations": meta["unmatched_citations"], "response": answer.model_dump()}
