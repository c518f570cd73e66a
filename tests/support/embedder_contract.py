"""The contract every embedder keeps, checked on any backend (``tests/providers/test_*_embedder.py`` run it)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ragstream.providers.embedders.base import Embedder

CONTRACT_QUERIES = [
    "0-dimensional biomaterials show inductive properties.",
    "ALDH1 expression is associated with poorer prognosis for breast cancer primary tumors.",
    "Vitamin D deficiency is unrelated to bone density in adults.",
    "How do I set a timeout on an httpx client?",
    "Which chunker never splits a fenced code block?",
    "β-blockers reduce mortality after myocardial infarction in elderly patients (n=1,204).",
    "short",
    "Ribosomal profiling reveals translation of upstream open reading frames under stress " * 6,
]
CONTRACT_PASSAGES = [f"{query} Further context follows in this sentence number {i}."
                     for i, query in enumerate(CONTRACT_QUERIES)]


def assert_embedder_contract(embedder: Embedder, dimensions: int, passages: Sequence[str] = CONTRACT_PASSAGES,
                             *, batch_agreement: float = 0.9999, order_tolerance: float = 1e-4) -> np.ndarray:
    """Normalised float32 vectors of the declared size, empty inputs give empty arrays, a text's vector is the
    same alone as in a batch and whatever the order, and token counts are positive; returns the passage vectors."""
    vectors = embedder.embed_documents(list(passages))
    assert embedder.dimensions == dimensions
    assert vectors.dtype == np.float32 and vectors.shape == (len(passages), dimensions)
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    assert embedder.embed_documents([]).shape == (0, dimensions)
    assert embedder.embed_queries([]).shape == (0, dimensions)
    queries = embedder.embed_queries(list(passages[:2]))
    assert queries.dtype == np.float32 and queries.shape == (2, dimensions)
    alone = embedder.embed_documents(list(passages[-1:]))  # padded in a batch vs alone: the same vector
    assert float(alone[0] @ vectors[-1]) > batch_agreement
    reordered = embedder.embed_documents(list(passages[::-1]))[::-1]
    assert np.allclose(reordered, vectors, atol=order_tolerance)
    assert all(embedder.count_tokens(text) > 0 for text in passages)
    return vectors
