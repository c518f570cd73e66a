"""What the answer path already knows about how sure to be, as numbers: the calibrated confidence's inputs.

Each signal comes from the pipeline's own state (the ReRanker's cross-encoder relevance and blended scores,
each retriever's own scores, Retrieval's order), the attachments the answer read and the citations it made;
nothing is computed again and no model runs. A page is a document, or one page of a paged document (a PDF).
``bench/train_confidence.py`` collects the same signals (``Confidence.signals``) to fit the model that reads them.
"""

from __future__ import annotations

from collections.abc import Sequence

from ragstream.answer.models import Citation, DocumentChunk
from ragstream.models import Chunk
from ragstream.pipeline.stages import RERANKER, RETRIEVAL
from ragstream.pipeline.super_prompt import SuperPrompt

SIGNALS: tuple[str, ...] = (
    "ce_top", "ce_scored", "ce_margin", "blend_top", "blend_margin", "top_share", "retrievers_agree",
    "rerank_kept_top", "top_relevance", "cited_best", "avg_relevance", "cites_top", "supported_share",
)
"""Every signal's name (docs/answers.md, Confidence); a model reads some of them."""

PageKey = tuple[str, int | None]


def page_of(chunk: Chunk) -> PageKey:
    """The page a chunk stands on: its document, and its page number in a paged document."""
    return chunk.metadata.document_id, chunk.metadata.page


def _attachment_page(chunk: DocumentChunk) -> PageKey:
    page = chunk.metadata.get("page")
    return chunk.document_id, page if isinstance(page, int) else None


def _page_best(ids: Sequence[str], scores: Sequence[float], pages: dict[str, PageKey]) -> list[tuple[PageKey, float]]:
    """Pages in order of first appearance in ``ids`` with the best score of their chunks."""
    best: dict[PageKey, float] = {}
    for chunk_id, score in zip(ids, scores, strict=False):
        key = pages.get(chunk_id)
        if key is not None:
            best[key] = max(best.get(key, score), score)
    return list(best.items())


def _margin(ranked: list[tuple[PageKey, float]]) -> float:
    """The first page's best score minus the best score of any other page (its own score when alone)."""
    if not ranked:
        return 0.0
    others = [score for _, score in ranked[1:]]
    return ranked[0][1] - (max(others) if others else 0.0)


def _top_page(sp: SuperPrompt, entry: str, pages: dict[str, PageKey]) -> PageKey | None:
    view = sp.views_by_stage.get(entry) or []
    return pages.get(view[0]) if view else None


def confidence_signals(sp: SuperPrompt, chunks: Sequence[DocumentChunk], cited: Sequence[Citation],
                       supported_share: float) -> dict[str, float]:
    """Every signal of :data:`SIGNALS` for one answer: ``chunks`` are its attachments (best first), ``cited`` its
    resolved citations, ``supported_share`` the share of its sentences found supported (1 with none checked)."""
    pages = {chunk.chunk_id: page_of(chunk) for chunk in sp.base_context_chunks}
    reranked = sp.views_by_stage.get(RERANKER.entry) or sp.views_by_stage.get(RETRIEVAL.entry) or []
    reranked_scores = sp.scores_by_stage.get(RERANKER.entry) or sp.scores_by_stage.get(RETRIEVAL.entry) or []
    blend = _page_best(reranked, reranked_scores, pages)
    relevance = sp.rerank.relevance
    ce_ids = [chunk_id for chunk_id in reranked if chunk_id in relevance]
    ce_pages = _page_best(ce_ids, [relevance[chunk_id] for chunk_id in ce_ids], pages)
    top = _attachment_page(chunks[0]) if chunks else None
    dense = {cid: s.dense for cid, s in sp.retriever_scores.items() if s.dense is not None}
    bm25 = {cid: s.bm25 for cid, s in sp.retriever_scores.items() if s.bm25 is not None}
    dense_top = pages.get(max(dense, key=lambda cid: dense[cid])) if dense else None
    bm25_top = pages.get(max(bm25, key=lambda cid: bm25[cid])) if bm25 else None
    cited_scores = [c.score or 0.0 for c in cited]
    cited_pages = {(c.document_id, c.page) for c in cited}
    relevances = [chunk.relevance_score for chunk in chunks]
    return {
        "ce_top": max(relevance.values(), default=0.0),
        "ce_scored": float(bool(relevance)),
        "ce_margin": _margin(ce_pages),
        "blend_top": blend[0][1] if blend else 0.0,
        "blend_margin": _margin(blend),
        "top_share": sum(_attachment_page(chunk) == top for chunk in chunks) / len(chunks) if chunks else 0.0,
        "retrievers_agree": float(dense_top is not None and dense_top == bm25_top),
        "rerank_kept_top": float(_top_page(sp, RETRIEVAL.entry, pages) == _top_page(sp, RERANKER.entry, pages)),
        "top_relevance": relevances[0] if relevances else 0.0,
        "cited_best": max(cited_scores, default=0.0),
        "avg_relevance": sum(relevances) / len(relevances) if relevances else 0.0,
        "cites_top": float(top in cited_pages),
        "supported_share": supported_share,
    }
