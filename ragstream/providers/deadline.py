"""A time budget shared by every provider call made for one question.

Create one :class:`Deadline` when a question arrives and pass it to every LLM call made for it:
each HTTP attempt then waits at most the time left, and a retry whose backoff would end after the
deadline is not attempted. The clock is monotonic, so wall-clock changes do not move it.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable

from ragstream.errors import DeadlineExceededError

Clock = Callable[[], float]


class Deadline:
    """A monotonic point in time by which all calls of one question must end.

    ``seconds=None`` means unbounded: :meth:`remaining` is ``None`` and :meth:`timeout` returns
    the per-call timeout unchanged.
    """

    def __init__(self, seconds: float | None, clock: Clock = time.monotonic) -> None:
        if seconds is not None and (math.isnan(seconds) or seconds < 0):
            raise ValueError(f"deadline seconds must be >= 0 or None, got {seconds!r}")
        self._clock = clock
        self.seconds = seconds
        self._end = None if seconds is None else clock() + seconds

    @classmethod
    def unbounded(cls, clock: Clock = time.monotonic) -> Deadline:
        """A deadline that never expires."""
        return cls(None, clock)

    @property
    def bounded(self) -> bool:
        """True when this deadline has an end."""
        return self._end is not None

    def remaining(self) -> float | None:
        """Seconds left (never negative), or ``None`` when unbounded."""
        if self._end is None:
            return None
        return max(0.0, self._end - self._clock())

    def expired(self) -> bool:
        """True once no time is left."""
        remaining = self.remaining()
        return remaining is not None and remaining <= 0.0

    def allows(self, seconds: float) -> bool:
        """True when waiting ``seconds`` from now still ends before the deadline."""
        remaining = self.remaining()
        return remaining is None or seconds < remaining

    def check(self, what: str = "the call") -> None:
        """Raise :class:`DeadlineExceededError` when the deadline has passed."""
        if self.expired():
            raise DeadlineExceededError(f"deadline of {self.seconds:g}s passed before {what} could finish")

    def timeout(self, per_call: float) -> float:
        """The timeout for the next attempt: ``min(per_call, remaining)``.

        Raises :class:`DeadlineExceededError` when nothing remains.
        """
        remaining = self.remaining()
        if remaining is None:
            return per_call
        if remaining <= 0.0:
            raise DeadlineExceededError(f"deadline of {self.seconds:g}s passed before the next attempt")
        return min(per_call, remaining)

    def __repr__(self) -> str:
        remaining = self.remaining()
        return "Deadline(unbounded)" if remaining is None else f"Deadline({self.seconds:g}s, {remaining:.3f}s left)"
