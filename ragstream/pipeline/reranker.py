"""ReRanker: re-order the top ``N2`` retrieval candidates with a cross-encoder (docs/pipeline.md).

The query is Prompt_MD over task, purpose, context and format (no System block, no attachments).
Without a reranker (the cross-encoder cannot load, or reranking is off) the stage keeps the fused
retrieval order, so it never lowers the ranking it was given, and its report says why. Ties keep
the retrieval order.
"""

from __future__ import annotations

from ragstream.errors import EmbeddingFailureError
from ragstream.pipeline.context import StageContext
from ragstream.pipeline.query_pieces import search_body
from ragstream.pipeline.render import query_text
from ragstream.pipeline.super_prompt import SuperPrompt


def run(sp: SuperPrompt, ctx: StageContext) -> SuperPrompt:
    """Write ``views_by_stage["reranked"]``: at most ``N2`` ids, best first."""
    candidates = sp.views_by_stage["retrieval"][: ctx.config.pipeline.N2_RERANK_TOP_K]
    retrieval_scores = sp.scores_by_stage.get("retrieval", [])[: len(candidates)]
    reranker, reason = ctx.reranker, ctx.reranker_unavailable
    if reranker is not None:
        try:
            scores = reranker.score(query_text(search_body(sp)), [chunk.text for chunk in sp.chunks(candidates)])
        except EmbeddingFailureError as error:
            reranker, reason = None, f"the reranker's embedder is unavailable: {error.message}"
    if reranker is None:
        sp.views_by_stage["reranked"] = list(candidates)
        sp.scores_by_stage["reranked"] = list(retrieval_scores)
        sp.report("reranked", "function", fallback=True, reason=f"kept the retrieval order: {reason}")
        sp.extras["reranker"] = {"backend": "none", "candidates_scored": 0}
    else:
        order = sorted(range(len(candidates)), key=lambda i: (-scores[i], i))
        sp.views_by_stage["reranked"] = [candidates[i] for i in order]
        sp.scores_by_stage["reranked"] = [round(scores[i], 6) for i in order]
        sp.report("reranked", "function", fallback=reranker.degraded_reason is not None,
                  reason=reranker.degraded_reason, model=reranker.model)
        sp.extras["reranker"] = {"backend": reranker.backend, "candidates_scored": len(candidates)}
    sp.advance("reranked")
    return sp
