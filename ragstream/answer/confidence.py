"""Confidence: High / Medium / Low with a human-readable reason."""

from __future__ import annotations

from collections.abc import Sequence

from ragstream.answer.models import Confidence
from ragstream.config import ConfidenceConfig

NO_SOURCES_REASON = "No relevant sources found"


def calculate_confidence(scores: Sequence[float], matched_citations: int, config: ConfidenceConfig) -> Confidence:
    """Level from the number of context chunks, their average relevance and the resolved citations.

    High: >= ``high_min_chunks`` chunks, average >= ``high_min_relevance`` and >= ``high_min_citations``
    citations. Medium: >= ``medium_min_chunks`` chunks and average >= ``medium_min_relevance``. Else Low.
    """
    count = len(scores)
    if not count:
        return Confidence(level="Low", reason=NO_SOURCES_REASON)
    avg = sum(scores) / count
    if count >= config.high_min_chunks and avg >= config.high_min_relevance:
        if matched_citations >= config.high_min_citations:
            return Confidence(level="High", reason=f"{count} relevant sources with {matched_citations} citations")
        return Confidence(level="Medium", reason=f"{count} relevant sources, but the answer cites {matched_citations}")
    if count >= config.medium_min_chunks and avg >= config.medium_min_relevance:
        return Confidence(level="Medium", reason=f"{count} sources found, average relevance {avg:.0%}")
    if count < config.medium_min_chunks:
        return Confidence(level="Low", reason=f"Only {count} source found")
    return Confidence(level="Low", reason=f"Low relevance scores (avg {avg:.0%})")
