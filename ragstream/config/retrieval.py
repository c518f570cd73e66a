"""``retrieval``: dense, BM25 and hybrid search. How the defaults were chosen: docs/ranking.md."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from ragstream.config.base import ConfigSection


class RetrievalConfig(ConfigSection):
    """Dense, BM25 and hybrid search."""

    mode: Literal["hybrid", "dense", "bm25"] = Field(
        "hybrid", description="Which retrievers search: hybrid fuses dense and BM25 (fusion); dense or bm25 alone.")
    fusion: Literal["rrf", "alpha"] = Field(
        "alpha",
        description="How hybrid combines dense and BM25: alpha blends min-max normalised scores, rrf fuses "
        "ranks (dense_weight/(rrf_k+rank) + bm25_weight/(rrf_k+rank)).",
    )
    fusion_level: Literal["chunk", "neighbours", "document"] = Field(
        "neighbours",
        description="chunk: each chunk's own dense and BM25 scores are fused. neighbours: a chunk that fuses best "
        "among its neighbours (the chunks of its document at most fusion_window positions away) takes, per "
        "retriever, the best normalised score among them, so evidence split by a chunk boundary (a title in one "
        "chunk, the finding in the next) counts together; the other chunks keep their own score. document: the "
        "same over the whole document. Hits stay chunks.",
    )
    fusion_window: int = Field(
        1, ge=0, description="fusion_level=neighbours: how many chunk positions away evidence pools.")
    top_k: int = Field(10, description="Results returned by search.")
    candidates: int = Field(200, description="Candidates fetched per retriever before fusion (hybrid's depth).")
    rrf_k: int = Field(60, description="Reciprocal-rank-fusion constant.")
    dense_weight: float = Field(1.0, description="RRF weight of the dense ranking.")
    bm25_weight: float = Field(1.0, description="RRF weight of the BM25 ranking.")
    alpha: float = Field(0.5, description="alpha fusion: alpha*dense + (1-alpha)*bm25 of normalised scores.")
    normalisation: Literal["min_max", "dbsf"] = Field(
        "min_max",
        description="alpha fusion: how each retriever's candidate scores map to 0..1. min_max: lowest to highest "
        "candidate; dbsf (distribution-based): mean - dbsf_width*std .. mean + dbsf_width*std, clipped.",
    )
    dbsf_width: float = Field(3.0, gt=0, description="normalisation=dbsf: standard deviations either side of the mean.")
    score_threshold: float | None = Field(None, description="Drop results scoring below this (fused score).")
