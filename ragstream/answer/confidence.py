"""Confidence: High / Medium / Low with a human-readable reason, calibrated (a probability) or by rules."""

from __future__ import annotations

import logging
from collections.abc import Sequence

from ragstream.answer.calibrated_confidence import calibrated_confidence, load_confidence_model
from ragstream.answer.confidence_signals import confidence_signals
from ragstream.answer.models import Citation, Confidence, DocumentChunk, SentenceSupport
from ragstream.config import ConfidenceConfig
from ragstream.errors import ModelUnavailableError
from ragstream.pipeline.super_prompt import SuperPrompt

NO_SOURCES_REASON = "No relevant sources found"
logger = logging.getLogger(__name__)


def answer_confidence(sp: SuperPrompt, chunks: Sequence[DocumentChunk], cited: Sequence[Citation],
                      sentences: Sequence[SentenceSupport], config: ConfidenceConfig) -> Confidence:
    """The confidence of an answer that read ``chunks`` and cites ``cited``, by ``config.method``: calibrated
    (the model's probability and its ranges; the rules, saying why, when the model cannot be loaded) or the
    rules. Either way it carries the answer's signals. ``sentences``' verdicts are applied by :func:`with_support`."""
    supported = sum(sentence.verdict == "supported" for sentence in sentences) / len(sentences) if sentences else 1.0
    signals = confidence_signals(sp, chunks, cited, supported)
    note = ""
    if config.method == "calibrated":
        try:
            model = load_confidence_model(config.model)
        except ModelUnavailableError as error:
            logger.warning("confidence by rules: %s", error.message)
            note = f" (rules: {error.message})"
        else:
            return calibrated_confidence(model.probability(signals), model.thresholds(config), signals)
    rules = calculate_confidence([c.relevance_score for c in chunks], [c.score or 0.0 for c in cited], config)
    return rules.model_copy(update={"reason": rules.reason + note, "signals": signals})


def calculate_confidence(scores: Sequence[float], cited_scores: Sequence[float], config: ConfidenceConfig) -> Confidence:
    """Level from the context chunks' relevance and the relevance of the chunks the answer cites.

    High: >= ``high_min_chunks`` chunks, average >= ``high_min_relevance``, >= ``high_min_citations``
    resolved citations, and the best cited chunk at least ``high_min_cited_relevance`` relevant (an
    answer resting on a weakly related passage is not one to trust). Medium: >= ``medium_min_chunks``
    chunks and average >= ``medium_min_relevance``. Else Low. Relevance: cosine to the question, 0..1.
    """
    count = len(scores)
    if not count:
        return Confidence(level="Low", reason=NO_SOURCES_REASON)
    avg = sum(scores) / count
    cited = len(cited_scores)
    if count >= config.high_min_chunks and avg >= config.high_min_relevance:
        if cited < config.high_min_citations:
            return Confidence(level="Medium", reason=f"{count} relevant sources, but the answer cites {cited}")
        best = max(cited_scores, default=0.0)
        if best < config.high_min_cited_relevance:
            return Confidence(level="Medium", reason=f"{count} relevant sources, but the best source the answer "
                              f"cites has relevance {best:.0%}")
        return Confidence(level="High", reason=f"{count} relevant sources with {cited} citations")
    if count >= config.medium_min_chunks and avg >= config.medium_min_relevance:
        return Confidence(level="Medium", reason=f"{count} sources found, average relevance {avg:.0%}")
    if count < config.medium_min_chunks:
        return Confidence(level="Low", reason=f"Only {count} source found")
    return Confidence(level="Low", reason=f"Low relevance scores (avg {avg:.0%})")


QUOTED_SENTENCE_CHARS = 80
"""Characters of an unsupported sentence quoted in the confidence reason."""


def with_support(confidence: Confidence, sentences: Sequence[SentenceSupport]) -> Confidence:
    """Never High when a sentence is unsupported: Medium (Low when no sentence is supported and every one was
    found unsupported), the reason naming the first unsupported sentence and why."""
    unsupported = [sentence for sentence in sentences if sentence.verdict == "unsupported"]
    if not unsupported:
        return confidence
    first = unsupported[0]
    text = first.text if len(first.text) <= QUOTED_SENTENCE_CHARS else first.text[: QUOTED_SENTENCE_CHARS - 1] + "…"
    more = f" (and {len(unsupported) - 1} more)" if len(unsupported) > 1 else ""
    note = f'sentence {first.index + 1} ("{text}") is unsupported: {first.reason}{more}'
    level = confidence.level
    if len(unsupported) == len(sentences):
        level = "Low"
    elif level == "High":
        level = "Medium"
    return confidence.model_copy(update={"level": level, "reason": f"{confidence.reason}; {note}"})
