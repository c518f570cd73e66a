"""Retrieval: the first ranked candidate list from documents and conversation (seed 000 section 5.3).

Every query piece runs the spine's hybrid search (``rs.search``, ``N1`` hits per piece). A chunk's
score for a piece is its cosine to the piece, for every candidate of every piece (BM25-only hits
included; passage vectors come from the embedding cache, so this costs no model run);
conversation pairs are embedded and scored the same way. Scores are aggregated over all pieces with LogAvgExp (``pipeline.logavgexp_tau``);
ties go to the better hybrid rank, then the id. The top ``N1`` ids form the view.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ragstream.errors import NoRetrievalResultsError
from ragstream.models import Chunk
from ragstream.pipeline.context import StageContext
from ragstream.pipeline.conversation import conversation_chunks
from ragstream.pipeline.query_pieces import normalized_query, split_query
from ragstream.pipeline.scoring import log_avg_exp
from ragstream.pipeline.super_prompt import SuperPrompt

SEARCH_MODE = "hybrid"
NOT_RANKED = float("inf")
"""Hybrid rank of a chunk no piece's hybrid search returned (conversation pairs)."""


def run(sp: SuperPrompt, ctx: StageContext) -> SuperPrompt:
    """Populate ``base_context_chunks`` and ``views_by_stage["retrieval"]``."""
    limits = ctx.config.pipeline
    query = normalized_query(sp.body)
    pieces = split_query(query, limits.N0_QUERY_PIECES, ctx.config.limits.max_query_chars)
    if not pieces:
        raise NoRetrievalResultsError("the prompt has no task, context or purpose text to search with")
    embedder = ctx.rs.embedder()
    piece_vectors = embedder.embed_queries(pieces)

    chunks: dict[str, Chunk] = {}
    best_rank: dict[str, float] = {}
    modes: list[str] = []
    for piece, vector in zip(pieces, piece_vectors, strict=True):
        result = ctx.rs.search(piece, mode=SEARCH_MODE, top_k=limits.N1_RETR_MAX_CANDIDATES, query_vector=vector)
        modes.append(result.mode)
        for hit in result.hits:
            chunk_id = hit.chunk.chunk_id
            chunks.setdefault(chunk_id, hit.chunk)
            best_rank[chunk_id] = min(best_rank.get(chunk_id, NOT_RANKED), hit.rank)

    conversation = [c for c in conversation_chunks(sp.recentConversation) if c.chunk_id not in chunks]
    chunks.update((chunk.chunk_id, chunk) for chunk in conversation)
    if not chunks:
        raise NoRetrievalResultsError(f"no chunk matched any of the {len(pieces)} query piece(s)")

    ids = list(chunks)
    cosines = embedder.embed_documents([chunks[chunk_id].text for chunk_id in ids]) @ piece_vectors.T
    scores = log_avg_exp(cosines.astype(np.float64), limits.logavgexp_tau)
    ranked = sorted(zip(ids, scores.tolist(), strict=True),
                    key=lambda item: (-item[1], best_rank.get(item[0], NOT_RANKED), item[0]))
    kept = ranked[: limits.N1_RETR_MAX_CANDIDATES]

    sp.base_context_chunks = [chunks[chunk_id] for chunk_id, _ in kept]
    sp.views_by_stage["retrieval"] = [chunk_id for chunk_id, _ in kept]
    sp.extras["retrieval"] = _log(query, pieces, modes, len(ranked), kept, len(conversation))
    sp.advance("retrieval")
    return sp


def _log(query: str, pieces: list[str], modes: list[str], candidates: int,
         kept: list[tuple[str, float]], conversation: int) -> dict[str, Any]:
    return {
        "query": query,
        "pieces": pieces,
        "search_modes": modes,
        "candidates": candidates,
        "conversation_candidates": conversation,
        "kept": len(kept),
        "scores": [score for _, score in kept],
    }
