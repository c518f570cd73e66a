"""The Retrieval stage: the first ranked candidate list from documents and conversation (docs/pipeline.md).

The query (task, context, purpose) becomes at most ``N0`` pieces: the whole query, plus contiguous
sentence groups when it is long (``pipeline.split_min_words``) and has several sentences. Every piece runs the same
fused hybrid search as ``ragstream search``, at the search's own fusion depth
(``retrieval.candidates``, at most ``N1`` hits per piece), so for a one-sentence question the view
is exactly the plain hybrid ranking. A chunk's score for a piece is its fused score relative to that piece's
best hit (0..1; a chunk the piece did not return scores 0). Conversation pairs are scored by their
cosine to the piece, clipped to 0..1. Scores are aggregated over pieces with LogAvgExp
(``pipeline.logavgexp_tau``); ties go to the better fused rank, then the id. The top ``N1`` ids
form the view.

Each piece is embedded once (the embedder's query cache serves every later stage). When the
embedder is unavailable the searches run BM25 only and the stage report says so.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

import numpy as np

from ragstream.config import LimitsConfig, PipelineLimits, RetrievalConfig
from ragstream.errors import EmbeddingFailureError, NoRetrievalResultsError
from ragstream.models import Chunk, SearchMode
from ragstream.pipeline.context import EmbedderSource, StageContext, StageSearch
from ragstream.pipeline.conversation import conversation_chunks
from ragstream.pipeline.query_pieces import normalized_query, query_pieces, search_body
from ragstream.pipeline.scoring import log_avg_exp
from ragstream.pipeline.stages import RETRIEVAL as SPEC
from ragstream.pipeline.super_prompt import RetrieverScores, SuperPrompt
from ragstream.providers.embedders.base import scoring_vectors
from ragstream.store.payload import malformed

logger = logging.getLogger("ragstream.pipeline")

HYBRID: SearchMode = "hybrid"
BM25: SearchMode = "bm25"
NOT_RANKED = float("inf")
"""Fused rank of a chunk no piece's search returned (conversation pairs)."""


@dataclass(frozen=True)
class Inputs:
    """What Retrieval uses: the search (bound to the question's snapshot and user), the embedder, and the
    ``pipeline``, ``retrieval`` and ``limits`` sections."""

    search: StageSearch
    embedder: EmbedderSource
    limits: PipelineLimits
    retrieval: RetrievalConfig
    request_limits: LimitsConfig


def inputs(ctx: StageContext) -> Inputs:
    """Retrieval's inputs, taken from the pipeline's context."""
    return Inputs(ctx.scoped_search(), ctx.embedder, ctx.config.pipeline, ctx.config.retrieval, ctx.config.limits)


def run(sp: SuperPrompt, deps: Inputs) -> SuperPrompt:
    """Populate ``base_context_chunks``, ``views_by_stage["retrieval"]`` and its scores."""
    limits = deps.limits
    query = normalized_query(search_body(sp))
    pieces = query_pieces(query, limits.N0_QUERY_PIECES, deps.request_limits.max_query_chars, limits.split_min_words)
    if not pieces:
        raise NoRetrievalResultsError("the prompt has no task, context or purpose text to search with")
    vectors, degraded = piece_vectors(deps.embedder, pieces)

    chunks: dict[str, Chunk] = {}
    best_rank: dict[str, float] = {}
    malformed_chunks: dict[str, str] = {}
    relative: list[dict[str, float]] = []
    retriever_scores: dict[str, RetrieverScores] = {}
    modes: list[str] = []
    per_piece = min(limits.N1_RETR_MAX_CANDIDATES, deps.retrieval.candidates)  # the search's own fusion depth
    for index, piece in enumerate(pieces):
        result = deps.search(piece, mode=HYBRID if vectors is not None else BM25, top_k=per_piece,
                             query_vector=vectors[index] if vectors is not None else None)
        modes.append(result.mode)
        if result.fallback_reason and degraded is None:
            degraded = result.fallback_reason
        top = max((hit.score for hit in result.hits), default=0.0)
        relative.append({hit.chunk.chunk_id: hit.score / top if top > 0 else 0.0 for hit in result.hits})
        for hit in result.hits:
            reason = malformed(hit.chunk)
            if reason is not None:  # a damaged stored point: never an attachment, reported instead
                malformed_chunks[hit.chunk.chunk_id] = reason
                continue
            chunks.setdefault(hit.chunk.chunk_id, hit.chunk)
            if index == 0:  # the whole query's own scores (the other pieces' differ in scale)
                retriever_scores[hit.chunk.chunk_id] = RetrieverScores(dense=hit.dense_score, bm25=hit.bm25_score)
            best_rank[hit.chunk.chunk_id] = min(best_rank.get(hit.chunk.chunk_id, NOT_RANKED), hit.rank)

    sp.malformed_chunks = malformed_chunks
    if malformed_chunks:
        logger.warning("retrieval left out %d malformed stored chunk(s): %s", len(malformed_chunks),
                       "; ".join(f"{chunk_id}: {why}" for chunk_id, why in malformed_chunks.items()))
    conversation = [c for c in conversation_chunks(sp.recentConversation) if c.chunk_id not in chunks]
    if not chunks and not conversation:
        raise NoRetrievalResultsError(f"no chunk matched any of the {len(pieces)} query piece(s)")
    ids = list(chunks) + [c.chunk_id for c in conversation]
    matrix = np.array([[scores.get(chunk_id, 0.0) for scores in relative] for chunk_id in chunks],
                      dtype=np.float64).reshape(len(chunks), len(pieces))
    if conversation:
        matrix = np.vstack([matrix, _conversation_scores(deps.embedder, conversation, vectors, len(pieces))])
        chunks.update((chunk.chunk_id, chunk) for chunk in conversation)
    scores = matrix[:, 0] if len(pieces) == 1 else log_avg_exp(matrix, limits.logavgexp_tau)  # one piece: as is
    ranked = sorted(zip(ids, scores.tolist(), strict=True),
                    key=lambda item: (-item[1], best_rank.get(item[0], NOT_RANKED), item[0]))
    kept = ranked[: limits.N1_RETR_MAX_CANDIDATES]

    sp.base_context_chunks = [chunks[chunk_id] for chunk_id, _ in kept]
    sp.views_by_stage[SPEC.entry] = [chunk_id for chunk_id, _ in kept]
    sp.scores_by_stage[SPEC.entry] = [round(score, 6) for _, score in kept]
    sp.query_pieces = pieces
    sp.retriever_scores = {chunk_id: retriever_scores[chunk_id] for chunk_id, _ in kept if chunk_id in retriever_scores}
    sp.retrieval_mode = modes[0] if len(set(modes)) == 1 else ",".join(modes)
    sp.extras["retrieval"] = {"query": query, "pieces": pieces, "search_modes": modes, "candidates": len(ranked),
                              "conversation_candidates": len(conversation), "kept": len(kept)}
    sp.report(SPEC.entry, "function", fallback=degraded is not None, reason=degraded)
    sp.advance(SPEC.entry)
    return sp


def piece_vectors(embedder: EmbedderSource, pieces: list[str]) -> tuple[np.ndarray | None, str | None]:
    """Query vectors of ``pieces``, or ``(None, why)`` when the embedder is unavailable."""
    try:
        return embedder().embed_queries(pieces), None
    except EmbeddingFailureError as error:
        return None, f"embedder unavailable, BM25 only: {error.message}"


def _conversation_scores(embedder: EmbedderSource, conversation: list[Chunk], vectors: np.ndarray | None,
                         pieces: int) -> np.ndarray:
    """Cosine of each conversation pair to each piece, clipped to 0..1 (0 without vectors)."""
    if vectors is None:
        return np.zeros((len(conversation), pieces))
    try:
        passages = scoring_vectors(embedder(), [chunk.text for chunk in conversation])
    except EmbeddingFailureError:
        return np.zeros((len(conversation), pieces))
    return np.clip(passages @ vectors.T, 0.0, 1.0).astype(np.float64)
