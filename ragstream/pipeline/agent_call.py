"""Run an agent with its deterministic fallback; record which ran and why.

Before the call the payload is fitted to the model's context window (the longest field is cut
until the messages plus the agent's ``max_tokens`` fit). A server that still refuses the prompt as
too long and names its window is believed: the window is remembered and the call is fitted and
sent once more. Every call carries the question's deadline.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel

from ragstream.agents.agent_prompt import AgentPrompt
from ragstream.errors import LLMError, LLMRequestError
from ragstream.pipeline.context import StageContext, TokenCounter
from ragstream.pipeline.super_prompt import HistoryEntry, StageMode, SuperPrompt
from ragstream.providers.context_window import window_from_error

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


def call_agent(
    ctx: StageContext, key: str, prompt: AgentPrompt, payload: Mapping[str, Any]
) -> tuple[BaseModel | None, AgentRecord]:
    """``(output, record)``: the validated LLM output, or ``None`` when the fallback must run."""
    record = AgentRecord(agent=f"{prompt.name}@{prompt.version}", mode=DETERMINISTIC)
    agent = ctx.agents.build(key, prompt)
    if agent is None:
        record.reason = ctx.agents.unavailable_reason(key)
        return None, record
    record.mode, record.model = LLM, ctx.agents.model
    for _ in range(2):  # the second round only after the server named a smaller context window
        fitted, cuts = fit_payload(prompt, payload, ctx.count_tokens, ctx.agents.context_window - agent.max_tokens)
        if fitted is None:
            record.fall_back(f"the prompt does not fit the model's context window of {ctx.agents.context_window} tokens")
            return None, record
        if cuts:
            record.details["fitted_fields"] = cuts
        record.calls += 1
        try:
            return agent.run(fitted, deadline=ctx.deadline), record
        except LLMRequestError as error:
            window = window_from_error(error.message)
            if window is None or window >= ctx.agents.context_window:
                record.fall_back(f"LLM call failed ({error.code}): {error.message}")
                return None, record
            ctx.agents.learn_context_window(window)
        except LLMError as error:
            record.fall_back(f"LLM call failed ({error.code}): {error.message}")
            return None, record
    record.fall_back("the prompt does not fit the model's context window")
    return None, record


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
