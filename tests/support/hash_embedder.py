"""A small deterministic embedder for the fast test tier (not a test module).

:class:`HashEmbedder` implements the :class:`ragstream.providers.embedders.Embedder` protocol by
feature hashing: every lower-cased word token (but a short stop-word list) and every character
trigram of such a word (padded with ``#``) is hashed (blake2b, so the same across processes and runs) to one of ``dimensions`` buckets
with a sign, counts are damped (``1 + log(count)``) and each vector is L2-normalised float32.
Texts sharing words or word pieces get a high cosine, unrelated texts a cosine near 0, so
retrieval tests still mean something, with no model to load and microseconds per text.

It has no semantics beyond shared surface forms: "timeouts" and "timeout" are close, "car" and
"automobile" are not. Tests whose outcome depends on the real model's notion of meaning, or on
relevance thresholds calibrated for all-MiniLM-L6-v2, belong to the ``slow`` tier.
"""

from __future__ import annotations

import hashlib
import math
import re
import threading
from collections import Counter
from collections.abc import Sequence
from functools import lru_cache

import numpy as np

from ragstream import metrics
from ragstream.documents.chunkers import approximate_token_count

DEFAULT_DIMENSIONS = 256
WORD_WEIGHT = 1.0
TRIGRAM_WEIGHT = 0.5
_WORD = re.compile(r"\w+")
# Function words carry no topic; dropping them keeps "how do I ..." questions from matching everything.
STOPWORDS = frozenset({
    "a", "an", "and", "are", "as", "at", "be", "but", "by", "can", "do", "does", "for", "from",
    "how", "i", "if", "in", "into", "is", "it", "its", "me", "my", "of", "on", "or", "so", "that",
    "the", "their", "then", "there", "these", "this", "to", "was", "we", "what", "when", "where",
    "which", "who", "why", "will", "with", "you", "your",
})


@lru_cache(maxsize=1 << 16)
def _bucket(feature: str, dimensions: int) -> tuple[int, float]:
    """The bucket and sign of ``feature``: stable across processes, unlike ``hash()``."""
    digest = int.from_bytes(hashlib.blake2b(feature.encode("utf-8"), digest_size=8).digest(), "little")
    return digest % dimensions, 1.0 if (digest >> 63) & 1 else -1.0


def features(text: str) -> dict[str, float]:
    """The features of ``text`` and their weights: words and per-word character trigrams,
    ``base weight * (1 + log(count))``."""
    counts: Counter[str] = Counter()
    for word in _WORD.findall(text.lower()):
        if word in STOPWORDS:
            continue
        counts["w:" + word] += 1
        padded = f"#{word}#"
        counts.update("c:" + padded[i : i + 3] for i in range(len(padded) - 2))
    return {feature: (WORD_WEIGHT if feature[0] == "w" else TRIGRAM_WEIGHT) * (1.0 + math.log(count))
            for feature, count in counts.items()}


class HashEmbedder:
    """Deterministic feature-hashing embedder (words + character trigrams), L2-normalised float32."""

    def __init__(self, dimensions: int = DEFAULT_DIMENSIONS) -> None:
        self._dimensions = dimensions
        self.model_id = f"test-hash:{dimensions}"

    @property
    def dimensions(self) -> int:
        return self._dimensions

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        with metrics.timed_embedding("documents", len(texts)):  # as the package's backends do
            return self._embed(texts)

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        with metrics.timed_embedding("queries", len(texts)):
            return self._embed(texts)

    def count_tokens(self, text: str) -> int:
        """The package's word-piece estimate (errs high, like a real tokenizer on rare words)."""
        return approximate_token_count(text)

    def embed_one(self, text: str) -> np.ndarray:
        """One text's vector, shape ``(dimensions,)``."""
        vector = np.zeros(self._dimensions, dtype=np.float32)
        for feature, weight in features(text).items():
            bucket, sign = _bucket(feature, self._dimensions)
            vector[bucket] += sign * weight
        norm = float(np.linalg.norm(vector))
        return vector / norm if norm else vector

    def _embed(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self._dimensions), dtype=np.float32)
        return np.vstack([self.embed_one(text) for text in texts]).astype(np.float32, copy=False)


def install_as_default(dimensions: int = DEFAULT_DIMENSIONS) -> HashEmbedder:
    """Make every Ragstream opened without an embedder in this process embed with a HashEmbedder.

    For child processes of the fast tier (``server_process.running_server(..., hash_embedder=True)``);
    in-process tests use the ``hash_embedder_by_default`` fixture, which undoes itself. Patches
    ``ragstream.providers.index_models.make_embedder``, where the package builds its default embedder.
    """
    import ragstream.providers.index_models as index_models

    embedder = HashEmbedder(dimensions)
    if not hasattr(index_models, "make_embedder"):
        raise RuntimeError("ragstream.providers.index_models.make_embedder is gone: the hash embedder cannot be installed")
    index_models.make_embedder = lambda config: embedder
    return embedder


class CountingEmbedder(HashEmbedder):
    """The hash embedder, counting the passages it is asked to embed (what a real model would spend time on)."""

    def __init__(self) -> None:
        super().__init__()
        self.passages = 0

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        self.passages += len(texts)
        return super().embed_documents(texts)


class PausingEmbedder(HashEmbedder):
    """The hash embedder that holds its ``pause_at``-th call of ``embed_documents`` (1-based) until
    :meth:`release`: a test does something else while an ingest is under way, between two of its batches."""

    def __init__(self, pause_at: int, timeout: float = 60.0) -> None:
        super().__init__()
        self.calls = 0
        self.paused = threading.Event()
        self._go = threading.Event()
        self._pause_at = pause_at
        self._timeout = timeout

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        self.calls += 1
        if self.calls == self._pause_at:
            self.paused.set()
            if not self._go.wait(self._timeout):
                raise TimeoutError(f"the test never released embed_documents call {self._pause_at}")
        return super().embed_documents(texts)

    def release(self) -> None:
        self._go.set()
