"""A0_PreProcessing: raw prompt text -> canonical ``sp.body`` (docs/pipeline.md), and a follow-up
question rewritten to stand alone (``sp.rewritten_query``, :mod:`ragstream.pipeline.followup`).

Header lines are ``Key: value`` or Markdown headings; the text up to the next header is the
value. Each header walks the mapping ladder (:mod:`ragstream.pipeline.header_mapping`). A
``Key:`` line whose key maps nowhere is ordinary text unless it looks deliberate (ALL CAPS);
unknown Markdown headings are always attributes. Unknown attributes go to
``sp.unknown_attributes``; every decision is logged in ``extras["a0"]``.

The header ladder never calls an LLM; the follow-up rewrite does when ``a0`` is in
``pipeline.llm_stages`` and the prompt has earlier turns (``extras["rewrite"]`` logs it).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel

from ragstream.agents.prompts import A0_REWRITE_PROMPT, A0RewriteOutput
from ragstream.config import AgentSettings, PipelineLimits
from ragstream.errors import MissingTaskError
from ragstream.pipeline.agent_call import AgentRecord, StageAgent, stage_agent
from ragstream.pipeline.context import StageContext
from ragstream.pipeline.conversation import pair_text
from ragstream.pipeline.followup import deterministic_rewrite, dropped_terms
from ragstream.pipeline.header_mapping import HeaderMapper, Mapping
from ragstream.pipeline.prompt_schema import PromptSchema
from ragstream.pipeline.render import preview
from ragstream.pipeline.stages import A0_PREPROCESSING as SPEC
from ragstream.pipeline.super_prompt import SuperPrompt

_HEADING = re.compile(r"^\s{0,3}#{1,6}\s+(?P<key>.+?)\s*:?\s*$")
_KEY_LINE = re.compile(r"^\s*\**(?P<key>[^\W\d_][^:\n]*?)\**\s*:\**(?:\s+(?P<value>.*))?$")
_FENCE = re.compile(r"^\s*(```|~~~)")
_QUESTION = re.compile(r"[^.!?\n]*\?")
LADDER_REASON = "header-mapping ladder of the prompt schema"


@dataclass
class _Section:
    mapping: Mapping | None
    lines: list[str] = field(default_factory=list)

    @property
    def value(self) -> str:
        return "\n".join(self.lines).strip()


@dataclass(frozen=True)
class Inputs:
    """What A0 uses: the prompt schema, the follow-up limits (``pipeline``) and its agent (``agents.a0``)."""

    schema: PromptSchema
    limits: PipelineLimits
    settings: AgentSettings
    agent: StageAgent


def inputs(ctx: StageContext) -> Inputs:
    """A0's inputs, taken from the pipeline's context."""
    return Inputs(ctx.schema, ctx.config.pipeline, ctx.config.agents.a0, stage_agent(ctx, SPEC))


def run(sp: SuperPrompt, deps: Inputs) -> SuperPrompt:
    """Parse ``sp.user_text`` into ``sp.body``; enforce MUST keys; log every decision."""
    schema = deps.schema
    mapper = HeaderMapper(schema)
    sections = _split(sp.user_text, mapper, schema)
    body: dict[str, str] = {}
    sources: dict[str, str] = {}
    unknown: dict[str, str] = {}
    untitled: list[str] = []
    for section in sections:
        if section.mapping is None:
            untitled.append(section.value)
        elif section.mapping.key is None:
            unknown[section.mapping.header] = _joined(unknown.get(section.mapping.header), section.value)
        elif section.value:
            body[section.mapping.key] = _joined(body.get(section.mapping.key), section.value)
            sources[section.mapping.key] = "user"
    untitled_text = "\n\n".join(text for text in untitled if text)
    _task_context_rule(body, sources, untitled_text, schema)
    for key in schema.must_keys:
        if key not in body:
            body[key] = schema.defaults[key]
            sources[key] = "default"

    sp.body = {key: body[key] for key in schema.canonical_keys if key in body}
    sp.unknown_attributes = unknown
    sp.extras["a0"] = _log(sections, sources, schema)
    sp.user_given_fields = sorted(key for key, source in sources.items() if source == "user")
    _rewrite_followup(sp, deps)
    sp.advance(SPEC.entry)
    sp.prompt_ready = preview(sp)
    return sp


def _rewrite_followup(sp: SuperPrompt, deps: Inputs) -> None:
    """Set ``sp.rewritten_query`` when the task is a follow-up of the recent conversation, and report
    how A0 ran (the LLM when ``a0`` is in its budget, else the deterministic rewrite)."""
    pairs, task, limits = sp.recentConversation, sp.body.get("task", ""), deps.limits
    if not pairs:
        sp.report(SPEC.entry, "deterministic", reason=LADDER_REASON)
        return
    chars = deps.settings.field_chars
    conversation = "\n\n".join(pair_text(pair) for pair in pairs)[-chars:]
    output, record = deps.agent.call(A0_REWRITE_PROMPT, {"conversation": conversation, "question": task[:chars]})
    standalone = _accepted(output, task, record)
    if standalone is not None:
        changed = standalone.casefold() != " ".join(task.split()).casefold()
        sp.rewritten_query = standalone if changed else ""
        sp.extras["rewrite"] = {**record.log(), "rewritten": changed}
        record.report(sp, SPEC.entry)
        return
    rewrite = deterministic_rewrite(task, pairs, limits)
    sp.rewritten_query = rewrite[0] if rewrite else ""
    sp.extras["rewrite"] = {**record.log(), "rewritten": rewrite is not None,
                            "carried_terms": rewrite[1] if rewrite else []}
    if record.llm_attempted:
        record.report(sp, SPEC.entry)
    else:
        sp.report(SPEC.entry, "deterministic", reason=LADDER_REASON)


def _accepted(output: BaseModel | None, task: str, record: AgentRecord) -> str | None:
    """The LLM's standalone question, or ``None`` (recorded as a fallback) when it lost a term the
    question asked about (small models return the earlier question instead)."""
    if not isinstance(output, A0RewriteOutput):
        return None
    standalone = " ".join(output.standalone.split())
    lost = dropped_terms(task, standalone)
    if lost:
        record.fall_back(f"the LLM's rewrite {standalone!r} dropped the question's own terms: {', '.join(lost)}")
        return None
    return standalone


def _split(text: str, mapper: HeaderMapper, schema: PromptSchema) -> list[_Section]:
    sections = [_Section(None)]
    in_code = False
    for line in text.splitlines():
        if _FENCE.match(line):
            in_code = not in_code
        header = None if in_code else _header(line, mapper, schema)
        if header is None:
            sections[-1].lines.append(line)
        else:
            mapping, value = header
            sections.append(_Section(mapping, [value] if value else []))
    return [section for section in sections if section.mapping is not None or section.value]


def _header(line: str, mapper: HeaderMapper, schema: PromptSchema) -> tuple[Mapping, str] | None:
    heading = _HEADING.match(line)
    if heading:
        return mapper.map(heading["key"]), ""
    key_line = _KEY_LINE.match(line)
    if not key_line or len(key_line["key"]) > schema.header_max_chars:
        return None
    mapping = mapper.map(key_line["key"])
    deliberate = mapping.key is not None or key_line["key"].isupper()
    return (mapping, (key_line["value"] or "").strip()) if deliberate else None


def _task_context_rule(body: dict[str, str], sources: dict[str, str], untitled: str, schema: PromptSchema) -> None:
    """TASK comes from its header, else the untitled text, else CONTEXT's last question, else a template."""
    if "task" in body:
        if untitled:
            body["text"] = _joined(body.get("text"), untitled)
            sources["text"] = "untitled_text"
        return
    if untitled:
        body["task"], sources["task"] = untitled, "untitled_text"
    elif body.get("context"):
        questions = _QUESTION.findall(body["context"])
        if questions:
            body["task"], sources["task"] = questions[-1].strip(), "context_question"
        else:
            body["task"], sources["task"] = schema.task_from_context, "task_from_context"
    else:
        raise MissingTaskError("the prompt has no TASK: give a TASK header, plain text, or a CONTEXT")


def _joined(previous: str | None, value: str) -> str:
    return f"{previous}\n\n{value}" if previous else value


def _log(sections: list[_Section], sources: dict[str, str], schema: PromptSchema) -> dict[str, Any]:
    mappings = [section.mapping for section in sections if section.mapping is not None]
    semantic = schema.modes.get("semantic_enabled", False)
    return {
        "decisions": [mapping.as_dict() for mapping in mappings],
        "normalized_map": {mapping.header: mapping.key for mapping in mappings},
        "sources": dict(sorted(sources.items())),
        "semantic_used": False,
        "semantic_reason": (
            "modes.semantic_enabled is true but no semantic header mapper exists; the deterministic ladder ran"
            if semantic else "modes.semantic_enabled is false in the prompt schema"
        ),
    }
