"""The waiting line in front of the answering model: a few slots, a bounded line, first come first served.

One :class:`LLMQueue` per process and endpoint (:func:`queue_for`, shared like the circuit breaker):
at most ``llm.max_concurrent`` answers are generated at once; the next ``llm.queue_max_waiting``
questions wait in line, in arrival order; one more is refused at once with
:class:`~ragstream.errors.TooManyRequestsError` (HTTP 429 with ``Retry-After``). When the provider
answers 429 the whole line pauses for its ``Retry-After`` (:meth:`LLMQueue.pause`) and the refused
question waits again at the head of the line (:meth:`Ticket.requeue`). How long a question may wait is
the caller's budget (``llm.queue_wait_seconds``, :mod:`ragstream.answer.llm_line`).
"""

from __future__ import annotations

import math
import threading
import time
from collections import deque
from collections.abc import Callable

from ragstream.errors import TooManyRequestsError


class Ticket:
    """One question's place: waiting in line, then holding a slot until :meth:`release`."""

    def __init__(self, queue: LLMQueue) -> None:
        self._queue = queue
        self.granted = False
        self.released = False
        self.joined = queue.clock()

    @property
    def position(self) -> int:
        """1 for the head of the line; 0 once holding a slot."""
        return self._queue.position(self)

    @property
    def waited_seconds(self) -> float:
        """Seconds since the question joined (or rejoined) the line."""
        return self._queue.clock() - self.joined

    def wait(self, timeout: float) -> bool:
        """Wait up to ``timeout`` seconds for a slot; True once holding one."""
        return self._queue.wait(self, timeout)

    def requeue(self) -> None:
        """Give the slot back and wait again at the head of the line (the provider said: not now)."""
        self._queue.requeue(self)

    def release(self) -> None:
        """Leave: free the slot, or the place in line. Idempotent."""
        self._queue.release(self)


class LLMQueue:
    """``slots`` answers at once, ``max_waiting`` more in line; ``pause`` holds every slot back for a while."""

    def __init__(self, slots: int, max_waiting: int, full_retry_after_seconds: float,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.slots = slots
        self.max_waiting = max_waiting
        self.full_retry_after_seconds = full_retry_after_seconds
        self.clock = clock
        self._lock = threading.Condition()
        self._line: deque[Ticket] = deque()
        self._active = 0
        self._paused_until = -math.inf

    @property
    def active(self) -> int:
        """Slots in use."""
        return self._active

    @property
    def waiting(self) -> int:
        """Questions in line."""
        return len(self._line)

    def join(self) -> Ticket:
        """A ticket holding a free slot, or a place at the end of the line; refused when the line is full."""
        with self._lock:
            ticket = Ticket(self)
            if len(self._line) >= self.max_waiting and not self._free():
                raise TooManyRequestsError(
                    f"{self._active} answers are being written and {len(self._line)} questions wait "
                    f"(llm.max_concurrent={self.slots}, llm.queue_max_waiting={self.max_waiting}): try again later",
                    retry_after_seconds=self.full_retry_after_seconds)
            self._line.append(ticket)
            self._grant()
            return ticket

    def position(self, ticket: Ticket) -> int:
        """``ticket``'s place in line (1 = next), 0 when it holds a slot or left."""
        with self._lock:
            return 0 if ticket.granted or ticket.released else self._line.index(ticket) + 1

    def wait(self, ticket: Ticket, timeout: float) -> bool:
        """Block up to ``timeout`` seconds until ``ticket`` holds a slot."""
        end = self.clock() + max(timeout, 0.0)
        with self._lock:
            while not ticket.granted:
                self._grant()
                now = self.clock()
                if ticket.granted or now >= end:
                    break
                wake = min(end, self._paused_until) if self._paused_until > now else end
                self._lock.wait(max(wake - now, 0.0))
            return ticket.granted

    def pause(self, seconds: float) -> None:
        """Grant no slot for ``seconds`` (the provider's Retry-After), from now."""
        with self._lock:
            self._paused_until = max(self._paused_until, self.clock() + max(seconds, 0.0))

    def requeue(self, ticket: Ticket) -> None:
        """``ticket`` gives its slot back and waits at the head of the line."""
        with self._lock:
            if ticket.granted:
                ticket.granted = False
                self._active -= 1
                self._line.appendleft(ticket)
                ticket.joined = self.clock()
            self._lock.notify_all()

    def release(self, ticket: Ticket) -> None:
        """``ticket`` leaves: its slot or its place goes to the next in line."""
        with self._lock:
            if ticket.released:
                return
            ticket.released = True
            if ticket.granted:
                ticket.granted = False
                self._active -= 1
            elif ticket in self._line:
                self._line.remove(ticket)
            self._grant()
            self._lock.notify_all()

    def _free(self) -> bool:
        return self._active < self.slots and self.clock() >= self._paused_until

    def _grant(self) -> None:
        granted = False
        while self._line and self._free():
            ticket = self._line.popleft()
            ticket.granted = True
            self._active += 1
            granted = True
        if granted:
            self._lock.notify_all()


_QUEUES: dict[tuple[str, int, int, float], LLMQueue] = {}
_QUEUES_LOCK = threading.Lock()


def queue_for(endpoint: str, slots: int, max_waiting: int, full_retry_after_seconds: float) -> LLMQueue:
    """The process's waiting line of ``endpoint`` (one per endpoint and sizes, shared by every client of it)."""
    key = (endpoint, slots, max_waiting, full_retry_after_seconds)
    with _QUEUES_LOCK:
        queue = _QUEUES.get(key)
        if queue is None:
            queue = _QUEUES[key] = LLMQueue(slots, max_waiting, full_retry_after_seconds)
        return queue
