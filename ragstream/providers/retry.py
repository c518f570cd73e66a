"""Retry with capped exponential backoff and jitter, shared by every remote provider."""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

T = TypeVar("T")


@dataclass(frozen=True)
class RetryPolicy:
    """Seed 002: ``max_retries`` retries, delay base*2^n capped at ``cap``, +/- ``jitter`` share."""

    max_retries: int
    base_seconds: float
    cap_seconds: float
    jitter: float = 0.0

    def delay(self, attempt: int, rng: random.Random | None = None) -> float:
        """Delay before retry number ``attempt`` (0-based)."""
        raw = min(self.cap_seconds, self.base_seconds * (2**attempt))
        if not self.jitter:
            return raw
        spread = raw * self.jitter
        return max(0.0, raw + (rng or random).uniform(-spread, spread))


def call_with_retries(
    fn: Callable[[], T],
    policy: RetryPolicy,
    *,
    is_retryable: Callable[[BaseException], bool],
    sleep: Callable[[float], None] = time.sleep,
) -> T:
    """Call ``fn``; on a retryable error wait and try again, up to ``policy.max_retries`` times."""
    attempt = 0
    while True:
        try:
            return fn()
        except Exception as error:  # noqa: BLE001 - classified by is_retryable
            if attempt >= policy.max_retries or not is_retryable(error):
                raise
            sleep(policy.delay(attempt))
            attempt += 1
