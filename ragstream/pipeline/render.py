"""Render the Markdown blocks of a SuperPrompt: System, Prompt, Attachments, Recent Conversation."""

from __future__ import annotations

import re
from collections.abc import Sequence

from ragstream.models import Chunk
from ragstream.pipeline.super_prompt import ConversationPair, SuperPrompt

PROMPT_FIELDS = ("task", "purpose", "context", "text", "constraints", "audience", "format")
"""Prompt_MD's sections, in order (seed 000 section 5.8: task, purpose, context, audience, format)."""

QUERY_FIELDS = ("task", "purpose", "context", "format")
"""The fields of the reranker's query string (seed 000 section 5.4)."""

SYSTEM_FIELDS = ("audience", "tone", "depth")
_BACKTICKS = re.compile(r"`+")
_MIN_FENCE = 3


def system_md(body: dict[str, str], hard_rules: Sequence[str] = ()) -> str:
    """The System block: the role, the A2 meta-fields and A5's hard rules."""
    lines = ["## System", "", f"Role: {body.get('system', '')}", ""]
    lines += [f"- {name.capitalize()}: {body[name]}" for name in SYSTEM_FIELDS if body.get(name)]
    if hard_rules:
        lines += ["", "Rules:", *(f"- {rule}" for rule in hard_rules)]
    return "\n".join(lines).strip()


def prompt_md(body: dict[str, str], fields: Sequence[str] = PROMPT_FIELDS) -> str:
    """The Prompt block: one section per non-empty field of ``fields``."""
    parts = ["## Prompt"]
    parts += [f"### {name.capitalize()}\n{body[name].strip()}" for name in fields if body.get(name, "").strip()]
    return "\n\n".join(parts)


def query_text(body: dict[str, str]) -> str:
    """The reranker's single query string: Prompt_MD over task, purpose, context and format."""
    return prompt_md(body, QUERY_FIELDS)


def provenance(chunk: Chunk) -> str:
    """``source § header path, p. N`` of a chunk."""
    meta = chunk.metadata
    where = meta.source + (f" § {meta.header_path}" if meta.header_path else "")
    return where + (f", p. {meta.page}" if meta.page is not None else "")


def span(chunk: Chunk) -> str:
    """Which part of its document a chunk is."""
    meta = chunk.metadata
    return f"{meta.document_id} chunk {meta.chunk_index} (id {chunk.chunk_id})"


def fence_for(text: str) -> str:
    """A backtick fence longer than any backtick run inside ``text``."""
    longest = max((len(run) for run in _BACKTICKS.findall(text)), default=0)
    return "`" * max(_MIN_FENCE, longest + 1)


def attachments_md(chunks: Sequence[Chunk]) -> str:
    """Raw excerpts, each in a provenance fence with ``SOURCE:`` and ``SPAN:`` lines."""
    parts = ["## Attachments"]
    for number, chunk in enumerate(chunks, start=1):
        fence = fence_for(chunk.text)
        parts.append(f"{fence}text\n[{number}] SOURCE: {provenance(chunk)}\nSPAN: {span(chunk)}\n"
                     f"---\n{chunk.text}\n{fence}")
    return "\n\n".join(parts)


def conversation_md(pairs: Sequence[ConversationPair]) -> str:
    """The Recent Conversation block, oldest pair first."""
    parts = ["## Recent Conversation"]
    for pair in pairs:
        parts.append(f"**User:** {pair.user}" + (f"\n\n**Assistant:** {pair.assistant}" if pair.assistant else ""))
    return "\n\n".join(parts)


def hard_rules(sp: SuperPrompt) -> list[str]:
    """A5's hard rules, once it ran."""
    return list(sp.extras.get("format_enforcer", {}).get("hard_rules", []))


def preview(sp: SuperPrompt) -> str:
    """The GUI snapshot before Prompt_Builder: System, Prompt and (once A4 ran) S_CTX."""
    blocks = [system_md(sp.body, hard_rules(sp)), prompt_md(sp.body), sp.S_CTX_MD]
    return "\n\n".join(block for block in blocks if block)
