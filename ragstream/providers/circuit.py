"""A circuit breaker per remote endpoint, so a dead provider fails fast instead of being waited on.

States:

* ``closed``: calls go through; ``failure_threshold`` consecutive failures open the breaker.
* ``open``: :meth:`CircuitBreaker.before_call` raises at once, no request is sent.
* ``half_open``: the cool-down has passed; one trial call may go through. Its success closes the
  breaker, its failure opens it again for another cool-down. Other calls fail fast meanwhile.

Only failures that say "the endpoint is unavailable" should be recorded (network errors,
timeouts, 5xx, 429 after retries, bodies that are not the expected JSON); an endpoint that
answers a 4xx is alive. A request that got no answer for a whole timeout may :meth:`CircuitBreaker.trip`
the breaker instead: a hung endpoint would cost every later call that timeout again. :func:`breaker_for`
keeps one breaker per endpoint for the whole process, so every client of the same base URL shares it.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Final, Literal

from ragstream.errors import ProviderCircuitOpenError

State = Literal["closed", "open", "half_open"]
CLOSED: Final = "closed"
OPEN: Final = "open"
HALF_OPEN: Final = "half_open"

ErrorFactory = Callable[[str], Exception]
Clock = Callable[[], float]


class CircuitBreaker:
    """Thread-safe closed/open/half-open breaker. ``failure_threshold <= 0`` disables it."""

    def __init__(
        self,
        name: str,
        failure_threshold: int,
        cooldown_seconds: float,
        clock: Clock = time.monotonic,
        *,
        error: ErrorFactory = ProviderCircuitOpenError,
    ) -> None:
        self.name = name
        self.failure_threshold = failure_threshold
        self.cooldown_seconds = cooldown_seconds
        self.error = error
        self._clock = clock
        self._lock = threading.Lock()
        self._state: State = CLOSED
        self._failures = 0
        self._opened_at = 0.0
        self._trial_started: float | None = None

    @property
    def enabled(self) -> bool:
        """False when ``failure_threshold <= 0``: the breaker never opens."""
        return self.failure_threshold > 0

    @property
    def state(self) -> State:
        """``closed``, ``open`` or ``half_open`` (an open breaker whose cool-down has passed)."""
        with self._lock:
            return self._current_state()

    @property
    def consecutive_failures(self) -> int:
        """Failures recorded since the last success."""
        with self._lock:
            return self._failures

    def before_call(self) -> None:
        """Let a call through, or raise the breaker's error when it is open.

        In ``half_open`` the first caller becomes the trial call; others fail fast until the
        trial's outcome is recorded (or it has been in flight for a whole cool-down).
        """
        with self._lock:
            state = self._current_state()
            if state == CLOSED:
                return
            now = self._clock()
            if state == HALF_OPEN:
                trial = self._trial_started
                if trial is None or now - trial >= self.cooldown_seconds:
                    self._state = HALF_OPEN
                    self._trial_started = now
                    return
                wait = self.cooldown_seconds - (now - trial)
                detail = "a trial call is in flight"
            else:
                wait = self.cooldown_seconds - (now - self._opened_at)
                detail = f"{self._failures} failure(s) in a row"
        raise self.error(f"{self.name} circuit is open ({detail}); next try in {max(0.0, wait):.1f}s")

    def record_success(self) -> None:
        """The endpoint answered: close the breaker and forget past failures."""
        with self._lock:
            self._state = CLOSED
            self._failures = 0
            self._trial_started = None

    def record_failure(self) -> None:
        """The endpoint was unavailable: count it; open at the threshold or when a trial failed."""
        with self._lock:
            self._failures += 1
            if not self.enabled or self._state == OPEN:
                return  # a straggler of the calls made before it opened: keep the cool-down running
            trial_failed = self._state == HALF_OPEN and self._trial_started is not None
            if trial_failed or self._failures >= self.failure_threshold:
                self._state = OPEN
                self._opened_at = self._clock()
                self._trial_started = None

    def trip(self) -> None:
        """The endpoint hung (no answer for a whole timeout): open at once, whatever the threshold."""
        with self._lock:
            self._failures += 1
            if not self.enabled:
                return
            self._state = OPEN
            self._opened_at = self._clock()
            self._trial_started = None

    def release(self) -> None:
        """The call ended without saying anything about the endpoint: free the trial slot."""
        with self._lock:
            self._trial_started = None

    def reset(self) -> None:
        """Back to ``closed`` with no failures."""
        self.record_success()

    def _current_state(self) -> State:
        if not self.enabled:
            return CLOSED
        if self._state == OPEN and self._clock() - self._opened_at >= self.cooldown_seconds:
            self._state = HALF_OPEN
        return self._state

    def __repr__(self) -> str:
        return f"CircuitBreaker({self.name!r}, state={self.state}, failures={self.consecutive_failures})"


_registry: dict[tuple[str, str], CircuitBreaker] = {}
_registry_lock = threading.Lock()


def breaker_for(
    kind: str,
    key: str,
    threshold: int,
    cooldown: float,
    *,
    error: ErrorFactory = ProviderCircuitOpenError,
    clock: Clock = time.monotonic,
) -> CircuitBreaker:
    """The process-wide breaker of endpoint ``key`` (e.g. a base URL) of provider ``kind``.

    Every caller asking for the same ``(kind, key)`` gets the same breaker; the latest
    ``threshold``, ``cooldown`` and ``error`` given apply. ``clock`` is used only on creation.
    """
    with _registry_lock:
        breaker = _registry.get((kind, key))
        if breaker is None:
            breaker = CircuitBreaker(f"{kind} {key}", threshold, cooldown, clock, error=error)
            _registry[(kind, key)] = breaker
        else:
            with breaker._lock:
                breaker.failure_threshold = threshold
                breaker.cooldown_seconds = cooldown
                breaker.error = error
        return breaker


def reset_breakers() -> None:
    """Forget every registered breaker (tests, or after reconfiguring endpoints)."""
    with _registry_lock:
        _registry.clear()
