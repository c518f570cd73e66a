"""Plain-text rendering of answers for terminals (the CLI's ``ask`` and ``chat``)."""

from __future__ import annotations

from ragstream.answer.models import Answer


def sources_text(answer: Answer) -> str:
    """Confidence, the cited sources, and unmatched markers, one per line."""
    lines = [f"Confidence: {answer.confidence.level} ({answer.confidence.reason})"]
    for citation in answer.citations:
        if citation.matched:
            where = " > ".join(part for part in (citation.title, citation.section) if part)
            page = f", p. {citation.page}" if citation.page is not None else ""
            lines.append(f"[{citation.number}] {where}{page} ({citation.url})")
    unmatched = answer.metadata.get("unmatched_citations") or []
    if unmatched:
        lines.append("Unmatched citations: " + ", ".join(f"[{marker}]" for marker in unmatched))
    return "\n".join(lines)
