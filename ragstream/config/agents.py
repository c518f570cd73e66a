"""``agents``: the LLM agents A0 and A2..A5 of the pipeline (docs/pipeline.md)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from ragstream.config.base import ConfigSection


class AgentSettings(ConfigSection):
    """Settings shared by every LLM agent (A2..A5)."""

    max_tokens: int = Field(256, description="Cap on generated tokens per agent call.")
    field_chars: int = Field(
        2000, description="Characters of each prompt field (task, context, ...) sent to the agent.")


class A3GateSettings(AgentSettings):
    """A3_NLI_Gate: deterministic pre-filter and fallback thresholds."""

    max_candidates: int = Field(80, description="Working set: reranked candidates the gate looks at.")
    min_chunk_chars: int = Field(20, description="Chunks shorter than this many characters (stripped) are dropped as empty.")
    duplicate_cosine: float = Field(0.95, description="Cosine at or above which a chunk duplicates a kept one.")
    offtopic_cosine: float = Field(0.1, description="Fallback: cosine to the prompt below which a chunk is off-topic.")
    snippet_chars: int = Field(300, description="Characters of each chunk shown to the LLM.")
    max_tokens: int = Field(512, description="Cap on generated tokens per agent call.")


class A4CondenserSettings(AgentSettings):
    """A4_Condenser: the extractive fallback (the selection's budget is ``answer.context_tokens``)."""

    sentences_per_chunk: int = Field(3, description="Fallback: prose sentences quoted per chunk.")
    sentence_max_chars: int = Field(300, description="Fallback: longer sentences are cut at this many characters.")
    focus: Literal["question", "leading"] = Field(
        "question", description="Fallback: which sentences of a chunk become S_CTX facts. 'question': the ones "
        "closest to the question (best cosine to its query vectors), all facts ordered best first, so the answering "
        "model reads the strongest evidence of every attachment before the attachments; 'leading': each chunk's "
        "first sentences in attachment order (also used when the embedder is unavailable).")
    snippet_chars: int = Field(600, description="Characters of each chunk shown to the LLM.")
    max_tokens: int = Field(512, description="Cap on generated tokens per agent call.")


class AgentsConfig(ConfigSection):
    """The LLM agents of the pipeline; each calls the LLM only when ``llm.enabled`` and it is in ``pipeline.llm_stages``."""

    a0: AgentSettings = AgentSettings()
    a2: AgentSettings = AgentSettings()
    a3: A3GateSettings = A3GateSettings()
    a4: A4CondenserSettings = A4CondenserSettings()
    a5: AgentSettings = AgentSettings()
