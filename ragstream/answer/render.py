"""Plain-text rendering of answers for terminals (the CLI's ``ask`` and ``chat``)."""

from __future__ import annotations

from typing import Any

from ragstream.answer.models import Answer

UNSUPPORTED_MARK = "⚠"
"""Written after an unsupported sentence of an answer, and before each line naming one."""


def marked_answer(answer: Answer) -> str:
    """The answer text with :data:`UNSUPPORTED_MARK` after every unsupported sentence."""
    text = answer.answer
    for sentence in sorted(answer.sentences, key=lambda s: -s.end):
        if sentence.verdict == "unsupported":
            text = f"{text[: sentence.end]} {UNSUPPORTED_MARK}{text[sentence.end :]}"
    return text


def support_lines(answer: Answer) -> list[str]:
    """One line per unsupported sentence: its number, text and why."""
    return [f'{UNSUPPORTED_MARK} Unsupported: sentence {s.index + 1} "{s.text}": {s.reason}'
            for s in answer.sentences if s.verdict == "unsupported"]


def sources_text(answer: Answer) -> str:
    """Confidence, the cited sources, unmatched markers and unsupported sentences, one per line."""
    lines = [f"Confidence: {answer.confidence.level} ({answer.confidence.reason})"]
    for citation in answer.citations:
        if citation.matched:
            where = " > ".join(part for part in (citation.title, citation.section) if part)
            page = f", p. {citation.page}" if citation.page is not None else ""
            lines.append(f"[{citation.number}] {where}{page} ({citation.url})")
    unmatched = answer.metadata.get("unmatched_citations") or []
    if unmatched:
        lines.append("Unmatched citations: " + ", ".join(f"[{marker}]" for marker in unmatched))
    lines += support_lines(answer)
    lines += notices(answer.metadata)
    return "\n".join(lines)


def notices(metadata: dict[str, Any]) -> list[str]:
    """What the user must know about how the answer was made: degradation, truncation, stage fallbacks."""
    lines: list[str] = []
    if metadata.get("degraded_reason"):
        lines.append(f"Degraded: {metadata['degraded_reason']}")
    if metadata.get("truncated"):
        lines.append("Incomplete: the answer was cut at the token limit (llm.max_tokens)")
    elif metadata.get("incomplete"):
        lines.append("Incomplete: generation stopped early")
    for stage, reason in (metadata.get("pipeline") or {}).get("fallbacks", {}).items():
        lines.append(f"Stage {stage} fell back: {reason}")
    return lines
