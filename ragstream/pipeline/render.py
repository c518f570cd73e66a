"""Render the Markdown blocks of a SuperPrompt: System, Prompt, Attachments, Recent Conversation.

Document text (attachments, S_CTX) and user-selected text always sit in a fence longer than any
backtick run inside them, so nothing they contain can close the fence or pose as prompt structure.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from ragstream.models import Chunk
from ragstream.pipeline.super_prompt import ConversationPair, SuperPrompt

PROMPT_FIELDS = ("task", "purpose", "context", "text", "constraints", "audience", "format")
"""Prompt_MD's sections, in order (task, purpose, context, audience, format)."""

QUERY_FIELDS = ("task", "purpose", "context", "format")
"""The fields of the reranker's query string (docs/pipeline.md)."""

SYSTEM_FIELDS = ("audience", "tone", "depth")

COPIED_HEADER_MARKERS = ("] SOURCE: ", "\nSPAN: ")
"""Text an answer only holds when the model copies an attachment's header lines (see ``attachment_md``)."""
SCORE_LABEL = "\nSCORE: "
SCORE_DECIMALS = 3
"""An attachment's header shows its ranking score (the ReRanker's, else Retrieval's) to this many decimals."""
_BACKTICKS = re.compile(r"`+")
_MIN_FENCE = 3


def system_md(body: dict[str, str], hard_rules: Sequence[str] = (), answer_rules: Sequence[str] = ()) -> str:
    """The System block: the role, the A2 meta-fields, the answer rules and A5's hard rules."""
    lines = ["## System", "", f"Role: {body.get('system', '')}", ""]
    lines += [f"- {name.capitalize()}: {body[name]}" for name in SYSTEM_FIELDS if body.get(name)]
    rules = [*answer_rules, *hard_rules]
    if rules:
        lines += ["", "Rules:", *(f"- {rule}" for rule in rules)]
    return "\n".join(lines).strip()


def collection_md(instructions: Sequence[str]) -> str:
    """The instructions of the collections a question is scoped to, as a block of the System message."""
    return "\n".join(["Collection instructions:", *(f"- {text}" for text in instructions)])


def prompt_md(body: dict[str, str], fields: Sequence[str] = PROMPT_FIELDS, selected_text: str = "") -> str:
    """The Prompt block: one section per non-empty field of ``fields``, then the selected text (fenced)."""
    parts = ["## Prompt"]
    parts += [f"### {name.capitalize()}\n{body[name].strip()}" for name in fields if body.get(name, "").strip()]
    if selected_text.strip():
        parts.append(f"### Selected text\n{fenced(selected_text.strip())}")
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


def fenced(text: str) -> str:
    """``text`` in a fence that nothing inside it can close."""
    fence = fence_for(text)
    return f"{fence}text\n{text}\n{fence}"


def attachment_md(number: int, chunk: Chunk, score: float | None = None) -> str:
    """Attachment ``[number]``: a fence holding ``SOURCE:``, ``SPAN:`` and (when ranked) ``SCORE:`` lines, then the
    raw text. The score is written with a fixed number of decimals, so its length never depends on its value."""
    header = f"[{number}{COPIED_HEADER_MARKERS[0]}{provenance(chunk)}{COPIED_HEADER_MARKERS[1]}{span(chunk)}"
    if score is not None:
        header += f"{SCORE_LABEL}{score:.{SCORE_DECIMALS}f}"
    return fenced(f"{header}\n---\n{chunk.text}")


def ranking_scores(sp: SuperPrompt) -> dict[str, float]:
    """The score of each ranked chunk id in the last ranked view (the ReRanker's, else Retrieval's)."""
    for entry in reversed(list(sp.scores_by_stage)):
        scores = sp.scores_by_stage[entry]
        if scores:
            return dict(zip(sp.views_by_stage.get(entry, []), scores, strict=False))
    return {}


def attachments_md(chunks: Sequence[Chunk], *, best_last: bool = False,
                   scores: dict[str, float] | None = None) -> str:
    """Raw excerpts, numbered from 1 in ranking order, each in its own provenance fence with its ranking score
    (``scores`` by chunk id); ``best_last`` writes them from the last number down to [1]."""
    numbered = [attachment_md(n, chunk, (scores or {}).get(chunk.chunk_id)) for n, chunk in enumerate(chunks, start=1)]
    return "\n\n".join(["## Attachments", *(reversed(numbered) if best_last else numbered)])


def conversation_md(pairs: Sequence[ConversationPair]) -> str:
    """The Recent Conversation block, oldest pair first."""
    parts = ["## Recent Conversation"]
    for pair in pairs:
        parts.append(f"**User:** {pair.user}" + (f"\n\n**Assistant:** {pair.assistant}" if pair.assistant else ""))
    return "\n\n".join(parts)


def preview(sp: SuperPrompt) -> str:
    """The GUI snapshot before Prompt_Builder: System, Prompt and (once A4 ran) S_CTX."""
    blocks = [system_md(sp.body, sp.hard_rules), prompt_md(sp.body, selected_text=sp.selected_text), sp.S_CTX_MD]
    return "\n\n".join(block for block in blocks if block)
