"""Features of each candidate page for the learned ranker (docs/ranking.md), one code path for training and run time.

The ReRanker stage's candidates (the head of Retrieval's list, in fused order) are grouped by page (their
document). Each page gets one row of :data:`FEATURES`, computed only from what the stage already holds: the
fused score and rank, each retriever's own score and rank (``SuperPrompt.retriever_scores``), the
cross-encoder's logits of the scored head, the query's terms found in the page's title, heading paths, file
path and text, how many of its chunks are candidates and in the head, and its best chunk's length and
position. A missing value (a chunk one retriever did not return, a page the cross-encoder did not score) is
NaN, which LightGBM routes on its own.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from ragstream.config import RerankerConfig
from ragstream.models import Chunk
from ragstream.retrieval.rerank import HEADING_SEPARATOR, blended, stems

FEATURES: tuple[str, ...] = (
    "blend_best", "blend_page_rank",
    "fused_best", "fused_second", "fused_page_rank", "fused_chunk_rank",
    "dense_best", "dense_gap", "dense_rank",
    "bm25_rel", "bm25_rank",
    "ce_best", "ce_gap", "ce_rank", "ce_question_max", "ce_scored",
    "chunks_candidates", "chunks_head", "chunks_share",
    "title_match", "heading_match", "path_match", "text_match", "query_terms",
    "best_chunk_words", "best_chunk_position",
)
"""The columns of a page's row, in order (the shipped model's card lists the same)."""
MISSING = math.nan


@dataclass(frozen=True)
class Candidate:
    """One candidate chunk as the ReRanker stage sees it."""

    chunk: Chunk
    fused: float
    """Retrieval's score (0..1, relative to the question's best)."""
    dense: float | None = None
    bm25: float | None = None
    cross: float | None = None
    """The cross-encoder's logit, for a chunk of the scored head; else None."""


@dataclass(frozen=True)
class PageRows:
    """The pages of one question's candidates, in order of first appearance, with their candidates and features."""

    pages: list[str]
    members: list[list[int]]
    """Per page, the indices of its candidates (fused order)."""
    matrix: np.ndarray
    """One row of :data:`FEATURES` per page."""


def candidates_of(chunks: Sequence[Chunk], fused: Sequence[float],
                  retrievers: Mapping[str, tuple[float | None, float | None]], logits: Sequence[float]) -> list[Candidate]:
    """The stage's candidates: ``chunks`` in fused order with their fused scores, each retriever's (dense, BM25)
    score by chunk id, and the cross-encoder's ``logits`` of the first ``len(logits)``."""
    return [Candidate(chunk=chunk, fused=score, dense=retrievers.get(chunk.chunk_id, (None, None))[0],
                      bm25=retrievers.get(chunk.chunk_id, (None, None))[1],
                      cross=logits[index] if index < len(logits) else None)
            for index, (chunk, score) in enumerate(zip(chunks, fused, strict=True))]


def page_key(chunk: Chunk) -> str:
    """The page a chunk belongs to: its document."""
    return chunk.metadata.document_id


def _ranks(values: Sequence[float | None]) -> list[float]:
    """0-based rank of each value among the present ones, best (highest) first; NaN for a missing one."""
    present = sorted((i for i, v in enumerate(values) if v is not None), key=lambda i: (-(values[i] or 0.0), i))
    ranks = [MISSING] * len(values)
    for rank, index in enumerate(present):
        ranks[index] = float(rank)
    return ranks


def _best(values: Sequence[float | None], members: Sequence[int]) -> float:
    present = [value for i in members if (value := values[i]) is not None]
    return max(present) if present else MISSING


def _share(terms: set[str], text: str) -> float:
    return len(terms & stems(text)) / len(terms) if terms else 0.0


def page_rows(query: str, candidates: Sequence[Candidate], config: RerankerConfig) -> PageRows:
    """Group ``candidates`` (fused order) by page and compute every page's :data:`FEATURES`; the candidates with a
    logit are the cross-encoder's head, and ``config`` (weight, min_logit) gives the blend's own order."""
    pages: list[str] = []
    members: list[list[int]] = []
    where: dict[str, int] = {}
    for index, candidate in enumerate(candidates):
        key = page_key(candidate.chunk)
        if key not in where:
            where[key] = len(pages)
            pages.append(key)
            members.append([])
        members[where[key]].append(index)
    terms = stems(query)
    top_fused = max((c.fused for c in candidates), default=0.0)
    fused = [c.fused / top_fused if top_fused > 0 else 0.0 for c in candidates]
    dense = [c.dense for c in candidates]
    bm25 = [c.bm25 for c in candidates]
    cross = [c.cross for c in candidates]
    dense_rank, bm25_rank, cross_rank = _ranks(dense), _ranks(bm25), _ranks(cross)
    top_dense = max((v for v in dense if v is not None), default=MISSING)
    top_bm25 = max((v for v in bm25 if v is not None), default=MISSING)
    top_cross = max((v for v in cross if v is not None), default=MISSING)
    scored = sum(v is not None for v in cross)
    head = scored
    blend = blended([v for v in cross if v is not None], [c.fused for c in candidates], config)
    blend_score = dict(zip(blend.order, blend.scores, strict=True))
    blend_rank: dict[str, int] = {}
    for index in blend.order:
        blend_rank.setdefault(page_key(candidates[index].chunk), len(blend_rank))
    matrix = np.full((len(pages), len(FEATURES)), MISSING, dtype=np.float64)
    for row, group in enumerate(members):
        best = group[0]  # fused order: a page's first candidate is its best
        chunk = candidates[best].chunk
        meta = chunk.metadata
        second = fused[group[1]] if len(group) > 1 else 0.0
        dense_best, bm25_best, cross_best = _best(dense, group), _best(bm25, group), _best(cross, group)
        headings = [candidates[i].chunk.metadata.header_path.replace(HEADING_SEPARATOR, " ") for i in group]
        values = {
            "blend_best": max(blend_score[i] for i in group), "blend_page_rank": float(blend_rank[pages[row]]),
            "fused_best": fused[best], "fused_second": second, "fused_page_rank": float(row),
            "fused_chunk_rank": float(best),
            "dense_best": dense_best, "dense_gap": top_dense - dense_best,
            "dense_rank": min((dense_rank[i] for i in group), default=MISSING),
            "bm25_rel": bm25_best / top_bm25 if top_bm25 and top_bm25 > 0 else MISSING,
            "bm25_rank": min((bm25_rank[i] for i in group), default=MISSING),
            "ce_best": cross_best, "ce_gap": top_cross - cross_best,
            "ce_rank": min((cross_rank[i] for i in group), default=MISSING),
            "ce_question_max": top_cross, "ce_scored": float(sum(cross[i] is not None for i in group)),
            "chunks_candidates": float(len(group)), "chunks_head": float(sum(i < head for i in group)),
            "chunks_share": len(group) / len(candidates),
            "title_match": _share(terms, meta.title),
            "heading_match": max(_share(terms, text) for text in headings),
            "path_match": _share(terms, meta.source.replace("_", " ")),
            "text_match": max(_share(terms, candidates[i].chunk.text) for i in group),
            "query_terms": float(len(terms)),
            "best_chunk_words": float(meta.word_count), "best_chunk_position": float(meta.chunk_index),
        }
        matrix[row] = [values[name] for name in FEATURES]
    if scored == 0:
        matrix[:, FEATURES.index("ce_scored")] = 0.0
    return PageRows(pages=pages, members=members, matrix=matrix)
