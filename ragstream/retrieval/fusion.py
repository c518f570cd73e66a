"""Combine the dense and BM25 rankings of one hybrid search (pure functions, no store, no model).

Each retriever gives every candidate chunk a *contribution*: ``alpha`` fusion takes the min-max
normalised score times ``alpha`` (dense) or ``1 - alpha`` (BM25); ``rrf`` takes weight / (k + rank).
A chunk's own fused score is the sum of its two contributions (``level="chunk"``).

At ``level="neighbours"`` (and ``"document"``, the same over the whole document) evidence split by a
chunk boundary counts together: a chunk whose own score is the best of its neighbourhood (the chunks
of its document at most ``window`` positions away, itself included) takes, per retriever, the best
contribution in that neighbourhood; every other chunk keeps its own score. So a claim matched by
BM25 in an abstract's first chunk and by the dense vector in its second lifts the better of the two,
and no chunk is lifted just for sitting next to a good one. The result always lists chunks; ties are
ordered by the own score, then the id. :func:`fuse` is what
:class:`~ragstream.retrieval.searcher.Searcher` runs and what ``bench/retrieval_levers.py`` measures.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Literal

FusionMethod = Literal["rrf", "alpha"]
FusionLevel = Literal["chunk", "neighbours", "document"]
Normalisation = Literal["min_max", "dbsf"]


def reciprocal_rank_fusion(ranks: Sequence[Mapping[str, int]], weights: Sequence[float], k: int) -> dict[str, float]:
    """score(id) = sum over rankings of weight / (k + rank), ranks 1-based; an id missing from a ranking gets 0 from it."""
    fused: dict[str, float] = {}
    for ranking, weight in zip(ranks, weights, strict=True):
        for item, rank in ranking.items():
            fused[item] = fused.get(item, 0.0) + weight / (k + rank)
    return fused


def dense_ranks(scores: Mapping[str, float]) -> dict[str, int]:
    """1 + the number of distinct higher scores: tied ids share a rank and the next score takes the next rank."""
    position = {score: rank for rank, score in enumerate(sorted(set(scores.values()), reverse=True), start=1)}
    return {item: position[score] for item, score in scores.items()}


def min_max_normalise(scores: Mapping[str, float]) -> dict[str, float]:
    """Map scores to 0..1; a constant list maps to 1.0."""
    if not scores:
        return {}
    low, high = min(scores.values()), max(scores.values())
    span = high - low
    return {item: (score - low) / span if span else 1.0 for item, score in scores.items()}


def dbsf_normalise(scores: Mapping[str, float], width: float = 3.0) -> dict[str, float]:
    """Distribution-based score normalisation: map mean - width*std .. mean + width*std to 0..1, clipped.

    Unlike min-max, one outlying top score does not squash every other score towards 0, and the
    floor does not depend on how deep the candidate list was cut. A constant list maps to 1.0.
    """
    if not scores:
        return {}
    values = list(scores.values())
    mean = sum(values) / len(values)
    std = (sum((value - mean) ** 2 for value in values) / len(values)) ** 0.5
    if not std:
        return dict.fromkeys(scores, 1.0)
    low, span = mean - width * std, 2 * width * std
    return {item: min(max((score - low) / span, 0.0), 1.0) for item, score in scores.items()}


def normalise(scores: Mapping[str, float], how: Normalisation = "min_max", width: float = 3.0) -> dict[str, float]:
    """Scores mapped to 0..1 by ``how`` (min_max or dbsf with ``width`` standard deviations)."""
    return dbsf_normalise(scores, width) if how == "dbsf" else min_max_normalise(scores)


def alpha_blend(dense: Mapping[str, float], bm25: Mapping[str, float], alpha: float) -> dict[str, float]:
    """alpha * dense + (1 - alpha) * bm25 over min-max normalised scores; missing counts as 0."""
    dense_norm, bm25_norm = min_max_normalise(dense), min_max_normalise(bm25)
    return {
        item: alpha * dense_norm.get(item, 0.0) + (1 - alpha) * bm25_norm.get(item, 0.0)
        for item in dense_norm.keys() | bm25_norm.keys()
    }


def contributions(
    dense: Mapping[str, float],
    bm25: Mapping[str, float],
    *,
    method: FusionMethod,
    alpha: float,
    rrf_k: int,
    weights: tuple[float, float],
    normalisation: Normalisation = "min_max",
    dbsf_width: float = 3.0,
) -> tuple[dict[str, float], dict[str, float]]:
    """Each retriever's share of the fused score of each chunk it returned (their sum is the chunk-level fusion)."""
    if method == "alpha":
        return ({item: alpha * score for item, score in normalise(dense, normalisation, dbsf_width).items()},
                {item: (1 - alpha) * score for item, score in normalise(bm25, normalisation, dbsf_width).items()})
    return (reciprocal_rank_fusion([dense_ranks(dense)], [weights[0]], rrf_k),
            reciprocal_rank_fusion([dense_ranks(bm25)], [weights[1]], rrf_k))


def neighbourhoods(
    items: Sequence[str], document_of: Mapping[str, str], position_of: Mapping[str, int], window: int | None
) -> dict[str, tuple[str, ...]]:
    """For each item, the items of its document at most ``window`` positions away, itself included
    (``None``: the whole document; the members of one document then share one tuple)."""
    members: dict[str, list[str]] = {}
    for item in items:
        members.setdefault(document_of[item], []).append(item)
    near: dict[str, tuple[str, ...]] = {}
    for group in members.values():
        if window is None or len(group) == 1:
            shared = tuple(group)
            near.update(dict.fromkeys(group, shared))
            continue
        for item in group:  # a document rarely has more than a few candidates: pairwise is cheapest
            position = position_of[item]
            near[item] = tuple(other for other in group if abs(position_of[other] - position) <= window)
    return near


def fuse(
    dense: Mapping[str, float],
    bm25: Mapping[str, float],
    document_of: Mapping[str, str],
    position_of: Mapping[str, int] | None = None,
    *,
    method: FusionMethod = "alpha",
    level: FusionLevel = "neighbours",
    window: int = 1,
    alpha: float = 0.5,
    rrf_k: int = 60,
    weights: tuple[float, float] = (1.0, 1.0),
    normalisation: Normalisation = "min_max",
    dbsf_width: float = 3.0,
) -> list[tuple[str, float]]:
    """Chunk ids with fused scores, best first, from each retriever's chunk scores.

    ``document_of`` maps every chunk id to its document, ``position_of`` to its position in it (needed
    at ``level="neighbours"``). The scores never increase down the list.
    """
    dense_part, bm25_part = contributions(dense, bm25, method=method, alpha=alpha, rrf_k=rrf_k, weights=weights,
                                          normalisation=normalisation, dbsf_width=dbsf_width)
    items = sorted(dense_part.keys() | bm25_part.keys())
    own = {item: dense_part.get(item, 0.0) + bm25_part.get(item, 0.0) for item in items}
    scores = dict(own)
    if level != "chunk":
        if level == "neighbours" and position_of is None:
            raise ValueError("neighbours fusion needs each chunk's position in its document")
        near = neighbourhoods(items, document_of, position_of or {}, window if level == "neighbours" else None)
        pooled: dict[tuple[str, ...], tuple[float, float]] = {}  # per neighbourhood: best own score, pooled score
        for item in items:
            group = near[item]
            if len(group) == 1:  # alone in its neighbourhood: its own score is the pooled one
                continue
            if group not in pooled:
                pooled[group] = (max(own[other] for other in group),
                                 max(dense_part.get(other, 0.0) for other in group)
                                 + max(bm25_part.get(other, 0.0) for other in group))
            best_own, pooled_score = pooled[group]
            if own[item] >= best_own:  # the best of its neighbourhood takes the neighbourhood's evidence
                scores[item] = pooled_score
    ordered = sorted(items, key=lambda item: (-scores[item], -own[item], item))
    return [(item, scores[item]) for item in ordered]
