"""``ask`` and ``stream_answer``: one road from a question to a cited answer (docs/answers.md).

validate -> SuperPrompt through the eight stages -> the no-results gate on the pipeline's own
selection -> the answering model reads Prompt_Builder's messages (or, without an LLM, the
extractive answer reads the same attachments) -> citations against the attachment numbers ->
confidence -> the response and its stream events.

One deadline per question (``answer.deadline_seconds``) bounds every LLM call and retry of the
question, agent stages included. When the LLM is unavailable or out of time the answer degrades to
the extractive one and says so (``metadata.mode``, ``metadata.degraded_reason``, the ``done``
event); when the embedder is unavailable retrieval runs BM25 only and the answer says that too.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Generator, Iterator, Sequence
from typing import TYPE_CHECKING, Any, Literal, Protocol

from ragstream import metrics
from ragstream.answer import no_retrieval
from ragstream.answer.cache import RetrievalCache
from ragstream.answer.citation_inference import infer_citations
from ragstream.answer.citations import (
    CitationResolver,
    CitationTracker,
    build_related_docs,
    build_sources,
    track_text,
)
from ragstream.answer.cite_grammar import answer_grammar
from ragstream.answer.confidence import answer_confidence, with_support
from ragstream.answer.conversation import ConversationStore
from ragstream.answer.echo import may_still_restate, restates_question
from ragstream.answer.extractive import SentenceScore, extractive_answer
from ragstream.answer.llm_line import drain, through_line
from ragstream.answer.models import (
    Answer,
    Citation,
    CitationEvent,
    Confidence,
    DocumentChunk,
    QueuedEvent,
    RAGContext,
    SentenceSupport,
    StreamEvent,
    SupportEvent,
)
from ragstream.answer.retrieve_contract import Retriever, relevance, to_document_chunk
from ragstream.answer.sentence_scorer import configured_scorer, learned_score
from ragstream.answer.sentence_support.checker import SupportChecker, SupportModels
from ragstream.answer.sentence_support.run import SupportRun, finish_support, support_summary
from ragstream.answer.streaming import citation_payload, done_event, stream_events
from ragstream.answer.turn import MS, Turn, asked, fragment_reason, llm_calls, llm_reason, tokens_of
from ragstream.config import RagstreamConfig
from ragstream.errors import (
    EmbeddingFailureError,
    InvalidQueryError,
    LLMError,
    NoRelevantContextError,
    NoRetrievalResultsError,
    VectorDBUnavailableError,
    check_unicode,
)
from ragstream.models import LazyScope
from ragstream.pipeline.context import EmbedderSource
from ragstream.pipeline.render import COPIED_HEADER_MARKERS
from ragstream.pipeline.stages import RETRIEVAL
from ragstream.pipeline.super_prompt import SuperPrompt
from ragstream.providers.deadline import Deadline
from ragstream.retrieval.searcher import validate_query
from ragstream.store.base import Snapshot

if TYPE_CHECKING:  # the openai SDK loads only when an LLM is configured
    from ragstream.providers.llm_client import LLMClient
    from ragstream.providers.llm_queue import Ticket
    from ragstream.providers.rerankers.base import Reranker

Mode = Literal["llm", "extractive", "no_results", "no_retrieval"]
LENGTH = "length"
BM25 = "bm25"


class PipelineRunner(Protocol):
    """Runs the eight stages on a fresh SuperPrompt within one question's deadline, every search
    reading ``snapshot`` (or one snapshot taken when the pipeline starts) and only the documents
    ``user`` may see (every document when None), in the collections (ids) ``collections`` names when given,
    each stage's milliseconds into ``timings`` when given."""

    def __call__(self, sp: SuperPrompt, deadline: Deadline, snapshot: Snapshot | None = None,
                 user: str | None = None, collections: Sequence[str] | None = None,
                 timings: dict[str, float] | None = None) -> SuperPrompt: ...


class AnswerService:
    """The answer path: the pipeline, the answering model, citations and conversation memory."""

    def __init__(self, config: RagstreamConfig, *, pipeline: PipelineRunner, embedder: EmbedderSource,
                 conversations: ConversationStore, llm: LLMClient | None, retriever: Retriever,
                 cache: RetrievalCache, cross_encoder: Callable[[], Reranker | None] | None = None) -> None:
        self._config = config.answer
        self._cross_encoder = cross_encoder
        self._stop = COPIED_HEADER_MARKERS if config.answer.stop_at_copied_headers else ()
        self._grammar = answer_grammar(config)  # answer.citation_grammar
        self._pipeline = pipeline
        self._embedder = embedder
        self.conversations = conversations
        self.llm = llm
        self.retriever = retriever
        self.cache = cache

    # -- retrieve (the standalone context contract) -------------------------------------------------

    def retrieve(self, query: str, context_key: str, max_chunks: int | None = None,
                 min_relevance: float | None = None, snapshot: Snapshot | None = None,
                 scope: LazyScope | None = None) -> RAGContext:
        """Chunks of dense relevance >= ``min_relevance`` among the versions committed at ``snapshot``
        that ``scope``'s user may see (in its collections), served from the cache for the same arguments, user,
        resolved scope and commit sequence."""
        user = scope.user if scope else None
        collections = scope.resolved().collections if scope else None
        key = (query, context_key, max_chunks, min_relevance, snapshot.sequence if snapshot else None, user, collections)
        return self.cache.get_or_compute(key, lambda: self.retriever.retrieve(
            query, context_key, max_chunks=max_chunks, min_relevance=min_relevance, snapshot=snapshot, user=user,
            collections=collections))[0]

    # -- answers ---------------------------------------------------------------------------------

    def ask(self, question: str, conversation_id: str | None = None, selected_text: str | None = None,
            snapshot: Snapshot | None = None, scope: LazyScope | None = None) -> Answer:
        """Answer ``question`` in one piece from the versions committed at ``snapshot`` (by default,
        when the pipeline starts) of the documents ``scope``'s user may see, in that user's conversation
        (``scope`` is resolved inside the pipeline's retried attempt)."""
        turn = self._prepare(question, conversation_id, selected_text, snapshot, scope)
        if turn.no_results_reason is not None:
            text = self._config.no_results_message
            return self._answer(turn, text, "no_results", None, {}, self._tracker(turn, text))
        started = time.perf_counter()
        if turn.store_down is not None:
            outage = self._config.store_outage
            text, model, tokens = no_retrieval.answer(self.llm, question, no_retrieval.notice(turn.store_down, outage),
                                                      outage, turn.deadline, lambda e: turn.degraded.append(llm_reason(e)))
            turn.lap("generation", started)
            return self._finish(turn, text, "no_retrieval", model, tokens, self._tracker(turn, text))
        if self.llm is not None:
            llm = self.llm
            try:
                waited = drain(through_line(llm, lambda: llm.chat(
                    turn.messages, deadline=turn.deadline, stop=self._stop, grammar=self._grammar(len(turn.chunks)),
                    retry_rate_limits=False), turn.deadline, turn.degraded))
            except LLMError as error:
                turn.degraded.append(llm_reason(error))
                waited = None
            if waited is not None:
                result = waited[0]
                waited[1].release()
                not_an_answer = self._not_an_answer(turn, result.text)
                if not_an_answer is None:
                    turn.lap("generation", started)
                    turn.truncated = result.finish_reason == LENGTH
                    turn.incomplete = turn.truncated
                    tracker = self._tracker(turn, result.text)
                    self._infer_citations(turn, result.text, tracker)
                    return self._answer(turn, result.text, "llm", result.model, tokens_of(result), tracker)
                turn.degraded.append(not_an_answer)  # a fragment or an echo: answered extractively below
        text = self._extractive(turn)
        turn.lap("generation", started)
        return self._answer(turn, text, "extractive", None, {}, self._tracker(turn, text))

    def _answer(self, turn: Turn, text: str, mode: Mode, model: str | None, tokens: dict[str, Any],
                tracker: CitationTracker) -> Answer:
        """The whole answer's support verdicts, then the response."""
        run = self._support_run(turn, tracker)
        if run is not None:
            self._check_support(turn, run, text, mode)
        return self._finish(turn, text, mode, model, tokens, tracker, run)

    def stream_answer(self, question: str, conversation_id: str | None = None, selected_text: str | None = None,
                      scope: LazyScope | None = None,
                      built: SuperPrompt | None = None) -> Iterator[StreamEvent]:
        """Answer ``question`` as ``token`` / ``citation`` events, then ``done`` (as :meth:`ask`); ``built``: as built."""
        turn = self._prepare(question, conversation_id, selected_text, None, scope, built)
        tracker = CitationTracker(CitationResolver(turn.chunks, self._config.citations))
        run = self._support_run(turn, tracker) if turn.store_down is None else None
        started = time.perf_counter()
        mode, deltas, ticket = yield from self._open_stream(turn)
        parts: list[str] = []
        received = [0]

        def counted() -> Iterator[str]:
            nonlocal mode
            checked = self._config.min_llm_answer_chars or self._config.echo_min_word_share is not None
            held: list[str] | None = [] if mode == "llm" and checked else None  # until it is an answer
            try:
                for delta in deltas:
                    received[0] += 1
                    if held is None:
                        yield delta
                        continue
                    held.append(delta)
                    if not self._undecided(turn, "".join(held)):
                        yield from held
                        held = None
            except LLMError as error:  # the LLM failed midway: keep what was said, marked incomplete
                turn.degraded.append(llm_reason(error))
                turn.incomplete = True
            if held is not None:  # the LLM ended (or failed) while its text could still be no answer: decide on all of it
                not_an_answer = None if turn.incomplete else self._not_an_answer(turn, "".join(held))
                if not turn.incomplete and not_an_answer is None:  # whole, and not the question again ("Yes [1].")
                    yield from held
                else:
                    if not_an_answer is not None:
                        turn.degraded.append(not_an_answer)
                    turn.incomplete, mode = False, "extractive"
                    yield self._extractive(turn)

        completed = False
        try:
            for event in stream_events(counted(), tracker, self._config.citations.max_marker_chars):
                if event.type == "token":
                    if not parts:
                        turn.first_token(started)
                    parts.append(event.token)
                yield event
                if run is not None and event.type == "token":  # a support event per sentence as it completes
                    checking = time.perf_counter()
                    verdicts = run.feed("".join(parts), mode)
                    turn.lap("support", checking)
                    for verdict in verdicts:
                        yield SupportEvent(sentence=verdict)
            completed = True
        finally:
            close = getattr(deltas, "close", None)
            if callable(close):
                close()  # the consumer stopped early: release the LLM connection
            if ticket is not None:
                ticket.release()  # the next question in line may have the model
            if not completed:  # the client left or generation failed: keep what was said, marked incomplete
                self.conversations.append(turn.conversation_id, turn.message_id, turn.question, "".join(parts),
                                          incomplete=True, owner=turn.user)
        model: str | None = None
        tokens: dict[str, Any] = {}
        if mode == "llm":
            result = deltas.result
            model, tokens = result.model, tokens_of(result)
            turn.truncated = result.finish_reason == LENGTH
            turn.incomplete = turn.incomplete or turn.truncated
            if result.completion_tokens is None:  # the server sent no usage: one delta is about one token
                tokens["completion_tokens"], tokens["completion_tokens_estimated"] = received[0], True
            for citation in self._infer_citations(turn, "".join(parts), tracker):
                yield CitationEvent(citation=citation_payload(citation))
        elif mode == "no_retrieval":
            model, tokens = deltas.model, deltas.tokens
        turn.lap("generation", started)
        if run is not None:
            for verdict in self._check_support(turn, run, "".join(parts), mode):
                yield SupportEvent(sentence=verdict)
        answer = self._finish(turn, "".join(parts), mode, model, tokens, tracker, run)
        if turn.first_token_ms is not None:
            metrics.record_first_token(mode, turn.first_token_ms / MS)
        yield done_event(answer)

    def _too_short(self, text: str) -> bool:
        """Whether an LLM answer is a fragment (e.g. it began by copying an attachment's header) rather than one."""
        return len(text.strip()) < self._config.min_llm_answer_chars

    def _not_an_answer(self, turn: Turn, text: str) -> str | None:
        """Why a whole LLM answer is no answer (a fragment, or only the question restated), else None."""
        if self._too_short(text):
            return fragment_reason(text)
        share = self._config.echo_min_word_share
        if share is not None and restates_question(text, asked(turn), share):
            return "the LLM's answer only restated the question"
        return None

    def _undecided(self, turn: Turn, partial: str) -> bool:
        """While an LLM answer streams in: whether it may still turn out to be no answer (shown only once not)."""
        share = self._config.echo_min_word_share
        return self._too_short(partial) or (share is not None and may_still_restate(partial, asked(turn), share))

    def _open_stream(self, turn: Turn) -> Generator[QueuedEvent, None, tuple[Mode, Any, Ticket | None]]:
        """The answer's text source: the no-results message, the LLM stream (once the waiting line lets it
        through, with its ticket), or the extractive answer."""
        if turn.no_results_reason is not None:
            return "no_results", [self._config.no_results_message], None
        if turn.store_down is not None:
            outage = self._config.store_outage
            return "no_retrieval", no_retrieval.NoRetrievalStream(
                self.llm, turn.question, no_retrieval.notice(turn.store_down, outage), outage, turn.deadline,
                lambda error: turn.degraded.append(llm_reason(error))), None
        if self.llm is not None:
            llm = self.llm
            try:
                waited = yield from through_line(llm, lambda: llm.stream_chat(
                    turn.messages, deadline=turn.deadline, stop=self._stop, grammar=self._grammar(len(turn.chunks)),
                    retry_rate_limits=False), turn.deadline, turn.degraded)
                if waited is not None:
                    return "llm", waited[0], waited[1]
            except LLMError as error:
                turn.degraded.append(llm_reason(error))
        return "extractive", [self._extractive(turn)], None

    # -- steps -------------------------------------------------------------------------------------

    def _prepare(self, question: str, conversation_id: str | None, selected_text: str | None,
                 snapshot: Snapshot | None, scope: LazyScope | None = None,
                 built: SuperPrompt | None = None) -> Turn:
        """Validate, load the conversation, run the pipeline (unless ``built``), gate on its selection."""
        user = scope.user if scope else None
        validate_query(question, self._config.max_question_chars)
        if selected_text is not None and not isinstance(selected_text, str):
            raise InvalidQueryError("selected_text must be a string")
        if selected_text and len(selected_text) > self._config.max_selected_text_chars:
            raise InvalidQueryError(f"selected_text is {len(selected_text)} characters; "
                                    f"the limit is {self._config.max_selected_text_chars}")
        check_unicode(selected_text or "", "selected_text")
        conversation_id = conversation_id or ConversationStore.new_id()
        sp = built or SuperPrompt(user_text=question, selected_text=selected_text or "")
        turn = Turn(question=question, conversation_id=conversation_id, message_id=ConversationStore.new_id(),
                     deadline=Deadline(self._config.deadline_seconds), started=time.perf_counter(), sp=sp, user=user)
        started = time.perf_counter()
        try:
            def attempt() -> SuperPrompt:  # the scope, the history and the pipeline: each may find the store down
                resolved = scope.resolved() if scope else None
                sp.collection_instructions = list(resolved.instructions) if resolved else []
                sp.recentConversation = self.conversations.recent(conversation_id, user)
                return self._pipeline(sp, turn.deadline, snapshot, user, resolved.collections if resolved else None,
                                      turn.stages_ms)

            turn.sp = built or no_retrieval.run_with_retry(attempt, self._config.store_outage, turn.deadline)
        except (NoRetrievalResultsError, NoRelevantContextError) as error:
            turn.no_results_reason = f"The pipeline found no usable context: {error.message}"
            return turn
        except VectorDBUnavailableError as error:  # still down after the retry: answer without retrieval
            turn.store_down = error
            turn.degraded.append(no_retrieval.degraded_reason(error))
            return turn
        finally:
            turn.lap("pipeline", started)
        if turn.sp.retrieval_mode == BM25:
            turn.degraded.append(turn.sp.stage_reports[RETRIEVAL.entry].reason or "embedder unavailable: BM25 only")
        self._score(turn)
        return turn

    def _score(self, turn: Turn) -> None:
        """Attachments with their relevance (best cosine to the query pieces, 0..1) and the gate."""
        sp = turn.sp
        chunks = sp.chunks(sp.final_selection_ids)
        try:
            embedder = self._embedder()
            turn.query_vectors = embedder.embed_queries(sp.query_pieces)  # cached since Retrieval
            cosines = (embedder.embed_documents([c.text for c in chunks]) @ turn.query_vectors.T).max(axis=1)
            scores = [relevance(float(value)) for value in cosines]
        except EmbeddingFailureError:
            turn.query_vectors, scores = None, [0.0] * len(chunks)  # BM25 only: no calibrated relevance
        turn.chunks = [to_document_chunk(chunk, score) for chunk, score in zip(chunks, scores, strict=True)]
        threshold = self._config.min_relevance
        if turn.query_vectors is not None and max(scores, default=0.0) < threshold:
            turn.no_results_reason = (f"No source reached the relevance threshold {threshold:.0%} "
                                      f"(best {max(scores, default=0.0):.0%})")
            turn.chunks = []

    def _extractive(self, turn: Turn) -> str:
        config = self._config
        label = config.extractive_label if not turn.degraded else config.degraded_label.format(
            reason="; ".join(turn.degraded))
        try:
            embedder = self._embedder() if turn.query_vectors is not None else None
        except EmbeddingFailureError:
            embedder = None
        chunks = turn.chunks[: config.extractive_max_chunks]
        vectors = turn.query_vectors if embedder else None
        return extractive_answer(vectors, chunks, embedder, label=label,
                                 max_sentences=config.extractive_max_sentences,
                                 min_chars=config.extractive_min_sentence_chars,
                                 max_example_chars=config.extractive_max_example_chars, prose=config.prose,
                                 score=self._sentence_score(turn, vectors, chunks, embedder))

    def _sentence_score(self, turn: Turn, vectors: Any, chunks: list[DocumentChunk],
                        embedder: Any) -> SentenceScore | None:
        """The learned sentence scorer's scores, or None for the cosine order (``answer.extractive_scorer``)."""
        scorer = configured_scorer(self._config.extractive_scorer, self._config.extractive_scorer_model)
        if scorer is None:
            return None
        reranker = self._cross_encoder() if self._cross_encoder and scorer.weighs("cross_encoder") else None
        return learned_score(scorer, turn.question, vectors, chunks, embedder, reranker, turn.deadline)

    def _tracker(self, turn: Turn, text: str) -> CitationTracker:
        """The citations of a whole answer text."""
        tracker = CitationTracker(CitationResolver(turn.chunks, self._config.citations))
        track_text(text, tracker, self._config.citations)
        return tracker

    def _infer_citations(self, turn: Turn, text: str, tracker: CitationTracker) -> list[Citation]:
        """The citations an LLM answer left out, inferred by sentence similarity (answer/citation_inference.py)."""
        return infer_citations(text, turn.chunks, tracker, self._embedder, self._config)

    def _support_run(self, turn: Turn, tracker: CitationTracker) -> SupportRun | None:
        """The support check of this turn's answer (None when ``answer.support.enabled`` is off)."""
        config = self._config.support
        if not config.enabled:
            return None

        def checker() -> SupportChecker:
            try:
                embedder = self._embedder() if turn.query_vectors is not None else None  # None: BM25 only
            except EmbeddingFailureError:
                embedder = None
            cross_encoder = self._cross_encoder() if config.cross_encoder and self._cross_encoder else None
            return SupportChecker(turn.chunks, asked(turn), tracker.resolver, config,
                                  SupportModels(embedder, cross_encoder), turn.deadline)

        return SupportRun(checker)

    def _check_support(self, turn: Turn, run: SupportRun, text: str, mode: Mode) -> list[SentenceSupport]:
        """Verdicts for the sentences that had none, then the LLM judge's revisions (when configured): those to send."""
        started = time.perf_counter()
        turn.support = finish_support(run, text, mode, self._config.support, llm=self.llm, chunks=turn.chunks,
                                      deadline=turn.deadline)
        turn.lap("support", started)
        return turn.support.sent

    def _finish(self, turn: Turn, text: str, mode: Mode, model: str | None, tokens: dict[str, Any],
                tracker: CitationTracker, run: SupportRun | None = None) -> Answer:
        """Citations, confidence, the conversation record and the response."""
        sentences = run.verdicts if run is not None else []
        cites_nothing = 0.0 if self._config.confidence.method == "calibrated" else None  # no page, none right
        if mode == "no_results":
            confidence = Confidence(level="Low", reason=turn.no_results_reason or "No relevant sources found",
                                    probability=cites_nothing)
        elif turn.store_down is not None:
            confidence = Confidence(level="Low", reason=f"The documents could not be searched: {turn.store_down.message}",
                                    probability=cites_nothing)
        else:
            confidence = answer_confidence(turn.sp, turn.chunks, tracker.matched, sentences, self._config.confidence)
            if turn.incomplete and confidence.level == "High":
                confidence = confidence.model_copy(
                    update={"level": "Medium", "reason": f"{confidence.reason}; the answer is incomplete"})
            confidence = with_support(confidence, sentences)
        if turn.store_down is None:  # else the catalog's database may be down too: no wait for it (logged at ERROR)
            self.conversations.append(turn.conversation_id, turn.message_id, turn.question, text,
                                      incomplete=turn.incomplete, owner=turn.user)
        turn.latencies["total"] = (time.perf_counter() - turn.started) * MS
        sp = turn.sp
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
                "degraded_reason": "; ".join(turn.degraded) or None,
                "incomplete": turn.incomplete,
                "truncated": turn.truncated,
                "model": model,
                "chunksRetrieved": len(turn.chunks),
                "context_chunk_ids": [chunk.chunk_id for chunk in turn.chunks],
                "unmatched_citations": tracker.unmatched,
                "malformed_chunks": [{"chunk_id": chunk_id, "reason": why} for chunk_id, why in sp.malformed_chunks.items()],
                "avg_relevance": (sum(c.relevance_score for c in turn.chunks) / len(turn.chunks)) if turn.chunks else 0.0,
                "retrieval_mode": sp.retrieval_mode or None,
                "pipeline": {"stages": list(sp.history_of_stages), "selected": len(sp.final_selection_ids),
                             "fallbacks": sp.fallbacks(),
                             "rewritten_query": sp.rewritten_query or None,
                             "llm_stages": [e for e, r in sp.stage_reports.items() if r.mode == "llm"],
                             "prompt_tokens_estimated": sp.prompt_tokens,
                             "stages_ms": dict(turn.stages_ms)},
                "llm_calls": llm_calls(sp, answer_call=self.llm is not None and mode != "no_results")
                + (turn.support.judge_calls if turn.support else 0),
                "support": support_summary(sentences, turn.support),
                "tokens": tokens,
                "latencies_ms": {stage: round(ms, 1) for stage, ms in turn.latencies.items()},
            },
            sentences=sentences,
        )
