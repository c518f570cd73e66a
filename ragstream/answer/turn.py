"""One question on its way to an answer: what the answer path knows of it, and its timings (docs/answers.md)."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from ragstream.answer.models import DocumentChunk
from ragstream.answer.sentence_support.run import SupportOutcome
from ragstream.errors import LLMError, VectorDBUnavailableError
from ragstream.pipeline.super_prompt import SuperPrompt
from ragstream.providers.deadline import Deadline

if TYPE_CHECKING:
    from ragstream.providers.llm_client import ChatCompletionResult

MS = 1000.0
TIME_TO_FIRST_TOKEN = "time_to_first_token"
"""The ``latencies_ms`` key of the time from the question's arrival to its first streamed token."""


@dataclass
class Turn:
    """One question on its way to an answer."""

    question: str
    conversation_id: str
    message_id: str
    deadline: Deadline
    started: float
    sp: SuperPrompt
    user: str | None = None
    latencies: dict[str, float] = field(default_factory=dict)
    stages_ms: dict[str, float] = field(default_factory=dict)
    """Milliseconds per pipeline stage (by history entry)."""
    chunks: list[DocumentChunk] = field(default_factory=list)
    query_vectors: np.ndarray | None = None
    no_results_reason: str | None = None
    store_down: VectorDBUnavailableError | None = None
    """The vector store stayed unavailable: answered without retrieval."""
    degraded: list[str] = field(default_factory=list)
    incomplete: bool = False
    truncated: bool = False
    support: SupportOutcome | None = None

    def lap(self, stage: str, since: float) -> float:
        """Record ``stage``'s latency since ``since``; returns now."""
        now = time.perf_counter()
        self.latencies[stage] = self.latencies.get(stage, 0.0) + (now - since) * MS
        return now

    def first_token(self, since: float) -> None:
        """The first token is out: the model's part (``first_token``, since ``since``) and the whole wait."""
        now = self.lap("first_token", since)
        self.latencies[TIME_TO_FIRST_TOKEN] = (now - self.started) * MS

    @property
    def first_token_ms(self) -> float | None:
        """Milliseconds from the question's arrival to its first streamed token (None: not streamed)."""
        return self.latencies.get(TIME_TO_FIRST_TOKEN)

    @property
    def messages(self) -> list[dict[str, Any]]:
        """Prompt_Builder's messages, as sent."""
        return [message.model_dump() for message in self.sp.messages]


def llm_calls(sp: SuperPrompt, *, answer_call: bool) -> int:
    """Logical LLM calls of the question (retries not counted): the agent stages', plus the answer's
    (made whenever an LLM is configured and there is context, whether it succeeded or not)."""
    return sum(report.llm_calls for report in sp.stage_reports.values()) + int(answer_call)


def llm_reason(error: LLMError) -> str:
    return f"LLM unavailable ({error.code}): {error.message}"


def asked(turn: Turn) -> str:
    """The question as typed and as the model read it (a follow-up rewritten into a standalone task)."""
    return f"{turn.question}\n{turn.sp.body.get('task', '')}"


def fragment_reason(text: str) -> str:
    return f"the LLM's answer was a fragment of {len(text.strip())} characters"


def tokens_of(result: ChatCompletionResult) -> dict[str, Any]:
    return {"prompt_tokens": result.prompt_tokens, "completion_tokens": result.completion_tokens}
