"""The fast tier's test embedder keeps the Embedder contract and ranks by shared words."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np

from support.hash_embedder import HashEmbedder

TEXTS = ["How do I set a timeout on a client?",
         "You can set a timeout on a client instance; it is the default for its requests.",
         "A recipe for pasta carbonara with eggs and cheese."]


def test_vectors_are_normalised_float32_of_the_declared_size(hash_embedder):
    vectors = hash_embedder.embed_documents(TEXTS)
    assert vectors.dtype == np.float32 and vectors.shape == (3, hash_embedder.dimensions)
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-6)
    assert hash_embedder.embed_documents([]).shape == (0, hash_embedder.dimensions)
    assert np.array_equal(hash_embedder.embed_queries(TEXTS[:1]), vectors[:1])
    assert HashEmbedder(64).embed_queries(TEXTS).shape == (3, 64)
    assert hash_embedder.count_tokens(TEXTS[0]) >= len(TEXTS[0].split())
    assert hash_embedder.model_id == "test-hash:256"


def test_shared_words_score_higher_than_unrelated_text(hash_embedder):
    question, answer, unrelated = hash_embedder.embed_documents(TEXTS)
    assert float(question @ answer) > 0.4
    assert abs(float(question @ unrelated)) < 0.2


def test_same_vectors_in_another_process(hash_embedder):
    code = ("import sys; from support.hash_embedder import HashEmbedder; "
            f"sys.stdout.write(HashEmbedder().embed_documents({TEXTS!r}).tobytes().hex())")
    tests = Path(__file__).resolve().parents[1]
    path = os.pathsep.join(p for p in (str(tests), str(tests.parent), os.environ.get("PYTHONPATH", "")) if p)
    child = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                           env={**os.environ, "PYTHONPATH": path}, timeout=120)
    assert bytes.fromhex(child.stdout) == hash_embedder.embed_documents(TEXTS).tobytes()
