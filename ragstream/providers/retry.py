"""Retry with capped exponential backoff and jitter, shared by every remote provider.

A :class:`~ragstream.providers.deadline.Deadline` can bound the whole sequence: a wait that would
end after it is not slept, the call fails at once with :class:`DeadlineExceededError` instead.
A server's ``Retry-After`` hint (seconds or an HTTP date) lengthens the wait up to a cap.
"""

from __future__ import annotations

import email.utils
import math
import random
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

from ragstream.errors import DeadlineExceededError
from ragstream.providers.deadline import Deadline

T = TypeVar("T")


@dataclass(frozen=True)
class RetryPolicy:
    """``max_retries`` retries, delay base*2^n capped at ``cap``, +/- ``jitter`` share."""

    max_retries: int
    base_seconds: float
    cap_seconds: float
    jitter: float = 0.0

    def delay(self, attempt: int, rng: random.Random | None = None) -> float:
        """Delay before retry number ``attempt`` (0-based)."""
        raw = float(min(self.cap_seconds, self.base_seconds * (2**attempt)))
        if not self.jitter:
            return raw
        spread = raw * self.jitter
        return max(0.0, raw + float((rng or random).uniform(-spread, spread)))


def retry_wait(backoff: float, retry_after: float | None, retry_after_max: float) -> float:
    """The wait before a retry: ``max(backoff, Retry-After)``, the Retry-After part capped at ``retry_after_max``."""
    if retry_after is None:
        return backoff
    return max(backoff, min(retry_after, retry_after_max))


def parse_retry_after(value: str | None, now: Callable[[], float] = time.time) -> float | None:
    """Seconds to wait from a ``Retry-After`` value: delay-seconds or an HTTP date.

    ``None`` when absent or unreadable; a date in the past gives ``0.0``.
    """
    if value is None or not value.strip():
        return None
    text = value.strip()
    try:
        seconds = float(text)
    except ValueError:
        try:
            when = email.utils.parsedate_to_datetime(text)
        except (TypeError, ValueError, IndexError):
            return None
        if when.tzinfo is None:  # an HTTP date is always GMT
            return None
        seconds = when.timestamp() - now()
    if not math.isfinite(seconds):
        return None
    return max(0.0, seconds)


def call_with_retries(
    fn: Callable[[], T],
    policy: RetryPolicy,
    *,
    is_retryable: Callable[[BaseException], bool],
    sleep: Callable[[float], None] = time.sleep,
    deadline: Deadline | None = None,
    retry_after: Callable[[BaseException], float | None] | None = None,
    retry_after_max: float = math.inf,
) -> T:
    """Call ``fn``; on a retryable error wait and try again, up to ``policy.max_retries`` times.

    ``retry_after(error)`` may return the server's hinted wait (see :func:`retry_wait`). With a
    ``deadline``, a wait that would not end before it raises :class:`DeadlineExceededError`
    (chained to the last error) instead of sleeping.
    """
    attempt = 0
    while True:
        try:
            return fn()
        except Exception as error:
            if attempt >= policy.max_retries or not is_retryable(error):
                raise
            hint = retry_after(error) if retry_after is not None else None
            wait = retry_wait(policy.delay(attempt), hint, retry_after_max)
            if deadline is not None and not deadline.allows(wait):
                raise DeadlineExceededError(
                    f"retry {attempt + 1} would wait {wait:.2f}s but the deadline leaves "
                    f"{deadline.remaining() or 0.0:.2f}s; last error: {error}"
                ) from error
            sleep(wait)
            attempt += 1
