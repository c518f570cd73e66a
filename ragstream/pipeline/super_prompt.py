"""``SuperPrompt``: the one state object every pipeline stage reads and returns (docs/pipeline.md).

Its stage vocabulary (``Stage``, ``HistoryEntry``) comes from the stage registry
(:mod:`ragstream.pipeline.stages`), which also says which stage writes which field."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from ragstream.models import Chunk
from ragstream.pipeline.stages import HistoryEntry, Stage, spec_of


class ConversationPair(BaseModel):
    """One user turn and the assistant's answer to it."""

    model_config = ConfigDict(frozen=True)

    user: str
    assistant: str = ""


class PromptMessage(BaseModel):
    """One chat message of the rendered prompt, exactly as the answering model receives it."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    role: Literal["system", "user"]
    content: str


StageMode = Literal["llm", "deterministic", "function"]
"""How a stage ran: its LLM agent, the agent's deterministic fallback, or a plain function."""


class StageReport(BaseModel):
    """What one stage did, where the user looks (CLI, pipeline page, answer metadata).

    ``fallback`` is True when a stage that was meant to use a model (the LLM agent, the embedder,
    a cross-encoder) ran its deterministic replacement instead; ``reason`` says why.
    """

    model_config = ConfigDict(extra="forbid")

    mode: StageMode
    fallback: bool = False
    reason: str | None = None
    model: str | None = None
    llm_calls: int = Field(0, description="LLM requests the stage made (retries not counted).")


class ScoreSummary(BaseModel):
    """The lowest, highest and mean of the scores a model gave (all 0 when it scored nothing)."""

    model_config = ConfigDict(extra="forbid")

    count: int = Field(0, description="How many scores.")
    min: float = 0.0
    max: float = 0.0
    mean: float = 0.0


class RerankDetails(BaseModel):
    """The ReRanker's evidence for the inspector: both scores of each scored chunk and how far it moved."""

    model_config = ConfigDict(extra="forbid")

    backend: str = Field("none", description="cross_encoder, bi_encoder, or none (the retrieval order was kept).")
    ranking: str = Field("blend", description="blend (cross-encoder and fused score) or learned (the ranking model, "
                         "pages first; docs/ranking.md).")
    weight: float = Field(0.0, description="Share of the cross-encoder score in the final score.")
    candidates_scored: int = Field(0, description="Chunks the model scored (the head of the retrieval view).")
    skipped: str | None = Field(None, description="Why the model did not run although it loaded (a decisive ranking).")
    cross_scores: dict[str, float] = Field(default_factory=dict, description="The model's raw score per scored chunk id.")
    relevance: dict[str, float] = Field(
        default_factory=dict, description="0..1 relevance per scored chunk id: the sigmoid of the cross-encoder's logit "
        "(a bi-encoder's cosine, clipped to 0..1).")
    score_summary: ScoreSummary = Field(
        default_factory=ScoreSummary, description="min, max and mean of the raw scores the model gave.")
    relevance_summary: ScoreSummary = Field(
        default_factory=ScoreSummary, description="min, max and mean of the 0..1 relevance.")
    fused_scores: dict[str, float] = Field(default_factory=dict, description="The retrieval score per scored chunk id.")
    moved: dict[str, int] = Field(
        default_factory=dict, description="Per scored chunk id: retrieval rank minus reranked rank (positive: moved up).")


class RetrieverScores(BaseModel):
    """Each retriever's own score of one retrieved chunk for the whole query (None: that retriever did not return it)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    dense: float | None = Field(None, description="The dense cosine.")
    bm25: float | None = Field(None, description="The BM25 score.")


class SuperPrompt(BaseModel):
    """The canonical state carrier of the pipeline; serialises to and from JSON losslessly.

    Stages mutate it in place and return it. Chunks are immutable and held once, in
    ``base_context_chunks``; stages express ranking and filtering as id lists in ``views_by_stage``.
    """

    model_config = ConfigDict(extra="forbid")

    stage: Stage = "raw"
    history_of_stages: list[HistoryEntry] = Field(
        default_factory=list, description="Append-only: each stage's entry as it completes."
    )
    user_text: str = Field("", description="The raw prompt as the user wrote it.")
    body: dict[str, str] = Field(default_factory=dict, description="Canonical prompt fields (task, context, ...).")
    extras: dict[str, Any] = Field(
        default_factory=dict, description="Per-stage logs for people (JSON values), under the keys each stage "
        "declares in the stage registry; nothing is read back from them.")
    recentConversation: list[ConversationPair] = Field(  # noqa: N815 - its name in the SuperPrompt JSON of the pipeline routes
        default_factory=list, description="Earlier turn pairs, oldest first."
    )
    base_context_chunks: list[Chunk] = Field(
        default_factory=list, description="The authoritative, de-duplicated set of retrieved chunks."
    )
    views_by_stage: dict[str, list[str]] = Field(
        default_factory=dict, description="Per stage (retrieval, reranked, a3, a4): ordered chunk ids."
    )
    scores_by_stage: dict[str, list[float]] = Field(
        default_factory=dict, description="Per ranked view (retrieval, reranked): the score of each id, same order."
    )
    final_selection_ids: list[str] = Field(
        default_factory=list, description="The chunk ids that feed S_CTX_MD and Attachments_MD."
    )
    selected_text: str = Field("", description="Text the user selected to ask about (quoted in the prompt).")
    user_given_fields: list[str] = Field(
        default_factory=list, description="Body fields the user wrote as headers (A0); A2 never overrides them."
    )
    unknown_attributes: dict[str, str] = Field(
        default_factory=dict, description="A0: headers that map to no field of the prompt schema, with their text "
        "(kept out of the body and the prompt).")
    rewritten_query: str = Field(
        "", description="A0: a follow-up question rewritten to stand alone with the conversation (empty when the "
        "task stands alone); retrieval, reranking and the gate search with it instead of the task.")
    query_pieces: list[str] = Field(default_factory=list, description="The pieces Retrieval searched with.")
    malformed_chunks: dict[str, str] = Field(
        default_factory=dict, description="Retrieval: stored chunks the search found but left out because their "
        "stored point is malformed (no text, a missing or mistyped field), by id, with the reason.")
    retrieval_mode: str = Field("", description="hybrid, or bm25 when the embedder was unavailable.")
    retriever_scores: dict[str, RetrieverScores] = Field(
        default_factory=dict, description="Retrieval: per chunk id the whole query's search returned, the dense and "
        "BM25 scores before fusion (the learned ranker's features, docs/ranking.md).")
    rerank: RerankDetails = Field(default_factory=RerankDetails, description="The ReRanker's scores and moves.")
    chunk_decisions: dict[str, str] = Field(
        default_factory=dict, description="A3's keep/drop decision per chunk id of its working set."
    )
    hard_rules: list[str] = Field(default_factory=list, description="A5's rules for the answer, rendered in System_MD.")
    collections: list[str] = Field(
        default_factory=list, description="The collections (names) the prompt's searches are scoped to; empty: every "
        "collection its user may read (docs/collections.md).")
    collection_instructions: list[str] = Field(
        default_factory=list, description="The instructions of the collections the question is scoped to, as "
        "'name: text' (given with the question, docs/collections.md); Prompt_Builder renders them in System_MD.")
    format_kind: str = Field("", description="A5's format kind (a kind of the prompt schema, or custom).")
    stage_reports: dict[str, StageReport] = Field(
        default_factory=dict, description="Per history entry: how that stage ran (model, fallback and why)."
    )
    System_MD: str = ""
    Prompt_MD: str = ""
    S_CTX_MD: str = ""
    Attachments_MD: str = ""
    prompt_ready: str = Field("", description="The composed prompt (a preview until Prompt_Builder runs).")
    prompt_tokens: int | None = Field(
        None, description="Prompt_Builder: tokens of ``messages`` for the answering model (its tokenizer or the "
        "estimate); None before it ran.")
    messages: list[PromptMessage] = Field(
        default_factory=list,
        description="Prompt_Builder's chat messages: System_MD as the system message; Prompt_MD, S_CTX_MD, "
        "Attachments_MD and the recent conversation as the user turn. The answering model reads exactly these.",
    )

    def advance(self, entry: HistoryEntry) -> None:
        """Record a completed stage: append to the history and, for lifecycle stages, set ``stage``."""
        self.history_of_stages.append(entry)
        lifecycle = spec_of(entry).sets_stage
        if lifecycle is not None:
            self.stage = lifecycle

    def report(self, entry: HistoryEntry, mode: StageMode, *, fallback: bool = False, reason: str | None = None,
               model: str | None = None, llm_calls: int = 0) -> None:
        """Record how stage ``entry`` ran."""
        self.stage_reports[entry] = StageReport(mode=mode, fallback=fallback, reason=reason, model=model,
                                                llm_calls=llm_calls)

    def fallbacks(self) -> dict[str, str]:
        """The stages that fell back, with their reasons."""
        return {entry: report.reason or "" for entry, report in self.stage_reports.items() if report.fallback}

    def chunk_map(self) -> dict[str, Chunk]:
        """``base_context_chunks`` by id."""
        return {chunk.chunk_id: chunk for chunk in self.base_context_chunks}

    def chunks(self, ids: list[str]) -> list[Chunk]:
        """The chunks of ``ids``, in that order."""
        by_id = self.chunk_map()
        return [by_id[chunk_id] for chunk_id in ids]
