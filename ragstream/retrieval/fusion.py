"""Combine the dense and BM25 rankings of one hybrid search (pure functions, no store, no model).

Two methods: reciprocal-rank fusion (``rrf``) and alpha blending of min-max normalised scores
(``alpha``). Two levels: ``chunk`` fuses each chunk's own scores; ``document`` fuses per document,
each retriever scoring a document by its best chunk, and gives every chunk its document's fused
score (the result still lists chunks; inside a document the chunk-level fusion orders them).
:func:`fuse` is what :class:`~ragstream.retrieval.searcher.Searcher` runs and what
``bench/retrieval_levers.py`` measures.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Literal

FusionMethod = Literal["rrf", "alpha"]
FusionLevel = Literal["chunk", "document"]


def reciprocal_rank_fusion(rankings: Sequence[Sequence[str]], weights: Sequence[float], k: int) -> dict[str, float]:
    """score(id) = sum over rankings of weight / (k + rank), ranks 1-based."""
    fused: dict[str, float] = {}
    for ranking, weight in zip(rankings, weights, strict=True):
        for rank, item in enumerate(ranking, start=1):
            fused[item] = fused.get(item, 0.0) + weight / (k + rank)
    return fused


def min_max_normalise(scores: Mapping[str, float]) -> dict[str, float]:
    """Map scores to 0..1; a constant list maps to 1.0."""
    if not scores:
        return {}
    low, high = min(scores.values()), max(scores.values())
    span = high - low
    return {item: (score - low) / span if span else 1.0 for item, score in scores.items()}


def alpha_blend(dense: Mapping[str, float], bm25: Mapping[str, float], alpha: float) -> dict[str, float]:
    """alpha * dense + (1 - alpha) * bm25 over min-max normalised scores; missing counts as 0."""
    dense_norm, bm25_norm = min_max_normalise(dense), min_max_normalise(bm25)
    return {
        item: alpha * dense_norm.get(item, 0.0) + (1 - alpha) * bm25_norm.get(item, 0.0)
        for item in dense_norm.keys() | bm25_norm.keys()
    }


def best_per_group(scores: Mapping[str, float], group_of: Mapping[str, str]) -> dict[str, float]:
    """Each group's (document's) best score among its items (chunks)."""
    best: dict[str, float] = {}
    for item, score in scores.items():
        group = group_of[item]
        if group not in best or score > best[group]:
            best[group] = score
    return best


def ranked_ids(scores: Mapping[str, float]) -> list[str]:
    """Ids by score, best first; ties by id."""
    return [item for item, _ in sorted(scores.items(), key=lambda entry: (-entry[1], entry[0]))]


def fuse_scores(
    dense: Mapping[str, float],
    bm25: Mapping[str, float],
    *,
    method: FusionMethod,
    alpha: float,
    rrf_k: int,
    weights: tuple[float, float],
) -> dict[str, float]:
    """One level of fusion: ``alpha`` blends min-max scores, ``rrf`` fuses the two rankings."""
    if method == "alpha":
        return alpha_blend(dense, bm25, alpha)
    return reciprocal_rank_fusion([ranked_ids(dense), ranked_ids(bm25)], list(weights), rrf_k)


def fuse(
    dense: Mapping[str, float],
    bm25: Mapping[str, float],
    document_of: Mapping[str, str],
    *,
    method: FusionMethod = "alpha",
    level: FusionLevel = "document",
    alpha: float = 0.5,
    rrf_k: int = 60,
    weights: tuple[float, float] = (1.0, 1.0),
) -> list[tuple[str, float]]:
    """Chunk ids with fused scores, best first, from each retriever's chunk scores.

    ``document_of`` maps every chunk id to its document. At ``level="document"`` a chunk's score is
    its document's fused score, computed from the document's best chunk per retriever; chunks of one
    document are ordered by their chunk-level fusion, then by id. The scores never increase down
    the list.
    """
    chunk_level = fuse_scores(dense, bm25, method=method, alpha=alpha, rrf_k=rrf_k, weights=weights)
    if level == "chunk":
        return sorted(chunk_level.items(), key=lambda entry: (-entry[1], entry[0]))
    by_document = fuse_scores(best_per_group(dense, document_of), best_per_group(bm25, document_of),
                              method=method, alpha=alpha, rrf_k=rrf_k, weights=weights)
    ordered = sorted(chunk_level, key=lambda item: (-by_document[document_of[item]], -chunk_level[item], item))
    return [(item, by_document[document_of[item]]) for item in ordered]
