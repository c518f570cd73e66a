"""The learned ranker: a LightGBM lambdarank model over each candidate page's features (docs/ranking.md).

The model is a LightGBM text file trained by ``bench/train_ranker.py``; the package ships one
(``retrieval/models/ranker.txt``, its card ``ranker.json`` beside it) and ``reranker.ranker_model`` names
another. Loading it trains nothing. It scores every page of the stage's candidates
(:mod:`ragstream.retrieval.ranker_features`); pages are ordered by that score, each page's chunks stay
together in their fused order, and every chunk's final score is its page's score min-max scaled to 0..1
over the question's pages (1 for the first page).

The model learns a correction of the blend: a page's score is ``base_scale`` (from the card) x its
``blend_best`` feature (its best chunk's blended score) + the trees' output, so a model with no trees
orders pages as the blend does.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ragstream.config import RerankerConfig
from ragstream.errors import ModelUnavailableError
from ragstream.models import Chunk
from ragstream.providers.deadline import Deadline
from ragstream.providers.rerankers.base import Reranker
from ragstream.retrieval.ranker_features import FEATURES, Candidate, candidates_of, page_rows
from ragstream.retrieval.rerank import Reranked, min_max, passages

BASE_FEATURE = "blend_best"
BASE_FEATURE_INDEX = FEATURES.index(BASE_FEATURE)
SHIPPED_MODEL = Path(__file__).with_name("models") / "ranker.txt"
"""The model trained on the question sets named in its card (``ranker.json`` beside it)."""


def card_path(model: Path) -> Path:
    """The JSON card beside a model file (``ranker.txt`` -> ``ranker.json``)."""
    return model.with_suffix(".json")


@dataclass(frozen=True)
class LearnedRanker:
    """A loaded LightGBM ranking model and the feature names it was trained on."""

    path: Path
    booster: Any
    features: tuple[str, ...]
    base_scale: float = 0.0
    """The weight of the blend's page score the trees' output is added to (the card's ``base_scale``)."""

    def page_scores(self, rows: Any) -> list[float]:
        """The model's score of each row of a feature matrix (higher: better page)."""
        if not len(rows):
            return []
        base = self.base_scale * rows[:, BASE_FEATURE_INDEX]
        return [float(value) for value in base + self.booster.predict(rows, num_threads=1)]

    def rank(self, query: str, candidates: Sequence[Candidate], config: RerankerConfig) -> Reranked:
        """``candidates`` (fused order) re-ordered page by page: pages by the model's score (ties: fused
        order), each page's chunks in their fused order, every chunk scored with its page's 0..1 score."""
        rows = page_rows(query, candidates, config)
        raw = self.page_scores(rows.matrix)
        scaled = min_max(raw) if len(raw) > 1 else [1.0] * len(raw)
        order: list[int] = []
        scores: list[float] = []
        for page in sorted(range(len(rows.pages)), key=lambda p: (-raw[p], p)):
            order += rows.members[page]
            scores += [scaled[page]] * len(rows.members[page])
        cross = {i: c.cross for i, c in enumerate(candidates) if c.cross is not None}
        return Reranked(order=order, scores=scores, cross_scores=cross)


def rerank_learned(reranker: Reranker, ranker: LearnedRanker, query: str, chunks: Sequence[Chunk],
                   fused: Sequence[float], retrievers: Mapping[str, tuple[float | None, float | None]],
                   config: RerankerConfig, deadline: Deadline | None = None) -> Reranked:
    """The cross-encoder scores the first ``config.top_n`` of ``chunks`` (fused order; no gate, no skip: its
    logits are features), then ``ranker`` orders the pages. Raises DeadlineExceededError like :func:`rerank`."""
    head = min(len(chunks), config.top_n)
    logits = reranker.score(query, passages(query, chunks[:head], config), deadline=deadline)
    return ranker.rank(query, candidates_of(chunks, fused, retrievers, logits), config)


_LOADED: dict[Path, LearnedRanker] = {}
_LOCK = threading.Lock()


def load_ranker(path: str | Path | None = None) -> LearnedRanker:
    """The model at ``path`` (None: the shipped one), loaded once per process. Raises ModelUnavailableError
    when the file is missing, is not a LightGBM model, or its features are not :data:`FEATURES`."""
    model = Path(path).expanduser().resolve() if path else SHIPPED_MODEL
    with _LOCK:
        if model not in _LOADED:
            _LOADED[model] = _read(model)
        return _LOADED[model]


def _read(model: Path) -> LearnedRanker:
    try:
        import lightgbm
    except ImportError as error:  # a dependency; only a broken install lacks it
        raise ModelUnavailableError(f"the learned ranker needs lightgbm: {error}") from error
    try:
        booster = lightgbm.Booster(model_str=model.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, lightgbm.basic.LightGBMError) as error:
        raise ModelUnavailableError(f"the learned ranker {model} cannot be read: {error}") from error
    names = tuple(booster.feature_name())
    if names != FEATURES:
        raise ModelUnavailableError(f"the learned ranker {model} was trained on features {list(names)}, not this "
                                    f"version's {list(FEATURES)}: train it again (bench/train_ranker.py)")
    try:
        card = read_card(model)
        base_scale = float(card.get("base_scale", 0.0))
    except (OSError, ValueError, TypeError, AttributeError) as error:
        raise ModelUnavailableError(f"the learned ranker's card {card_path(model)} cannot be read: {error}") from error
    return LearnedRanker(path=model, booster=booster, features=names, base_scale=base_scale)


def read_card(model: Path = SHIPPED_MODEL) -> dict[str, Any]:
    """The JSON card of a model file (what it was trained on, how, and its figures)."""
    loaded: dict[str, Any] = json.loads(card_path(model).read_text(encoding="utf-8"))
    return loaded
