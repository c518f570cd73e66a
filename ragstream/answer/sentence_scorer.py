"""The learned sentence scorer: which sentence of the attachments answers the question.

A linear ranking over :data:`ragstream.answer.sentence_features.FEATURES`, trained on pairs of labelled
answering and other sentences by bench/train_sentences.py and shipped as JSON (``trained/sentences.json``); scoring is one dot
product per sentence with numpy, nothing is trained at run time.
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ragstream.answer.extractive import Quote, SentenceScore
from ragstream.answer.models import DocumentChunk
from ragstream.answer.sentence_features import FEATURES, sentence_features
from ragstream.errors import ModelUnavailableError
from ragstream.providers.deadline import Deadline
from ragstream.providers.embedders.base import Embedder
from ragstream.providers.rerankers.base import Reranker

logger = logging.getLogger("ragstream.answer")
SHIPPED_MODEL = Path(__file__).resolve().parent / "trained" / "sentences.json"


WITHIN_QUESTION = ("cosine", "cross_encoder", "question_terms_share", "question_terms", "chars_log")
"""Features compared within one question's sentences (standardised over them): a cosine of 0.6 is high for one
question and low for another; what orders sentences is how each stands against its neighbours."""


@dataclass(frozen=True)
class SentenceScorer:
    """A weighted sum of each sentence's features, those named in :data:`WITHIN_QUESTION` first standardised
    over the question's sentences: higher is likelier to answer. Only the order within a question means
    anything (the weights are learned from pairs of an answering and a non-answering sentence)."""

    features: tuple[str, ...]
    weights: np.ndarray
    within: tuple[str, ...] = WITHIN_QUESTION

    def scores(self, rows: np.ndarray) -> np.ndarray:
        """One score per row of features (columns in :attr:`features` order), rows of one question."""
        result: np.ndarray = self.prepared(rows) @ self.weights
        return result

    def weighs(self, name: str) -> bool:
        """True when the feature ``name`` counts (its weight is not 0): its model must be run."""
        return bool(self.weights[self.features.index(name)] != 0.0)

    def prepared(self, rows: np.ndarray) -> np.ndarray:
        """``rows`` with the :attr:`within` columns standardised over the rows (a constant column becomes 0)."""
        out = np.array(np.atleast_2d(rows), dtype=np.float64)
        for name in self.within:
            column = out[:, self.features.index(name)]
            spread = column.std()
            out[:, self.features.index(name)] = (column - column.mean()) / spread if spread > 0 else 0.0
        return out

    def save(self, path: Path, card: dict[str, Any]) -> None:
        """Write the model (and ``card``: what it was trained on, its figures) as JSON."""
        path.parent.mkdir(parents=True, exist_ok=True)
        body = {"features": list(self.features), "within_question": list(self.within),
                "weights": self.weights.tolist(), "card": card}
        path.write_text(json.dumps(body, indent=1) + "\n", encoding="utf-8")


_LOADED: dict[Path, SentenceScorer] = {}
_LOCK = threading.Lock()


def load_scorer(path: str | Path | None = None) -> SentenceScorer:
    """The model at ``path`` (None: the shipped one), read once per process. Raises ModelUnavailableError when
    the file is missing or unreadable, or was trained on other features than this version's."""
    model = Path(path).expanduser().resolve() if path else SHIPPED_MODEL
    with _LOCK:
        if model not in _LOADED:
            _LOADED[model] = _read(model)
        return _LOADED[model]


def configured_scorer(method: str, path: str | None) -> SentenceScorer | None:
    """The scorer ``answer.extractive_scorer`` names (``learned``), or None for the cosine order: chosen, or the
    model cannot be read (logged once per reason)."""
    if method != "learned":
        return None
    try:
        return load_scorer(path)
    except ModelUnavailableError as error:
        if error.message not in _WARNED:
            _WARNED.add(error.message)
            logger.warning("%s; the extractive answer chooses its sentences by cosine", error.message)
        return None


_WARNED: set[str] = set()


def _read(model: Path) -> SentenceScorer:
    try:
        body = json.loads(model.read_text(encoding="utf-8"))
        features = tuple(body["features"])
        within = tuple(body["within_question"])
        weights = np.asarray(body["weights"], dtype=np.float64)
    except (OSError, UnicodeDecodeError, ValueError, TypeError, KeyError) as error:
        raise ModelUnavailableError(f"the sentence scorer {model} cannot be read: {error}") from error
    if features != FEATURES or not set(within) <= set(FEATURES):
        raise ModelUnavailableError(f"the sentence scorer {model} was trained on features {list(features)}, not "
                                    f"this version's {list(FEATURES)}: train it again (bench/train_sentences.py)")
    if weights.shape != (len(FEATURES),) or not np.isfinite(weights).all():
        raise ModelUnavailableError(f"the sentence scorer {model} holds one finite weight per feature "
                                    f"({len(FEATURES)}); this file does not")
    return SentenceScorer(features=features, weights=weights, within=within)


def learned_score(scorer: SentenceScorer, question: str, query_vectors: np.ndarray | None,
                  chunks: Sequence[DocumentChunk], embedder: Embedder | None, reranker: Reranker | None,
                  deadline: Deadline | None = None) -> SentenceScore:
    """The extractive answer's sentence scores under ``scorer`` for ``question`` over ``chunks``; the
    cross-encoder scores the sentences only when the scorer weighs its score."""
    reranker = reranker if scorer.weighs("cross_encoder") else None

    def score(candidates: Sequence[tuple[int, Quote]]) -> np.ndarray:
        rows = sentence_features(question, query_vectors, chunks,
                                 [(number, quote.sentence, quote.example is not None) for number, quote in candidates],
                                 embedder, reranker, deadline)
        return scorer.scores(np.asarray(rows, dtype=np.float64)) if rows else np.zeros(0)

    return score
