"""Cross-encoder reranking of the head of a fused ranking, shared by the ReRanker stage and ``search --rerank``.

The cross-encoder reads each candidate as its heading (title and section path) and the window of
its text that holds most of the query's words, cut to ``reranker.max_tokens``. Its logits (min-max
normalised over the scored head) and the fused scores (relative to the best) are blended with
``reranker.weight``;
the candidates past the head keep their fused order after it. When the fused ranking is decisive
(its best score leads the second by more than ``reranker.skip_margin`` of the best), the model is
not run at all; when the model is sure of no passage (its best logit is below ``reranker.min_logit``),
the fused order is kept.
"""

from __future__ import annotations

import math
import re
import time
from collections.abc import Sequence
from dataclasses import dataclass, field

from ragstream.config import RerankerConfig
from ragstream.errors import DeadlineExceededError, EmbeddingFailureError
from ragstream.models import Chunk, SearchResult
from ragstream.providers.deadline import Deadline
from ragstream.providers.rerankers.base import Reranker
from ragstream.text_terms import content_terms, words

WORDS_PER_TOKEN = 0.75
"""English prose takes about 4 word-piece tokens per 3 words: a window of ``max_tokens * 0.75`` words
fills the pair (the tokenizer still truncates whatever is longer)."""
HEADING_SEPARATOR = " > "
BI_ENCODER = "bi_encoder"
MAX_LOGIT = 50.0
"""|logit| past which the sigmoid is 0 or 1 to double precision (and ``math.exp`` cannot overflow)."""
STEM_CHARS = 5
_PUNCTUATION = re.compile(r"[^\w\s]+")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9`\"'(\[])")


@dataclass(frozen=True)
class Reranked:
    """The new order of the candidates and what decided it."""

    order: list[int]
    """Candidate indices, best first (every candidate once)."""
    scores: list[float]
    """The final score of each entry of ``order``: the blend for the scored head, ``(1 - weight) x fused`` after it."""
    cross_scores: dict[int, float] = field(default_factory=dict)
    """The cross-encoder's logit of each scored candidate (by candidate index)."""
    skipped: str | None = None
    """Why the cross-encoder did not run (the fused ranking was decisive), or None."""

    @property
    def scored(self) -> int:
        """How many candidates the cross-encoder scored."""
        return len(self.cross_scores)


def heading(chunk: Chunk) -> str:
    """The chunk's title and section path, as the passage's context line."""
    meta = chunk.metadata
    parts = [meta.title] if meta.title else []
    parts += [part for part in meta.header_path.split(HEADING_SEPARATOR) if part and part != meta.title]
    return HEADING_SEPARATOR.join(parts)


def passage_window(query: str, text: str, max_words: int) -> str:
    """The run of at most ``max_words`` consecutive lines/sentences of ``text`` that covers the most
    distinct query terms (the earliest such run on a tie); ``text`` itself when it is short enough."""
    if len(text.split()) <= max_words:
        return text
    terms = stems(query)
    units = [unit for unit in _units(text) if unit.strip()]
    sizes = [len(unit.split()) for unit in units]
    found = [stems(unit) & terms for unit in units]
    best, best_span = -1, (0, 1)
    end, words_in = 0, 0
    for start in range(len(units)):
        if end <= start:  # the window restarts at this unit
            end, words_in = start, 0
        while end < len(units) and words_in + sizes[end] <= max_words:
            words_in += sizes[end]
            end += 1
        stop = max(end, start + 1)  # one unit longer than the window: it alone, cut below
        covered = len(set().union(*found[start:stop]))
        if covered > best:
            best, best_span = covered, (start, stop)
        if end > start:
            words_in -= sizes[start]
    return " ".join(" ".join(units[best_span[0] : best_span[1]]).split()[:max_words])


def stems(text: str) -> set[str]:
    """Content words of ``text`` split at punctuation (``httpx.Timeout``: two), cut to their first
    ``STEM_CHARS`` letters so that 'timeouts' meets 'timeout'."""
    return {term[:STEM_CHARS] for term in content_terms(_PUNCTUATION.sub(" ", text))}


def _units(text: str) -> list[str]:
    """Lines, and the sentences of a line: the pieces a window is made of."""
    return [sentence for line in text.splitlines() for sentence in _SENTENCE_END.split(line)]


def passages(query: str, chunks: Sequence[Chunk], config: RerankerConfig) -> list[str]:
    """What the cross-encoder reads of each chunk."""
    max_words = max(1, int(config.max_tokens * WORDS_PER_TOKEN) - len(words(query)))
    out = []
    for chunk in chunks:
        body = passage_window(query, chunk.text, max_words) if config.passage_window else chunk.text
        context = heading(chunk) if config.passage_heading else ""
        out.append(f"{context}\n{body}" if context else body)
    return out


def decisive(fused: Sequence[float], margin: float) -> bool:
    """Whether the best fused score leads the second by more than ``margin`` of the best."""
    if margin >= 1.0 or len(fused) < 2 or fused[0] <= 0:
        return False
    return (fused[0] - fused[1]) / fused[0] > margin


def min_max(values: Sequence[float]) -> list[float]:
    """``values`` scaled to 0..1 (all 0 when they are equal)."""
    low, high = min(values, default=0.0), max(values, default=0.0)
    return [0.0 if high == low else (value - low) / (high - low) for value in values]


def relative(values: Sequence[float]) -> list[float]:
    """``values`` divided by the largest (0..1 for non-negative fused scores; all 0 when it is not positive)."""
    top = max(values, default=0.0)
    return [value / top if top > 0 else 0.0 for value in values]


def blend(cross: Sequence[float], fused: Sequence[float], weight: float) -> list[float]:
    """The final scores of a scored head: ``weight`` x min-max(cross) + (1 - weight) x fused (relative to the best).
    ``fused`` is the whole candidate list's; only its first ``len(cross)`` entries are blended."""
    scaled = relative(fused)
    return [weight * c + (1.0 - weight) * f for c, f in zip(min_max(cross), scaled, strict=False)]


def relevance(score: float, backend: str) -> float:
    """A reranker's score as a 0..1 relevance: the sigmoid of a cross-encoder's logit; a bi-encoder's cosine
    clipped to 0..1."""
    if backend == BI_ENCODER:
        return min(1.0, max(0.0, score))
    return 1.0 / (1.0 + math.exp(-max(-MAX_LOGIT, min(MAX_LOGIT, score))))


def summary(scores: Sequence[float]) -> dict[str, float]:
    """``count``, ``min``, ``max`` and ``mean`` of ``scores`` (all 0 for none)."""
    if not scores:
        return {"count": 0, "min": 0.0, "max": 0.0, "mean": 0.0}
    return {"count": len(scores), "min": min(scores), "max": max(scores), "mean": sum(scores) / len(scores)}


def rerank(reranker: Reranker, query: str, chunks: Sequence[Chunk], fused: Sequence[float], config: RerankerConfig,
           deadline: Deadline | None = None) -> Reranked:
    """Rerank ``chunks`` (in fused order, with their fused scores): the cross-encoder scores the first
    ``config.top_n``. Raises DeadlineExceededError when ``deadline`` passes while it scores."""
    count = len(chunks)
    tail_scores = [(1.0 - config.weight) * score for score in relative(fused)]  # never above a head score
    if decisive(fused, config.skip_margin):
        return Reranked(order=list(range(count)), scores=tail_scores,
                        skipped=f"the fused ranking is decisive (its best leads by more than {config.skip_margin:g})")
    head = min(count, config.top_n)
    logits = reranker.score(query, passages(query, chunks[:head], config), deadline=deadline)
    return blended(logits, fused, config)


def blended(logits: Sequence[float], fused: Sequence[float], config: RerankerConfig) -> Reranked:
    """The blend's order of candidates with fused scores ``fused`` whose first ``len(logits)`` the cross-encoder
    scored: the head by ``config.weight`` x its logits (min-max) + the rest x fused, the tail after it; the fused
    order when no logit reaches ``config.min_logit``."""
    count, head = len(fused), len(logits)
    tail_scores = [(1.0 - config.weight) * score for score in relative(fused)]
    if max(logits, default=config.min_logit) < config.min_logit:  # the model is sure of no passage: keep the fused order
        return Reranked(order=list(range(count)), scores=tail_scores, cross_scores=dict(enumerate(logits)),
                        skipped=f"the cross-encoder found no passage scoring {config.min_logit:g} or more")
    final = blend(logits, fused, config.weight)
    ranked_head = sorted(range(head), key=lambda i: (-final[i], i))
    order = ranked_head + list(range(head, count))
    scores = [final[i] for i in ranked_head] + tail_scores[head:]
    return Reranked(order=order, scores=scores, cross_scores=dict(enumerate(logits)))


def rerank_result(result: SearchResult, reranker: Reranker | None, unavailable: str | None, config: RerankerConfig,
                  deadline: Deadline | None = None) -> SearchResult:
    """``result`` with its head re-ordered by the cross-encoder: each hit's ``score`` becomes the final
    score, ``rerank_score`` the model's, ``fused_score`` the search's own. Without a reranker (or when
    the deadline passes) the hits keep their order and ``rerank_reason`` says why."""
    if reranker is None or not result.hits:
        return result.model_copy(update={"rerank_reason": unavailable if reranker is None else None})
    fused = [hit.score for hit in result.hits]
    started = time.perf_counter()
    try:
        outcome = rerank(reranker, result.query, [hit.chunk for hit in result.hits], fused, config, deadline)
    except (DeadlineExceededError, EmbeddingFailureError) as error:
        return result.model_copy(update={"rerank_reason": error.message})
    hits = [result.hits[index].model_copy(update={
        "rank": rank, "score": score, "fused_score": fused[index], "rerank_score": outcome.cross_scores.get(index)})
        for rank, (index, score) in enumerate(zip(outcome.order, outcome.scores, strict=True), start=1)]
    latencies = dict(result.latencies_ms)
    latencies["rerank"] = round((time.perf_counter() - started) * 1000, 3)
    latencies["total"] = round(latencies.get("total", 0.0) + latencies["rerank"], 3)
    return result.model_copy(update={"hits": hits, "reranked": outcome.skipped is None, "rerank_reason": outcome.skipped,
                                     "latencies_ms": latencies})
