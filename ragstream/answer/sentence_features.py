"""What the learned sentence scorer reads of each sentence an extractive answer could quote.

The same code collects the training rows (bench/sentence_data.py) and scores sentences at question time, so
the two cannot drift. Every feature is a number; :data:`FEATURES` names them in column order.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from ragstream.answer.models import DocumentChunk
from ragstream.providers.deadline import Deadline
from ragstream.providers.embedders.base import Embedder, scoring_vectors
from ragstream.providers.rerankers.base import Reranker
from ragstream.text_terms import content_terms

FEATURES = (
    "cosine", "cosine_gap", "cosine_rank",
    "cross_encoder", "cross_encoder_gap", "cross_encoder_rank",
    "chunk_number", "chunk_relevance", "same_document_as_first",
    "position", "relative_position", "chars_log",
    "question_terms_share", "question_terms", "heading_terms_share",
    "introduces_example",
)
"""Column order of :func:`sentence_features`'s rows (the model's card names them too)."""

NO_SCORE = 0.0
"""Every sentence's score, gap and rank when its model cannot score (no embedder, no cross-encoder): a column
the same for every sentence adds the same to each score, so it does not order them."""

Candidate = tuple[int, str, bool]
"""A quotable sentence: its chunk's 1-based number, its text, whether it introduces a code example."""


def sentence_features(question: str, query_vectors: np.ndarray | None, chunks: Sequence[DocumentChunk],
                      candidates: Sequence[Candidate], embedder: Embedder | None, reranker: Reranker | None,
                      deadline: Deadline | None = None) -> list[list[float]]:
    """One row of :data:`FEATURES` per candidate sentence, in the candidates' order."""
    if not candidates:
        return []
    texts = [text for _, text, _ in candidates]
    cosines = _cosines(query_vectors, texts, embedder)
    cross = np.asarray(reranker.score(question, texts, deadline=deadline), dtype=np.float64) \
        if reranker is not None else np.full(len(texts), NO_SCORE)
    asked = content_terms(question)
    first_document = chunks[0].document_id if chunks else ""
    positions = _positions(candidates)
    cosine_ranks = _rank(cosines) if query_vectors is not None and embedder is not None else np.zeros(len(texts))
    cross_ranks = _rank(cross) if reranker is not None else np.zeros(len(texts))
    rows: list[list[float]] = []
    for i, (number, text, example) in enumerate(candidates):
        chunk = chunks[number - 1]
        terms = content_terms(text)
        heading = content_terms(" ".join(str(chunk.metadata.get(key) or "") for key in ("title", "section")))
        position, count = positions[i]
        rows.append([
            float(cosines[i]), float(cosines.max() - cosines[i]), float(cosine_ranks[i]),
            float(cross[i]), float(cross.max() - cross[i]), float(cross_ranks[i]),
            float(number), chunk.relevance_score, float(chunk.document_id == first_document),
            float(position), position / max(1, count - 1), math.log1p(len(text)),
            len(asked & terms) / max(1, len(asked)), float(len(asked & terms)),
            len(asked & heading) / max(1, len(asked)),
            float(example),
        ])
    return rows


def _cosines(query_vectors: np.ndarray | None, texts: list[str], embedder: Embedder | None) -> np.ndarray:
    """Each text's best cosine to the question's query vectors (``NO_SCORE`` without an embedder)."""
    if query_vectors is None or embedder is None:
        return np.full(len(texts), NO_SCORE)
    scores: np.ndarray = (scoring_vectors(embedder, texts) @ np.atleast_2d(query_vectors).T).max(axis=1)
    return scores.astype(np.float64)


def _rank(scores: np.ndarray) -> np.ndarray:
    """0 for the best score, 1 for the next, ... (ties keep the candidates' order)."""
    order = np.argsort(-scores, kind="stable")
    ranks = np.empty(len(scores), dtype=np.int64)
    ranks[order] = np.arange(len(scores))
    return ranks


def _positions(candidates: Sequence[Candidate]) -> list[tuple[int, int]]:
    """Each candidate's 0-based place among its chunk's candidates, and how many its chunk has."""
    counts: dict[int, int] = {}
    places = []
    for number, _, _ in candidates:
        places.append(counts.get(number, 0))
        counts[number] = places[-1] + 1
    return [(place, counts[number]) for place, (number, _, _) in zip(places, candidates, strict=True)]
