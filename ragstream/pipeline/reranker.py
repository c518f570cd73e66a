"""ReRanker: re-order the head of the retrieval view with a cross-encoder (docs/pipeline.md).

The query is the text Retrieval searched with (the task, or A0's standalone rewrite of a follow-up,
with purpose and context). The cross-encoder scores the first ``reranker.top_n`` of the ``N2``
candidates (``retrieval/rerank.py``: heading + the window around the hit, blended with the fused
score by ``reranker.weight``); the rest keep their fused order after them. Without a reranker (the
model cannot load, reranking is off) or when the question's deadline runs out, the stage keeps the
fused retrieval order and its report says why. ``sp.rerank`` holds both scores and the moves.
With ``reranker.ranking = "learned"`` the head's logits become features of the learned ranker
(``retrieval/learned_ranker.py``), which orders the candidates page by page.
"""

from __future__ import annotations

from dataclasses import dataclass

from ragstream.config import PipelineLimits, RerankerConfig
from ragstream.errors import DeadlineExceededError, EmbeddingFailureError, ModelUnavailableError
from ragstream.pipeline.context import StageContext
from ragstream.pipeline.query_pieces import normalized_query, search_body
from ragstream.pipeline.stages import RERANKER as SPEC
from ragstream.pipeline.stages import RETRIEVAL
from ragstream.pipeline.super_prompt import RerankDetails, ScoreSummary, SuperPrompt
from ragstream.providers.deadline import Deadline
from ragstream.providers.rerankers.base import Reranker
from ragstream.retrieval.learned_ranker import LearnedRanker, load_ranker, rerank_learned
from ragstream.retrieval.rerank import Reranked, relevance, rerank, summary

SCORE_DIGITS = 6


@dataclass(frozen=True)
class Inputs:
    """What the ReRanker uses: the reranker (or why there is none), the ``reranker`` and ``pipeline``
    sections and the question's deadline."""

    reranker: Reranker | None
    unavailable: str | None
    settings: RerankerConfig
    limits: PipelineLimits
    deadline: Deadline
    learned: LearnedRanker | None = None
    """``reranker.ranking = "learned"``: the loaded model (None with the blend, or when it cannot load)."""
    learned_unavailable: str | None = None


def inputs(ctx: StageContext) -> Inputs:
    """The ReRanker's inputs, taken from the pipeline's context (the learned model is loaded once per process)."""
    settings = ctx.config.reranker
    learned, why = None, None
    if settings.ranking == "learned":
        try:
            learned = load_ranker(settings.ranker_model)
        except ModelUnavailableError as error:
            why = f"the learned ranker is unavailable, blended instead: {error.message}"
    return Inputs(ctx.reranker, ctx.reranker_unavailable, settings, ctx.config.pipeline, ctx.deadline, learned, why)


def _order(sp: SuperPrompt, deps: Inputs, reranker: Reranker, candidates: list[str], fused: list[float]) -> Reranked:
    """The learned ranker's order when it is loaded, else the blend's."""
    query, chunks = normalized_query(search_body(sp)), sp.chunks(candidates)
    if deps.learned is None:
        return rerank(reranker, query, chunks, fused, deps.settings, deps.deadline)
    retrievers = {cid: (s.dense, s.bm25) for cid, s in sp.retriever_scores.items()}
    return rerank_learned(reranker, deps.learned, query, chunks, fused, retrievers, deps.settings, deps.deadline)


def run(sp: SuperPrompt, deps: Inputs) -> SuperPrompt:
    """Write ``views_by_stage["reranked"]`` (at most ``N2`` ids, best first), its scores and ``sp.rerank``."""
    candidates = sp.views_by_stage[RETRIEVAL.entry][: deps.limits.N2_RERANK_TOP_K]
    fused = sp.scores_by_stage.get(RETRIEVAL.entry, [])[: len(candidates)]
    reranker, reason = deps.reranker, deps.unavailable
    outcome = None
    if reranker is not None:
        try:
            outcome = _order(sp, deps, reranker, candidates, fused)
        except EmbeddingFailureError as error:
            reason = f"the reranker's embedder is unavailable: {error.message}"
        except DeadlineExceededError as error:
            reason = f"the question's deadline ran out: {error.message}"
    if reranker is None or outcome is None:
        sp.views_by_stage[SPEC.entry] = list(candidates)
        sp.scores_by_stage[SPEC.entry] = list(fused)
        sp.rerank = RerankDetails()
        sp.report(SPEC.entry, "function", fallback=True, reason=f"kept the retrieval order: {reason}")
    else:
        sp.views_by_stage[SPEC.entry] = [candidates[i] for i in outcome.order]
        sp.scores_by_stage[SPEC.entry] = [round(score, SCORE_DIGITS) for score in outcome.scores]
        new_rank = {index: rank for rank, index in enumerate(outcome.order)}
        relevant = {i: relevance(score, reranker.backend) for i, score in outcome.cross_scores.items()}
        sp.rerank = RerankDetails(
            backend=reranker.backend, ranking="learned" if deps.learned is not None else "blend",
            weight=deps.settings.weight, candidates_scored=outcome.scored,
            skipped=outcome.skipped,
            cross_scores={candidates[i]: round(score, SCORE_DIGITS) for i, score in outcome.cross_scores.items()},
            relevance={candidates[i]: round(value, SCORE_DIGITS) for i, value in relevant.items()},
            score_summary=_summary(list(outcome.cross_scores.values())),
            relevance_summary=_summary(list(relevant.values())),
            fused_scores={candidates[i]: fused[i] for i in outcome.cross_scores},
            moved={candidates[i]: i - new_rank[i] for i in outcome.cross_scores},
        )
        degraded = reranker.degraded_reason or deps.learned_unavailable
        sp.report(SPEC.entry, "function", fallback=degraded is not None, reason=degraded or outcome.skipped,
                  model=reranker.model if deps.learned is None else f"{reranker.model} + {deps.learned.path.name}")
    sp.extras["reranker"] = {"backend": sp.rerank.backend, "candidates_scored": sp.rerank.candidates_scored}
    sp.advance(SPEC.entry)
    return sp


def _summary(scores: list[float]) -> ScoreSummary:
    return ScoreSummary(**{key: round(value, SCORE_DIGITS) for key, value in summary(scores).items()})
