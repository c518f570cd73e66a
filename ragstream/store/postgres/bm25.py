"""BM25 for the postgres backend, with the embedded store's tokenisation and exact statistics.

Tokens are those of Qdrant's BM25 (the embedded store's): lowercased words, the configured
language's stopwords removed, Snowball-stemmed, each hashed to a term id (murmur3). The term
frequencies and the length of a chunk are read back from ``qdrant_edge.Bm25`` run with k1 = 1
and b = 0, where a term's weight is ``2 tf / (tf + 1)``, so ``tf = w / (2 - w)`` exactly.

A chunk stores its BM25 term weights ``tf (k1 + 1) / (tf + k1 (1 - b + b len / avgdl))`` as a
pgvector ``sparsevec``, with ``avgdl`` the true average chunk length of the table when it was
written (kept within ``store.bm25_reweigh_drift`` of the current one by reweighing). A query is
the sparse vector of its terms' IDF, ``ln(1 + (N - df + 0.5) / (df + 0.5))`` from document
frequencies kept in the database, so the inner product is the BM25 score.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

import qdrant_edge as qe

TERM_SPACE = 1_000_000_000
"""pgvector's largest sparsevec dimension; Qdrant's 32-bit term ids are folded into it."""

_PROBE_K1 = 1.0
_PROBE_AVG_LEN = 1.0  # unused with b = 0


@dataclass(frozen=True)
class TermCounts:
    """The tokens of one text: term id -> frequency, and the token count."""

    tf: dict[int, int]
    length: int


class Bm25Terms:
    """Tokenises texts and queries like the embedded store, and turns counts into weights."""

    def __init__(self, k1: float, b: float, language: str) -> None:
        self.k1 = k1
        self.b = b
        self._probe = qe.Bm25(qe.Bm25Config(k=_PROBE_K1, b=0.0, avg_len=_PROBE_AVG_LEN, language=language))

    def counts(self, text: str) -> TermCounts:
        """Term frequencies and length of ``text``."""
        vector = self._probe.embed_document(text)
        tf: dict[int, int] = {}
        for index, weight in zip(vector.indices, vector.values, strict=True):
            term = int(index) % TERM_SPACE
            tf[term] = tf.get(term, 0) + round(weight / (2.0 - weight))
        return TermCounts(tf=tf, length=sum(tf.values()))

    def query_terms(self, text: str) -> list[int]:
        """The distinct term ids of a query."""
        return sorted({int(index) % TERM_SPACE for index in self._probe.embed_query(text).indices})

    def weights(self, counts: TermCounts, avgdl: float) -> dict[int, float]:
        """BM25 term weights of a chunk for the average chunk length ``avgdl``."""
        norm = self.k1 * (1.0 - self.b + self.b * counts.length / max(avgdl, 1.0))
        return {term: tf * (self.k1 + 1.0) / (tf + norm) for term, tf in counts.tf.items()}


def idf(points: int, document_frequency: int) -> float:
    """BM25 inverse document frequency (the Lucene/Qdrant form, never negative)."""
    return math.log(1.0 + (points - document_frequency + 0.5) / (document_frequency + 0.5))


def query_weights(terms: list[int], points: int, frequencies: Mapping[int, int]) -> dict[int, float]:
    """The query's sparse vector: each known term's IDF."""
    return {term: idf(points, frequencies[term]) for term in terms if frequencies.get(term, 0) > 0}


# -- exact top-k with fewer candidates (MaxScore) --------------------------------------------------------------------
#
# A chunk's weight for a term is tf (k1 + 1) / (tf + norm) with norm > 0, so it stays under k1 + 1: a chunk that holds
# none of a query's rarer terms scores under (k1 + 1) times the IDF sum of the others. The store scores the chunks
# holding the rarest terms first; once the k-th best score of those passes that bound, no other chunk can enter the
# top k, and the ranking is the exact one without scoring the chunks that share only common words with the query.

BOUND_MARGIN = 1e-5
"""Relative slack on the bound: stored weights and scores are float32 in pgvector."""


def rarest_first(weights: Mapping[int, float], frequencies: Mapping[int, int]) -> list[int]:
    """The query's known terms, rarest (fewest chunks, highest IDF) first."""
    return sorted(weights, key=lambda term: (frequencies[term], term))


def first_pass(order: list[int], frequencies: Mapping[int, int], budget: int) -> int:
    """How many of the rarest terms the first pass takes: as many as hold ``budget`` chunks together, at least one."""
    taken, chunks = 0, 0
    while taken < len(order) and (taken == 0 or chunks + frequencies[order[taken]] <= budget):
        chunks += frequencies[order[taken]]
        taken += 1
    return taken


def terms_needed(order: list[int], weights: Mapping[int, float], ceiling: float, threshold: float) -> int:
    """The fewest rarest terms such that a chunk holding none of them scores under ``threshold`` (each weight is
    under ``ceiling``, k1 + 1); every term when ``threshold`` is 0 (fewer than k chunks found yet)."""
    for taken in range(len(order) + 1):
        if sum(weights[term] for term in order[taken:]) * ceiling * (1.0 + BOUND_MARGIN) < threshold:
            return taken
    return len(order)
