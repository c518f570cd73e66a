"""The waiting line in front of the answering model, with real threads: slots, a bounded line in arrival
order, a full line refused with a Retry-After, a pause (the provider's 429) holding every slot back, and
a requeued question going first."""

from __future__ import annotations

import threading

import pytest

from ragstream.errors import TooManyRequestsError
from ragstream.providers.llm_queue import LLMQueue, queue_for

LONG = 30.0  # seconds a thread may block on a slot it is sure to get


def test_slots_then_the_line_then_refusal():
    queue = LLMQueue(slots=2, max_waiting=2, full_retry_after_seconds=7.0)
    first, second = queue.join(), queue.join()
    assert first.wait(0) and second.wait(0) and queue.active == 2
    third, fourth = queue.join(), queue.join()
    assert (third.position, fourth.position) == (1, 2) and not third.wait(0.01)
    with pytest.raises(TooManyRequestsError) as refused:
        queue.join()
    assert refused.value.code == "too_many_requests" and refused.value.retry_after_seconds == 7.0
    assert "llm.queue_max_waiting=2" in refused.value.message
    first.release()
    assert third.wait(0) and third.position == 0 and fourth.position == 1
    first.release()  # twice: no second slot freed
    assert not fourth.wait(0.01)
    fourth.release()  # leaves the line
    assert queue.waiting == 0 and queue.active == 2


def test_waiting_threads_get_slots_in_arrival_order():
    queue = LLMQueue(slots=1, max_waiting=10, full_retry_after_seconds=1.0)
    holder = queue.join()
    order: list[int] = []
    lock = threading.Lock()
    tickets = [queue.join() for _ in range(5)]

    def run(index: int) -> None:
        assert tickets[index].wait(LONG)
        with lock:
            order.append(index)
        tickets[index].release()

    threads = [threading.Thread(target=run, args=(index,)) for index in reversed(range(5))]
    for thread in threads:
        thread.start()
    holder.release()
    for thread in threads:
        thread.join(LONG)
    assert order == [0, 1, 2, 3, 4] and queue.active == 0 and queue.waiting == 0


def test_a_pause_holds_slots_back_and_a_requeued_question_goes_first():
    queue = LLMQueue(slots=1, max_waiting=5, full_retry_after_seconds=1.0)
    asking = queue.join()
    assert asking.wait(0)
    later = queue.join()
    queue.pause(3600)  # the provider said: not for an hour
    asking.requeue()  # back at the head of the line, before the one that came later
    assert (asking.position, later.position) == (1, 2) and queue.active == 0
    assert not asking.wait(0.05)  # paused: no slot although one is free
    queue.pause(0)  # a shorter pause does not shorten a longer one
    assert not asking.wait(0.01)


def test_a_short_pause_ends_and_the_waiting_thread_goes_on():
    queue = LLMQueue(slots=1, max_waiting=5, full_retry_after_seconds=1.0)
    queue.pause(0.2)
    ticket = queue.join()
    got = threading.Event()
    thread = threading.Thread(target=lambda: ticket.wait(LONG) and got.set())
    thread.start()
    thread.join(LONG)
    assert got.is_set() and ticket.position == 0


def test_one_line_per_endpoint_and_sizes():
    assert queue_for("http://a/v1", 2, 3, 5.0) is queue_for("http://a/v1", 2, 3, 5.0)
    assert queue_for("http://a/v1", 2, 3, 5.0) is not queue_for("http://b/v1", 2, 3, 5.0)
