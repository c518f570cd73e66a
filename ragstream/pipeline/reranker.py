"""ReRanker: re-order the top ``N2`` retrieval candidates by a cross-encoder (seed 000 section 5.4).

The query is Prompt_MD over task, purpose, context and format (no System block, no attachments).
When the cross-encoder cannot load, the context's reranker is the bi-encoder re-score and
``extras["reranker"]`` says so. Ties keep the retrieval order.
"""

from __future__ import annotations

from ragstream.pipeline.context import StageContext
from ragstream.pipeline.render import query_text
from ragstream.pipeline.super_prompt import SuperPrompt


def run(sp: SuperPrompt, ctx: StageContext) -> SuperPrompt:
    """Write ``views_by_stage["reranked"]``: at most ``N2`` ids, best first."""
    candidates = sp.views_by_stage["retrieval"][: ctx.config.pipeline.N2_RERANK_TOP_K]
    query = query_text(sp.body)
    scores = ctx.reranker.score(query, [chunk.text for chunk in sp.chunks(candidates)])
    order = sorted(range(len(candidates)), key=lambda i: (-scores[i], i))
    sp.views_by_stage["reranked"] = [candidates[i] for i in order]
    sp.extras["reranker"] = {
        "backend": ctx.reranker.backend,
        "model": ctx.reranker.model,
        "degraded_reason": ctx.reranker.degraded_reason,
        "candidates_scored": len(candidates),
        "scores": [scores[i] for i in order],
    }
    sp.advance("reranked")
    return sp
