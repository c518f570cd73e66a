"""The generation prompt: numbered context passages, conversation turns, selected text, question.

Passage ``[n]`` of the context block is ``chunks[n-1]`` of :func:`fit_context`'s result, the
exact list the citation resolver gets, so every ``[n]`` the model can see resolves.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ragstream.pipeline.super_prompt import ConversationPair
from ragstream.answer.models import DocumentChunk

CONTEXT_PLACEHOLDER = "{context}"
PASSAGE_SEPARATOR = "\n\n"


def passage_heading(number: int, chunk: DocumentChunk) -> str:
    """``[n] Title > Section (p. N)``: the passage label the model cites by number."""
    meta = chunk.metadata
    where = " > ".join(part for part in (str(meta.get("title") or ""), str(meta.get("section") or "")) if part)
    page = f" (p. {meta['page']})" if meta.get("page") is not None else ""
    return f"[{number}] {where}{page}".rstrip()


def fit_context(chunks: Sequence[DocumentChunk], max_chars: int) -> tuple[str, list[DocumentChunk]]:
    """The context block and the chunks in it: whole passages while they fit ``max_chars``
    (the first one is cut to fit when it alone is too long)."""
    parts: list[str] = []
    used: list[DocumentChunk] = []
    total = 0
    for chunk in chunks:
        passage = f"{passage_heading(len(used) + 1, chunk)}\n{chunk.text.strip()}"
        cost = len(passage) + (len(PASSAGE_SEPARATOR) if parts else 0)
        if total + cost > max_chars:
            if not used:
                parts.append(passage[:max_chars])
                used.append(chunk)
            break
        parts.append(passage)
        used.append(chunk)
        total += cost
    return PASSAGE_SEPARATOR.join(parts), used


def build_messages(system_template: str, context: str, question: str, history: Sequence[ConversationPair],
                   selected_text: str | None, citation_reminder: str = "") -> list[dict[str, Any]]:
    """System (template with the context), earlier turns, then the question (with its selected-text
    block and the citation reminder)."""
    messages: list[dict[str, Any]] = [{"role": "system", "content": system_template.replace(CONTEXT_PLACEHOLDER, context)}]
    for pair in history:
        messages.append({"role": "user", "content": pair.user})
        if pair.assistant:
            messages.append({"role": "assistant", "content": pair.assistant})
    asked = f"{question} {citation_reminder}".strip()
    user = asked if not selected_text else f"Selected text:\n{selected_text.strip()}\n\nQuestion: {asked}"
    messages.append({"role": "user", "content": user})
    return messages
