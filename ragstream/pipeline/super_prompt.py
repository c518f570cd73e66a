"""``SuperPrompt``: the one state object every pipeline stage reads and returns (seed 000 section 3)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from ragstream.models import Chunk

Stage = Literal["raw", "preprocessed", "a2", "retrieval", "reranked", "a3", "a4", "a5"]
"""The lifecycle vocabulary of ``SuperPrompt.stage``, in order."""

STAGE_ORDER: tuple[Stage, ...] = ("raw", "preprocessed", "a2", "retrieval", "reranked", "a3", "a4", "a5")

BUILT = "prompt_builder"
"""History entry of Prompt_Builder, which renders the prompt but introduces no new stage."""

HistoryEntry = Literal["preprocessed", "a2", "retrieval", "reranked", "a3", "a4", "a5", "prompt_builder"]

VIEW_STAGES: tuple[str, ...] = ("retrieval", "reranked", "a3", "a4")
"""The stages that write a view (an ordered list of chunk ids) into ``views_by_stage``."""


class ConversationPair(BaseModel):
    """One user turn and the assistant's answer to it."""

    model_config = ConfigDict(frozen=True)

    user: str
    assistant: str = ""


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
    extras: dict[str, Any] = Field(default_factory=dict, description="Per-stage logs and decisions (JSON values).")
    recentConversation: list[ConversationPair] = Field(  # noqa: N815 - the seed's field name
        default_factory=list, description="Earlier turn pairs, oldest first."
    )
    base_context_chunks: list[Chunk] = Field(
        default_factory=list, description="The authoritative, de-duplicated set of retrieved chunks."
    )
    views_by_stage: dict[str, list[str]] = Field(
        default_factory=dict, description="Per stage (retrieval, reranked, a3, a4): ordered chunk ids."
    )
    final_selection_ids: list[str] = Field(
        default_factory=list, description="The chunk ids that feed S_CTX_MD and Attachments_MD."
    )
    System_MD: str = ""  # noqa: N815
    Prompt_MD: str = ""  # noqa: N815
    S_CTX_MD: str = ""  # noqa: N815
    Attachments_MD: str = ""  # noqa: N815
    prompt_ready: str = Field("", description="The composed prompt (a preview until Prompt_Builder runs).")

    def advance(self, entry: HistoryEntry) -> None:
        """Record a completed stage: append to the history and, for lifecycle stages, set ``stage``."""
        self.history_of_stages.append(entry)
        if entry != BUILT:
            self.stage = entry

    def chunk_map(self) -> dict[str, Chunk]:
        """``base_context_chunks`` by id."""
        return {chunk.chunk_id: chunk for chunk in self.base_context_chunks}

    def chunks(self, ids: list[str]) -> list[Chunk]:
        """The chunks of ``ids``, in that order."""
        by_id = self.chunk_map()
        return [by_id[chunk_id] for chunk_id in ids]
