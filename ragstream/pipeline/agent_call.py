"""A stage's LLM agent (:class:`StageAgent`): run it with its deterministic fallback; record which ran and why.

A stage gets an agent only when the stage registry gives it an LLM key (``a0``, ``a2`` ... ``a5``),
and the agent calls the LLM only under that key (when it is in ``pipeline.llm_stages``).

Before the call the payload is fitted to the model's context window (the longest field is cut
until the messages plus the agent's ``max_tokens`` fit). A server that still refuses the prompt as
too long and names its window is believed: the window is remembered and the call is fitted and
sent once more. Every call carries the question's deadline.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from pydantic import BaseModel

from ragstream.agents.agent_prompt import AgentPrompt
from ragstream.agents.factory import Agent
from ragstream.errors import LLMError, LLMRequestError
from ragstream.pipeline.context import StageContext, TokenCounter
from ragstream.pipeline.stages import HistoryEntry, LLMStageKey, StageSpec
from ragstream.pipeline.super_prompt import StageMode, SuperPrompt
from ragstream.providers.context_window import window_from_error
from ragstream.providers.deadline import Deadline

LLM: StageMode = "llm"
DETERMINISTIC: StageMode = "deterministic"
MIN_FIELD_CHARS = 200
"""A payload field is never cut below this many characters; below it the call falls back instead."""
SHRINK_FACTOR = 0.8
"""How much of the longest field a fitting round keeps (beyond the measured overflow)."""


@dataclass
class AgentRecord:
    """How one agent stage ran: its LLM, or the deterministic fallback and why."""

    agent: str
    mode: StageMode
    reason: str | None = None
    model: str | None = None
    llm_attempted: bool = False
    calls: int = 0
    details: dict[str, Any] = field(default_factory=dict)

    def fall_back(self, reason: str) -> None:
        """Turn an LLM record into a fallback record with ``reason``."""
        self.mode, self.reason, self.llm_attempted = DETERMINISTIC, reason, True

    def log(self) -> dict[str, Any]:
        """The record for ``extras`` (display only)."""
        base = {"agent": self.agent, "mode": self.mode, "reason": self.reason, "model": self.model,
                "llm_attempted": self.llm_attempted}
        return {**base, **self.details}

    def report(self, sp: SuperPrompt, entry: HistoryEntry) -> None:
        """Write the stage report: a failed LLM attempt is a fallback the user is told about."""
        sp.report(entry, self.mode, fallback=self.llm_attempted and self.mode == DETERMINISTIC,
                  reason=self.reason, model=self.model if self.mode == LLM else None, llm_calls=self.calls)


class AgentSource(Protocol):
    """The pipeline's agents (``AgentFactory``): which keys may call the LLM, and the model's context window."""

    def build(self, key: str, prompt: AgentPrompt) -> Agent | None:
        """The agent for ``key``, or ``None`` when it must run deterministically."""
        ...

    def unavailable_reason(self, key: str) -> str | None:
        """Why agent ``key`` runs deterministically, or ``None``."""
        ...

    @property
    def model(self) -> str | None:
        """The model the agents call."""
        ...

    @property
    def context_window(self) -> int:
        """The model's context window in tokens."""
        ...

    def learn_context_window(self, tokens: int) -> None:
        """Believe a smaller window the server reported."""
        ...


@dataclass(frozen=True)
class StageAgent:
    """One stage's LLM agent: it calls the LLM only under the stage's own key, fits every prompt to the
    model's context window and carries the question's deadline."""

    key: LLMStageKey
    agents: AgentSource
    count_tokens: TokenCounter
    deadline: Deadline

    @property
    def context_window(self) -> int:
        """The model's context window in tokens (configured, or smaller as the server reported)."""
        return self.agents.context_window

    def call(self, prompt: AgentPrompt, payload: Mapping[str, Any]) -> tuple[BaseModel | None, AgentRecord]:
        """``(output, record)``: the validated LLM output, or ``None`` when the fallback must run."""
        record = AgentRecord(agent=f"{prompt.name}@{prompt.version}", mode=DETERMINISTIC)
        agent = self.agents.build(self.key, prompt)
        if agent is None:
            record.reason = self.agents.unavailable_reason(self.key)
            return None, record
        record.mode, record.model = LLM, self.agents.model
        for _ in range(2):  # the second round only after the server named a smaller context window
            window = self.agents.context_window
            fitted, cuts = fit_payload(prompt, payload, self.count_tokens, window - agent.max_tokens)
            if fitted is None:
                record.fall_back(f"the prompt does not fit the model's context window of {window} tokens")
                return None, record
            if cuts:
                record.details["fitted_fields"] = cuts
            record.calls += 1
            try:
                return agent.run(fitted, deadline=self.deadline), record
            except LLMRequestError as error:
                named = window_from_error(error.message)
                if named is None or named >= window:
                    record.fall_back(f"LLM call failed ({error.code}): {error.message}")
                    return None, record
                self.agents.learn_context_window(named)
            except LLMError as error:
                record.fall_back(f"LLM call failed ({error.code}): {error.message}")
                return None, record
        record.fall_back("the prompt does not fit the model's context window")
        return None, record


def stage_agent(ctx: StageContext, spec: StageSpec) -> StageAgent:
    """The agent of stage ``spec``; raises ValueError for a stage the registry does not let call the LLM."""
    if spec.llm_key is None:
        raise ValueError(f"{spec.name} may not call the LLM: the stage registry gives it no llm_key")
    return StageAgent(spec.llm_key, ctx.agents, ctx.count_tokens, ctx.deadline)


def fit_payload(prompt: AgentPrompt, payload: Mapping[str, Any], count_tokens: TokenCounter,
                budget: int) -> tuple[dict[str, Any] | None, dict[str, int]]:
    """``payload`` with its longest text fields cut until the messages take at most ``budget``
    tokens, plus ``{field: characters kept}`` for each cut field; ``(None, ...)`` when even the
    shortest allowed fields do not fit."""
    fitted = dict(payload)
    cuts: dict[str, int] = {}
    while True:
        used = sum(count_tokens(message["content"]) for message in prompt.messages(fitted))
        if used <= budget:
            return fitted, cuts
        texts = {name: value for name, value in fitted.items() if isinstance(value, str)}
        name = max(texts, key=lambda item: len(texts[item]), default=None)
        if name is None or len(texts[name]) <= MIN_FIELD_CHARS:
            return None, cuts
        keep = max(MIN_FIELD_CHARS, int(len(texts[name]) * min(SHRINK_FACTOR, budget / used)))
        fitted[name] = _cut_at_line(texts[name], keep)
        cuts[name] = len(fitted[name])


def _cut_at_line(text: str, keep: int) -> str:
    """The first ``keep`` characters, ending at a line break when there is one in the second half."""
    cut = text[:keep]
    newline = cut.rfind("\n")
    return cut[:newline] if newline > keep // 2 else cut
