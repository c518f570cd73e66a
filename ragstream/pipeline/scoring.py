"""Score aggregation across query pieces."""

from __future__ import annotations

import numpy as np


def log_avg_exp(scores: np.ndarray, tau: float) -> np.ndarray:
    """LogAvgExp over the last axis: ``(1/tau) * log(mean(exp(tau * s)))``.

    A smooth maximum: ``tau -> 0`` gives the mean, large ``tau`` the max. Averaging (not summing)
    is the length normalisation: the score does not grow with the number of pieces.
    """
    scaled = tau * np.asarray(scores, dtype=np.float64)
    peak = scaled.max(axis=-1, keepdims=True)
    return (peak[..., 0] + np.log(np.exp(scaled - peak).mean(axis=-1))) / tau
