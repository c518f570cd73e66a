"""A5_Format_Enforcer: a normalized format spec and hard rules for the final answer (docs/pipeline.md).

The deterministic path matches ``body["format"]`` against the format kinds of the prompt schema
(first kind with a keyword wins; no format means the schema's default) and restates each line of
``body["constraints"]`` as a hard rule. The LLM Writer does the same in its own words, its
``format_kind`` clamped to the schema's kinds. The LLM may only rephrase: a rule or spec naming
something that is in neither the prompt nor the attachments (a proper noun, a product or version
name, a number) is dropped and logged, and the deterministic spec stands in for a dropped spec.
Never touches retrieval fields or S_CTX_MD.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ragstream.agents.prompts import A5Output, a5_prompt
from ragstream.config import AgentSettings
from ragstream.pipeline.agent_call import StageAgent, stage_agent
from ragstream.pipeline.context import StageContext
from ragstream.pipeline.grounding import ungrounded, vocabulary
from ragstream.pipeline.prompt_schema import FormatRules
from ragstream.pipeline.render import preview
from ragstream.pipeline.stages import A5_FORMAT_ENFORCER as SPEC
from ragstream.pipeline.super_prompt import SuperPrompt

CUSTOM_FORMAT = "custom"
"""``format_kind`` of a requested format that matches no kind of the schema."""
_WORDS = re.compile(r"[\w\-]+")
_RULE_SPLIT = re.compile(r"[\n;]+")
_BULLET = re.compile(r"^\s*(?:[-*•]|\d+[.)])\s*")


@dataclass(frozen=True)
class Inputs:
    """What A5 uses: the prompt schema's format kinds, its settings (``agents.a5``) and its agent."""

    formats: FormatRules
    settings: AgentSettings
    agent: StageAgent


def inputs(ctx: StageContext) -> Inputs:
    """A5's inputs, taken from the pipeline's context."""
    return Inputs(ctx.schema.formats, ctx.config.agents.a5, stage_agent(ctx, SPEC))


def run(sp: SuperPrompt, deps: Inputs) -> SuperPrompt:
    """Write ``hard_rules``, ``format_kind`` and the normalized ``body["format"]``."""
    rules = deps.formats
    requested = " ".join(sp.body.get("format", "").split())
    kind, spec, example = _deterministic_spec(requested, rules)
    constraint_rules = _constraint_rules(sp.body.get("constraints", ""))
    limit = deps.settings.field_chars
    prompt = a5_prompt(tuple(rules.kinds), rules.default)
    payload = {"task": sp.body.get("task", "")[:limit], "format": requested or rules.default,
               "constraints": sp.body.get("constraints", "")[:limit]}
    output, record = deps.agent.call(prompt, payload)
    hard_rules = constraint_rules
    if isinstance(output, A5Output):
        known = vocabulary([*sp.body.values(), sp.selected_text, *(c.text for c in sp.chunks(sp.final_selection_ids)),
                            *_schema_texts(rules)])
        kind, record.details["format_kind_allowed"] = prompt.clamp("format_kind", output.format_kind)
        llm_spec = " ".join(output.normalized_format_spec.split())
        llm_rules = [rule for rule in (" ".join(r.split()) for r in output.hard_rules) if rule]
        dropped = [text for text in [llm_spec, *llm_rules] if ungrounded(text, known)]
        if llm_spec not in dropped:
            spec = llm_spec
            example = output.example_shape if not ungrounded(output.example_shape, known) else example
        hard_rules = [rule for rule in llm_rules if rule not in dropped] or constraint_rules
        if dropped:
            record.details["dropped_ungrounded"] = dropped

    sp.body["format"] = spec
    sp.hard_rules = hard_rules
    sp.format_kind = kind
    sp.extras["format_enforcer"] = {**record.log(), "requested_format": requested, "format_kind": kind,
                                    "normalized_format_spec": spec, "example_shape": example,
                                    "hard_rules": hard_rules}
    record.report(sp, SPEC.entry)
    sp.advance(SPEC.entry)
    sp.prompt_ready = preview(sp)
    return sp


def _schema_texts(rules: FormatRules) -> list[str]:
    """The words of the schema's format kinds, which the LLM may always use."""
    texts: list[str] = []
    for name, kind in rules.kinds.items():
        texts += [name, kind.spec, kind.example_shape, *kind.keywords]
    return texts


def _deterministic_spec(requested: str, rules: FormatRules) -> tuple[str, str, str]:
    """(kind, spec, example_shape) for the requested format text."""
    if not requested:
        default = rules.kinds[rules.default]
        return rules.default, default.spec, default.example_shape
    words = set(_WORDS.findall(requested.casefold()))
    for name, kind in rules.kinds.items():
        if words & set(kind.keywords):
            detail = f" Requested: {requested}" if words - set(kind.keywords) else ""
            return name, kind.spec + detail, kind.example_shape
    return CUSTOM_FORMAT, f"Answer in this format: {requested}", ""


def _constraint_rules(constraints: str) -> list[str]:
    """One rule per line or ';'-separated part, bullets and numbering removed."""
    parts = (_BULLET.sub("", part).strip() for part in _RULE_SPLIT.split(constraints))
    return [part for part in parts if part]
