"""The stage registry: the one place that says what each pipeline stage is (docs/pipeline.md).

Per stage: its button name, its order (its place in :data:`STAGES`), the module that runs it, its
history entry, the lifecycle stage it sets, the ``SuperPrompt`` fields it reads and writes, the
``extras`` keys it logs, its N-cap, and whether it may call the LLM (its key in
``pipeline.llm_stages``). The controller, the invariant checks, the config's ``pipeline.llm_stages``
and the pipeline page (``GET /api/pipeline/stages?detail=true``) read it; the controller checks after
every stage that it wrote only what it declares here.

Adding a stage: one :class:`StageSpec` in :data:`STAGES` (and its entry in the ``HistoryEntry``
literal, checked against it on import) plus its module with ``inputs`` and ``run``.

A leaf module: it imports nothing from ragstream, so the config can import it without a cycle.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal, get_args

from ragstream.config.pipeline import LLMStageKey

Stage = Literal["raw", "preprocessed", "a2", "retrieval", "reranked", "a3", "a4", "a5"]
"""The lifecycle vocabulary of ``SuperPrompt.stage``, in order (``raw`` before any stage ran)."""

HistoryEntry = Literal["preprocessed", "a2", "retrieval", "reranked", "a3", "a4", "a5", "prompt_builder"]
"""The entry each stage appends to ``SuperPrompt.history_of_stages``, in order."""


RAW: Stage = "raw"
"""``SuperPrompt.stage`` before any stage ran."""

BOOKKEEPING: frozenset[str] = frozenset({"stage", "history_of_stages", "stage_reports"})
"""Fields every stage writes for itself: its history entry, the lifecycle stage and its own report."""

LOGS = "extras"
"""The field of the per-stage logs (display only): a stage writes only its declared keys there."""


@dataclass(frozen=True)
class StageSpec:
    """What one stage is: everything the controller, the invariants, the config and the UI know of it."""

    name: str
    """The button name (``A0_PreProcessing``); it and its prefix (``a0``) select the stage."""
    module: str
    """The module under ``ragstream.pipeline`` that holds the stage's ``inputs(ctx)`` and ``run(sp, inputs)``."""
    entry: HistoryEntry
    """Its entry in ``history_of_stages``, its key in ``stage_reports`` and, for a view stage, in
    ``views_by_stage``."""
    sets_stage: Stage | None
    """The lifecycle stage it sets (``None``: it keeps the stage, as Prompt_Builder does)."""
    reads: frozenset[str]
    """``SuperPrompt`` fields it reads (besides those it writes and the bookkeeping)."""
    writes: frozenset[str]
    """``SuperPrompt`` fields it writes (besides the bookkeeping and its logs); nothing else may change."""
    logs: frozenset[str] = field(default_factory=frozenset)
    """Its keys in ``extras``: logs for people, never read by a later stage, the answer path or the UI."""
    cap: str | None = None
    """The ``pipeline`` limit (a ``PipelineLimits`` field) its view may not exceed."""
    llm_key: LLMStageKey | None = None
    """Its key in ``pipeline.llm_stages`` when it may call the LLM (and in ``agents`` for its settings)."""
    summary: str = ""
    """What it does, in a few words, for people (the pipeline page)."""

    @property
    def writes_view(self) -> bool:
        """True when it writes its view: ``views_by_stage[entry]``, an ordered list of chunk ids."""
        return "views_by_stage" in self.writes

    @property
    def writes_scores(self) -> bool:
        """True when its view carries scores (``scores_by_stage[entry]``)."""
        return "scores_by_stage" in self.writes

    @property
    def aliases(self) -> frozenset[str]:
        """Names that select it: the full name, its prefix (``a0``, ``reranker``) and its entry, casefolded."""
        return frozenset({self.name.casefold(), self.name.split("_")[0].casefold(), self.entry})


def _fields(*names: str) -> frozenset[str]:
    return frozenset(names)


PREVIEW_READS = _fields("body", "hard_rules", "selected_text", "S_CTX_MD")
"""What the ``prompt_ready`` preview (``render.preview``) reads."""
SEARCH_READS = _fields("body", "rewritten_query")
"""What the searching stages read for their query (``query_pieces.search_body``)."""

A0_PREPROCESSING = StageSpec(
    name="A0_PreProcessing", module="a0_preprocessing", entry="preprocessed", sets_stage="preprocessed",
    reads=_fields("user_text", "recentConversation") | PREVIEW_READS,
    writes=_fields("body", "user_given_fields", "unknown_attributes", "rewritten_query", "prompt_ready"),
    logs=_fields("a0", "rewrite"), llm_key="a0",
    summary="the prompt's fields from its headers; a follow-up rewritten to stand alone")
A2_PROMPT_SHAPER = StageSpec(
    name="A2_PromptShaper", module="a2_prompt_shaper", entry="a2", sets_stage="a2",
    reads=_fields("user_given_fields") | PREVIEW_READS, writes=_fields("body", "prompt_ready"),
    logs=_fields("a2", "a2_decisions"), llm_key="a2",
    summary="system, audience, tone, depth and confidence")
RETRIEVAL = StageSpec(
    name="Retrieval", module="retrieval_stage", entry="retrieval", sets_stage="retrieval",
    reads=_fields("recentConversation") | SEARCH_READS,
    writes=_fields("base_context_chunks", "views_by_stage", "scores_by_stage", "query_pieces", "retrieval_mode",
                   "malformed_chunks", "retriever_scores"),
    logs=_fields("retrieval"), cap="N1_RETR_MAX_CANDIDATES",
    summary="the hybrid search's candidates for the query's pieces and the conversation")
RERANKER = StageSpec(
    name="ReRanker", module="reranker", entry="reranked", sets_stage="reranked",
    reads=_fields("base_context_chunks", "retriever_scores") | SEARCH_READS,
    writes=_fields("views_by_stage", "scores_by_stage", "rerank"),
    logs=_fields("reranker"), cap="N2_RERANK_TOP_K",
    summary="the head of the candidates re-ordered by the cross-encoder")
A3_NLI_GATE = StageSpec(
    name="A3_NLI_Gate", module="a3_nli_gate", entry="a3", sets_stage="a3",
    reads=_fields("base_context_chunks", "query_pieces") | SEARCH_READS,
    writes=_fields("views_by_stage", "final_selection_ids", "chunk_decisions"),
    logs=_fields("a3"), llm_key="a3",
    summary="the candidates kept: empty, duplicate and off-topic chunks dropped")
A4_CONDENSER = StageSpec(
    name="A4_Condenser", module="a4_condenser", entry="a4", sets_stage="a4",
    reads=_fields("base_context_chunks", "recentConversation", "query_pieces", "retrieval_mode", "scores_by_stage")
    | PREVIEW_READS,
    writes=_fields("S_CTX_MD", "final_selection_ids", "views_by_stage", "prompt_ready"),
    logs=_fields("a4"), cap="N3_FINAL_SELECTION_MAX", llm_key="a4",
    summary="the final selection, within the context budget")
A5_FORMAT_ENFORCER = StageSpec(
    name="A5_Format_Enforcer", module="a5_format_enforcer", entry="a5", sets_stage="a5",
    reads=_fields("final_selection_ids", "base_context_chunks") | PREVIEW_READS,
    writes=_fields("body", "hard_rules", "format_kind", "prompt_ready"),
    logs=_fields("format_enforcer"), llm_key="a5",
    summary="the answer's format and hard rules")
PROMPT_BUILDER = StageSpec(
    name="Prompt_Builder", module="prompt_builder", entry="prompt_builder", sets_stage=None,
    reads=_fields("body", "hard_rules", "selected_text", "final_selection_ids", "base_context_chunks", "S_CTX_MD",
                  "views_by_stage", "scores_by_stage",
                  "recentConversation", "collection_instructions"),
    writes=_fields("System_MD", "Prompt_MD", "Attachments_MD", "prompt_ready", "messages", "prompt_tokens"),
    logs=_fields("prompt_builder"),
    summary="the messages the answering model reads")

STAGES: tuple[StageSpec, ...] = (A0_PREPROCESSING, A2_PROMPT_SHAPER, RETRIEVAL, RERANKER, A3_NLI_GATE,
                                 A4_CONDENSER, A5_FORMAT_ENFORCER, PROMPT_BUILDER)
"""Every stage, in the order it runs."""

STAGE_NAMES: tuple[str, ...] = tuple(spec.name for spec in STAGES)
"""The button names, in order."""
HISTORY_ORDER: tuple[HistoryEntry, ...] = tuple(spec.entry for spec in STAGES)
"""The history entries, in order: a SuperPrompt's history is always a prefix of it."""
STAGE_ORDER: tuple[Stage, ...] = (RAW, *(spec.sets_stage for spec in STAGES if spec.sets_stage is not None))
"""The lifecycle stages, in order."""
VIEW_STAGES: tuple[HistoryEntry, ...] = tuple(spec.entry for spec in STAGES if spec.writes_view)
"""The stages that write a view into ``views_by_stage``, in order."""
LLM_STAGE_KEYS: tuple[LLMStageKey, ...] = tuple(spec.llm_key for spec in STAGES if spec.llm_key is not None)
"""The stages that may call the LLM (the values ``pipeline.llm_stages`` accepts), in order."""
BUILT: HistoryEntry = PROMPT_BUILDER.entry
"""History entry of Prompt_Builder, which renders the prompt but introduces no new lifecycle stage."""


def spec_of(entry: str) -> StageSpec:
    """The stage whose history entry is ``entry``; raises KeyError for an unknown entry."""
    for spec in STAGES:
        if spec.entry == entry:
            return spec
    raise KeyError(entry)


def find_stage(name: str) -> StageSpec | None:
    """The stage ``name`` selects (its name, prefix or entry, case-insensitive), ``None`` when none does."""
    wanted = name.strip().casefold()
    return next((spec for spec in STAGES if wanted in spec.aliases), None)


def view_parent(spec: StageSpec) -> HistoryEntry | None:
    """The view ``spec``'s view narrows (the previous view stage's), ``None`` for the first view or no view."""
    if not spec.writes_view:
        return None
    earlier = VIEW_STAGES[: VIEW_STAGES.index(spec.entry)]
    return earlier[-1] if earlier else None


def writers(field_name: str) -> tuple[StageSpec, ...]:
    """The stages that write SuperPrompt field ``field_name``, in order."""
    return tuple(spec for spec in STAGES if field_name in spec.writes)


def describe(spec: StageSpec) -> dict[str, Any]:
    """One stage as JSON for the UI and the HTTP API (``GET /api/pipeline/stages?detail=true``)."""
    return {
        "name": spec.name, "order": STAGES.index(spec) + 1, "entry": spec.entry, "sets_stage": spec.sets_stage,
        "reads": sorted(spec.reads), "writes": sorted(spec.writes), "logs": sorted(spec.logs),
        "view": spec.writes_view, "scored": spec.writes_scores, "view_parent": view_parent(spec),
        "cap": spec.cap, "llm_key": spec.llm_key, "summary": spec.summary,
    }


def _check_registry() -> None:
    """The literals above spell the registry's values (a type checker needs them spelled out)."""
    if get_args(HistoryEntry) != HISTORY_ORDER:
        raise AssertionError(f"HistoryEntry {get_args(HistoryEntry)} differs from the registry's {HISTORY_ORDER}")
    if get_args(Stage) != STAGE_ORDER:
        raise AssertionError(f"Stage {get_args(Stage)} differs from the registry's {STAGE_ORDER}")
    if get_args(LLMStageKey) != LLM_STAGE_KEYS:
        raise AssertionError(f"LLMStageKey {get_args(LLMStageKey)} differs from the registry's {LLM_STAGE_KEYS}")
    for index, spec in enumerate(STAGES):
        shared = [other.name for other in STAGES[index + 1:] if spec.aliases & other.aliases]
        if shared:
            raise AssertionError(f"{spec.name} shares a name with {shared}")


_check_registry()
