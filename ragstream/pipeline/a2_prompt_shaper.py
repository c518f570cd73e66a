"""A2_PromptShaper: choose system, audience, tone, depth and confidence (docs/pipeline.md).

With an LLM: one Chooser call, answers clamped to the enums. Without (or when the call fails):
keyword rules over task, purpose and context. Values the user wrote as headers are kept.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from ragstream.agents.prompts import A2_DEFAULTS, A2_PROMPT, A2Output
from ragstream.config import AgentSettings
from ragstream.pipeline.agent_call import StageAgent, stage_agent
from ragstream.pipeline.context import StageContext
from ragstream.pipeline.render import preview
from ragstream.pipeline.stages import A2_PROMPT_SHAPER as SPEC
from ragstream.pipeline.super_prompt import SuperPrompt

FIELDS = tuple(A2_PROMPT.enums)
INPUT_FIELDS = ("task", "purpose", "context")

RULES: tuple[tuple[str, str, tuple[str, ...]], ...] = (
    ("system", "technical_expert", ("code", "api", "python", "function", "error", "exception", "timeout",
                                    "http", "request", "client", "config", "configure", "install")),
    ("system", "teacher", ("explain", "teach", "learn", "beginner", "erkläre", "erklären")),
    ("system", "analyst", ("analyze", "analyse", "compare", "evaluate", "assess", "vergleiche")),
    ("system", "writer", ("write", "draft", "rewrite", "email", "essay", "schreibe")),
    ("audience", "beginner", ("beginner", "beginners", "newbie", "simple", "simply", "einfach", "anfänger")),
    ("audience", "expert", ("expert", "experts", "advanced", "experte")),
    ("audience", "technical", ("developer", "developers", "engineer", "engineers", "programmer", "code", "api")),
    ("audience", "executive", ("executive", "manager", "management", "business")),
    ("tone", "formal", ("formal", "official", "formell")),
    ("tone", "friendly", ("friendly", "casual", "freundlich")),
    ("tone", "concise", ("concise", "short", "terse", "knapp")),
    ("depth", "brief", ("brief", "summary", "summarize", "summarise", "overview", "kurz", "zusammenfassung")),
    ("depth", "detailed", ("detailed", "thorough", "step-by-step", "comprehensive", "ausführlich")),
)
"""Deterministic fallback: (field, value, keywords); the first rule with a keyword in the input wins."""

RULE_CONFIDENCE = "medium"
"""Fallback confidence once a keyword rule matched (the default, ``low``, when none did)."""

_WORDS = re.compile(r"[\w\-]+")


@dataclass(frozen=True)
class Inputs:
    """What A2 uses: its agent and its settings (``agents.a2``)."""

    settings: AgentSettings
    agent: StageAgent


def inputs(ctx: StageContext) -> Inputs:
    """A2's inputs, taken from the pipeline's context."""
    return Inputs(ctx.config.agents.a2, stage_agent(ctx, SPEC))


def run(sp: SuperPrompt, deps: Inputs) -> SuperPrompt:
    """Fill the five meta-fields; log each choice in ``extras["a2_decisions"]``."""
    limit = deps.settings.field_chars
    payload = {name: sp.body.get(name, "")[:limit] for name in INPUT_FIELDS}
    output, record = deps.agent.call(A2_PROMPT, payload)
    user_given = set(sp.user_given_fields)
    rule_choices = _rule_choices(" ".join(payload.values()))
    decisions: dict[str, Any] = {}
    for name in FIELDS:
        if name in user_given:
            decisions[name] = {"value": sp.body[name], "source": "user"}
        elif isinstance(output, A2Output):
            value, allowed = A2_PROMPT.clamp(name, getattr(output, name))
            decisions[name] = {"value": value, "source": "llm" if allowed else "default",
                               "clamped": not allowed, "raw": getattr(output, name)}
        elif name in rule_choices:
            decisions[name] = {"value": rule_choices[name][0], "source": "rule", "keyword": rule_choices[name][1]}
        else:
            decisions[name] = {"value": _fallback_default(name, rule_choices), "source": "default"}
        sp.body[name] = decisions[name]["value"]
    sp.extras["a2"] = record.log()
    sp.extras["a2_decisions"] = decisions
    record.report(sp, SPEC.entry)
    sp.advance(SPEC.entry)
    sp.prompt_ready = preview(sp)
    return sp


def _rule_choices(text: str) -> dict[str, tuple[str, str]]:
    """Per field, the (value, keyword) of the first rule whose keyword occurs in ``text``."""
    words = set(_WORDS.findall(text.casefold()))
    choices: dict[str, tuple[str, str]] = {}
    for name, value, keywords in RULES:
        hit = next((keyword for keyword in keywords if keyword in words), None)
        if hit is not None and name not in choices:
            choices[name] = (value, hit)
    return choices


def _fallback_default(name: str, rule_choices: dict[str, tuple[str, str]]) -> str:
    """The default; confidence is RULE_CONFIDENCE when any rule matched."""
    if name == "confidence" and rule_choices:
        return RULE_CONFIDENCE
    return A2_DEFAULTS[name]
