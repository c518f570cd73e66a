"""The calibrated confidence: the probability that an answer cites a right page, from its signals (docs/answers.md).

The model is a small JSON file fitted by ``bench/train_confidence.py`` on the question sets' tune halves; the
package ships one (``answer/trained/confidence.json``) and ``answer.confidence.model`` names another. It is a
logistic regression over a few standardised signals (:mod:`ragstream.answer.confidence_signals`) followed by an
isotonic (monotone, piecewise linear) map of its output to the observed rate. Loading it fits nothing.
High / Medium / Low are ranges of the probability: from the thresholds chosen with the model (its ``thresholds``),
or ``answer.confidence.high_min_probability`` and ``medium_min_probability`` when set.
"""

from __future__ import annotations

import itertools
import json
import math
import threading
from bisect import bisect_right
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from ragstream.answer.confidence_signals import SIGNALS
from ragstream.answer.models import Confidence
from ragstream.config import ConfidenceConfig
from ragstream.errors import ModelUnavailableError

FORMAT = "ragstream-confidence/1"
SHIPPED_MODEL = Path(__file__).with_name("trained") / "confidence.json"
"""The model fitted on the question sets named in it (``trained_on``)."""
TENTHS = 10


@dataclass(frozen=True)
class CalibratedModel:
    """A loaded confidence model: logistic regression over ``features``, then the isotonic map ``knots``."""

    path: Path
    features: tuple[str, ...]
    mean: tuple[float, ...]
    scale: tuple[float, ...]
    coef: tuple[float, ...]
    intercept: float
    knots_x: tuple[float, ...]
    """The regression's outputs (0..1) at the isotonic map's knots, increasing."""
    knots_y: tuple[float, ...]
    """The observed rate at each knot, non-decreasing, 0..1."""
    high: float = 1.0
    """High from this probability up (the model's ``thresholds.high``, chosen on the tune halves) ..."""
    medium: float = 0.0
    """... Medium from this one up, Low below it (``thresholds.medium``)."""

    def thresholds(self, config: ConfidenceConfig) -> tuple[float, float]:
        """(High, Medium) lower bounds: ``config``'s where set, else the model's own."""
        high = self.high if config.high_min_probability is None else config.high_min_probability
        medium = self.medium if config.medium_min_probability is None else config.medium_min_probability
        return high, medium

    def score(self, signals: Mapping[str, float]) -> float:
        """The logistic regression's output for ``signals`` (0..1; a missing signal counts as its training mean)."""
        z = self.intercept
        for name, mean, scale, coef in zip(self.features, self.mean, self.scale, self.coef, strict=True):
            z += coef * (float(signals.get(name, mean)) - mean) / scale
        return 1.0 / (1.0 + math.exp(-max(-50.0, min(50.0, z))))

    def probability(self, signals: Mapping[str, float]) -> float:
        """The calibrated probability that the answer cites a right page."""
        return interpolate(self.score(signals), self.knots_x, self.knots_y)


def interpolate(x: float, xs: Sequence[float], ys: Sequence[float]) -> float:
    """The piecewise linear map through the knots (``xs`` increasing) at ``x``, constant beyond the ends."""
    if x <= xs[0]:
        return ys[0]
    if x >= xs[-1]:
        return ys[-1]
    right = bisect_right(xs, x)
    x0, x1, y0, y1 = xs[right - 1], xs[right], ys[right - 1], ys[right]
    return y0 if x1 == x0 else y0 + (y1 - y0) * (x - x0) / (x1 - x0)


def calibrated_confidence(probability: float, thresholds: tuple[float, float], signals: Mapping[str, float]) -> Confidence:
    """The level for ``probability`` (High from ``thresholds[0]``, Medium from ``thresholds[1]``), its reason saying
    the probability in words."""
    high, medium = thresholds
    level: Literal["High", "Medium", "Low"] = "High" if probability >= high else "Medium" if probability >= medium else "Low"
    tenths = round(probability * TENTHS)
    odds = f"about {tenths} in {TENTHS}" if tenths else f"fewer than 1 in {TENTHS}"
    reason = f"{odds} answers like this cite a page that answers the question (estimated {probability:.0%})"
    return Confidence(level=level, reason=reason, probability=round(probability, 4), signals=dict(signals))


_LOADED: dict[Path, CalibratedModel] = {}
_LOCK = threading.Lock()


def load_confidence_model(path: str | Path | None = None) -> CalibratedModel:
    """The model at ``path`` (None: the shipped one), read once per process. Raises ModelUnavailableError when
    the file is missing, is not JSON of this format, or its shape is wrong (names a signal this version does
    not compute, lists of different lengths, knots out of order)."""
    model = Path(path).expanduser().resolve() if path else SHIPPED_MODEL
    with _LOCK:
        if model not in _LOADED:
            _LOADED[model] = read_model(model)
        return _LOADED[model]


def read_model(model: Path) -> CalibratedModel:
    """Parse and check one model file (see :func:`load_confidence_model`)."""
    try:
        data = json.loads(model.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as error:
        raise ModelUnavailableError(f"the confidence model {model} cannot be read: {error}") from error
    try:
        return _parse(model, data)
    except (KeyError, TypeError, ValueError) as error:
        raise ModelUnavailableError(f"the confidence model {model} has the wrong shape: {error}; fit it again "
                                    f"(bench/train_confidence.py)") from error


def _floats(values: Any, name: str) -> tuple[float, ...]:
    if not isinstance(values, list) or not all(isinstance(v, (int, float)) and math.isfinite(v) for v in values):
        raise ValueError(f"'{name}' must be a list of finite numbers")
    return tuple(float(v) for v in values)


def _parse(model: Path, data: Any) -> CalibratedModel:
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise ValueError(f"'format' must be '{FORMAT}'")
    features = tuple(data["features"])
    unknown = [name for name in features if name not in SIGNALS]
    if not features or unknown:
        raise ValueError(f"features {unknown or 'none'} are not signals this version computes ({list(SIGNALS)})")
    columns = [_floats(data[key], key) for key in ("mean", "scale", "coef")]
    if any(len(column) != len(features) for column in columns):
        raise ValueError("'mean', 'scale' and 'coef' must have one value per feature")
    if any(value <= 0 for value in columns[1]):
        raise ValueError("'scale' values must be positive")
    calibration = data["calibration"]
    xs, ys = _floats(calibration["x"], "calibration.x"), _floats(calibration["y"], "calibration.y")
    if not xs or len(xs) != len(ys):
        raise ValueError("'calibration' needs as many 'x' as 'y' values, at least one")
    if any(b < a for a, b in itertools.pairwise(xs)) or any(b < a for a, b in itertools.pairwise(ys)):
        raise ValueError("'calibration' must be monotone: 'x' and 'y' non-decreasing")
    if not all(0.0 <= y <= 1.0 for y in ys):
        raise ValueError("'calibration.y' values must be probabilities (0..1)")
    intercept = data["intercept"]
    if not isinstance(intercept, (int, float)):
        raise ValueError("'intercept' must be a number")
    high, medium = _floats([data["thresholds"]["high"], data["thresholds"]["medium"]], "thresholds")
    if not 0.0 <= medium <= high <= 1.0:
        raise ValueError("'thresholds' must hold 0 <= medium <= high <= 1")
    return CalibratedModel(path=model, features=features, mean=columns[0], scale=columns[1], coef=columns[2],
                           intercept=float(intercept), knots_x=xs, knots_y=ys, high=high, medium=medium)
