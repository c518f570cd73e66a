"""The answering call waits its turn in the LLM client's waiting line (docs/answers.md, "Many questions at once").

:func:`through_line` is a generator: while the question waits it yields a :class:`QueuedEvent` at once and
then every ``llm.queue_event_seconds``; it returns ``(what the call returned, the ticket)`` (the caller
releases the ticket when the answer is written) or None when the wait budget (``llm.queue_wait_seconds``,
never past the question's deadline) ran out, after adding the reason to ``degraded``. A provider's 429
pauses the line for its Retry-After and the question waits again at its head. A full line raises
:class:`~ragstream.errors.TooManyRequestsError` before anything is yielded.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Generator
from typing import TYPE_CHECKING, TypeVar

from ragstream.answer.models import QueuedEvent
from ragstream.errors import LLMRateLimitError
from ragstream.providers.deadline import Deadline

if TYPE_CHECKING:
    from ragstream.providers.llm_client import LLMClient
    from ragstream.providers.llm_queue import Ticket

T = TypeVar("T")
Waiting = Generator[QueuedEvent, None, "tuple[T, Ticket] | None"]


def through_line(llm: LLMClient, call: Callable[[], T], deadline: Deadline, degraded: list[str]) -> Waiting[T]:
    """Run ``call`` once ``llm``'s waiting line gives this question a slot (see the module's docstring)."""
    config = llm.config
    remaining = deadline.remaining()
    budget = config.queue_wait_seconds if remaining is None else min(config.queue_wait_seconds, remaining)
    started = time.monotonic()
    ticket = llm.queue.join()
    reason: str = "busy"
    retry_after: float | None = None
    try:
        while True:
            if not ticket.wait(0.0):
                while True:
                    waited = time.monotonic() - started
                    left = budget - waited
                    if left <= 0:
                        ticket.release()
                        degraded.append(_gave_up(reason, waited, config.queue_wait_seconds, retry_after))
                        return None
                    yield QueuedEvent(position=max(ticket.position, 1), waited_seconds=round(waited, 1),
                                      reason="rate_limited" if reason == "rate_limited" else "busy",
                                      retry_after_seconds=retry_after)
                    if ticket.wait(min(config.queue_event_seconds, left)):
                        break
            try:
                return call(), ticket
            except LLMRateLimitError as error:
                reason = "rate_limited"
                retry_after = error.retry_after if error.retry_after is not None else config.retry_base_seconds
                waited = time.monotonic() - started
                if retry_after > budget - waited:  # the provider asks for longer than this question may wait
                    ticket.release()
                    degraded.append(_gave_up(reason, waited, config.queue_wait_seconds, retry_after))
                    return None
                llm.queue.pause(retry_after)
                ticket.requeue()
    except BaseException:
        ticket.release()
        raise


def drain(waiting: Waiting[T]) -> tuple[T, Ticket] | None:
    """Wait without telling anyone (a one-piece answer): the generator's result."""
    while True:
        try:
            next(waiting)
        except StopIteration as stop:
            return stop.value


def _gave_up(reason: str, waited: float, budget: float, retry_after: float | None) -> str:
    if reason == "rate_limited":
        return (f"LLM rate limited (HTTP 429, the provider asked to wait {retry_after:g} s): gave up after waiting "
                f"{waited:.0f} s in line (llm.queue_wait_seconds = {budget:g})")
    return (f"many questions at once: waited {waited:.0f} s in line for the answering model "
            f"(llm.queue_wait_seconds = {budget:g})")
