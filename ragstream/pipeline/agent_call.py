"""Run an agent with its deterministic fallback, recording in ``extras`` which ran and why."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel

from ragstream.agents.agent_prompt import AgentPrompt
from ragstream.errors import LLMError
from ragstream.pipeline.context import StageContext

LLM = "llm"
DETERMINISTIC = "deterministic"


def call_agent(
    ctx: StageContext, key: str, prompt: AgentPrompt, payload: Mapping[str, Any]
) -> tuple[BaseModel | None, dict[str, Any]]:
    """``(output, record)``: the validated LLM output, or ``None`` when the fallback must run.

    ``record`` says ``mode`` (``llm`` or ``deterministic``), the agent and, for the fallback, the
    ``reason`` (no LLM configured, switched off, or the call failed with its error code).
    """
    base: dict[str, Any] = {"agent": f"{prompt.name}@{prompt.version}"}
    agent = ctx.agents.build(key, prompt)
    if agent is None:
        return None, {**base, "mode": DETERMINISTIC, "reason": ctx.agents.unavailable_reason(key)}
    try:
        output = agent.run(payload)
    except LLMError as error:
        return None, fallback(
            {**base, "mode": LLM, "model": ctx.agents.model}, f"LLM call failed ({error.code}): {error.message}"
        )
    return output, {**base, "mode": LLM, "model": ctx.agents.model}


def fallback(record: dict[str, Any], reason: str) -> dict[str, Any]:
    """``record`` turned into a deterministic-fallback record with ``reason``."""
    return {**record, "mode": DETERMINISTIC, "reason": reason, "llm_attempted": True}
