"""``pipeline`` and ``preprocessing``: the SuperPrompt pipeline's caps and A0's schema (docs/pipeline.md)."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import Field

from ragstream.config.base import ConfigSection

LLMStageKey = Literal["a0", "a2", "a3", "a4", "a5"]
"""The keys of the stages that may call the LLM: the values ``pipeline.llm_stages`` accepts (the stage registry,
``ragstream.pipeline.stages``, checks at import that its stages' keys are exactly these)."""


class PipelineLimits(ConfigSection):
    """The pipeline's N-constants (soft caps, docs/pipeline.md)."""

    N0_QUERY_PIECES: int = Field(
        5, description="Retrieval: searches per question at most: the whole query plus up to this many minus one "
        "groups of its sentences.")
    N1_RETR_MAX_CANDIDATES: int = Field(
        200, description="Retrieval: candidates each query piece fetches and the fused list keeps at most.")
    N2_RERANK_TOP_K: int = Field(50, description="ReRanker: the head of Retrieval's list it reorders and passes on.")
    N3_FINAL_SELECTION_MAX: int = Field(
        3, ge=1, description="Attachments the answering model reads at most (A4 also stops at the context budget); "
        "why 3: docs/configuration.md. Larger models may read more.")
    N3_PER_DOCUMENT_MAX: int = Field(
        0, ge=0, description="Attachments from one document at most (0: no limit); the next-ranked chunk of "
        "another document takes the place. Off by default: an answer from a long Markdown page often needs several "
        "of its chunks (docs/configuration.md).")
    coverage_margin: float = Field(
        0.5, ge=0, description="A4: when the next candidate comes from a document already selected, a candidate "
        "of a document not yet selected whose ReRanker score (the 0..1 blend) is at most this much lower takes its "
        "place (0: off). Why the default: docs/ranking.md.")
    N4_RECENT_CONV_MAX_PAIRS: int = Field(
        10, description="Question and answer pairs of the conversation kept and shown to the answering model at most.")
    logavgexp_tau: float = Field(9.0, description="Temperature of LogAvgExp score aggregation.")
    split_min_words: int = Field(
        40, ge=1, description="Retrieval searches a query shorter than this many words whole; longer ones also by "
        "sentence groups. Short questions are one need, and splitting them at abbreviation dots ('H. pylori') only "
        "adds noise.")
    llm_stages: list[LLMStageKey] = Field(
        default_factory=list,
        description="Agent stages that call the LLM (when llm.base_url is set), by their keys in the stage "
        "registry (ragstream/pipeline/stages.py); the others run their deterministic rules. Off by default "
        "(docs/configuration.md says why). a0: the LLM rewrites a question asked in a conversation into a "
        "standalone one.",
    )
    followup_max_words: int = Field(
        8, ge=1, description="A0: a question of at most this many words that opens with a connective ('and', "
        "'what about') or points back ('it', 'that') is a follow-up, rewritten with the conversation's topic.")
    followup_fragment_words: int = Field(
        2, ge=0, description="A0: a question of at most this many words ('credentials?') asked in a conversation "
        "is a fragment of it: a follow-up even without a connective or pronoun.")
    followup_topic_terms: int = Field(
        6, ge=1, description="A0: at most this many key terms of the conversation's topic carried into a follow-up.")


class PreprocessingConfig(ConfigSection):
    """A0_PreProcessing: the header-mapping ladder."""

    prompt_schema: Path | None = Field(
        None, description="A prompt_schema.json to use instead of the packaged ragstream/pipeline/prompt_schema.json."
    )
