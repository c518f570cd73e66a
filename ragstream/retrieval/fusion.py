"""Combine rankings: reciprocal-rank fusion and alpha blending of min-max normalised scores."""

from __future__ import annotations

from collections.abc import Mapping, Sequence


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
