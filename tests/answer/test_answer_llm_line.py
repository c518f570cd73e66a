"""The waiting line through the facade, with real threads against a real busy OpenAI-compatible server
(:mod:`support.busy_llm`): a streamed answer waiting for the one slot yields ``queued`` events first and is
answered by the model once the slot frees; a one-piece ``ask`` waits silently; a client leaving while it
waits gives its place up."""

from __future__ import annotations

import threading

from support.answer_fixtures import llm_overrides
from support.busy_llm import BusyLLM
from support.polling import wait_for

QUESTION = "What does the zanzibarquokka protocol require before a launch?"
PAGE = "# Launch protocol\n\nThe zanzibarquokka protocol requires two signatures before a launch.\n"
LONG = 60.0


def _index(make_fast_index, tmp_path, llm: BusyLLM):
    page = tmp_path / "protocol.md"
    page.write_text(PAGE)
    rs = make_fast_index(**llm_overrides(llm.base_url, model="busy", max_concurrent=1, queue_max_waiting=4,
                                         queue_wait_seconds=LONG, queue_event_seconds=0.1))
    rs.ingest([page])
    return rs


def test_a_waiting_stream_is_told_then_answered(make_fast_index, tmp_path):
    with BusyLLM() as llm:
        rs = _index(make_fast_index, tmp_path, llm)
        first: list = []
        holder = threading.Thread(target=lambda: first.append(rs.ask(QUESTION)))
        holder.start()
        wait_for(lambda: llm.requests == 1, "the first question to reach the model")
        events = rs.stream_answer(QUESTION)
        head = [next(events), next(events)]
        assert [event.type for event in head] == ["queued", "queued"] and head[0].position == 1
        assert rs.answers().llm.queue.waiting == 1 and rs.answers().llm.queue.active == 1
        llm.gate.set()
        rest = list(events)
        holder.join(LONG)
    done = rest[-1]
    assert done.type == "done" and done.mode == "llm" and done.degraded_reason is None
    assert first[0].metadata["mode"] == "llm" and llm.in_flight_max == 1
    assert rs.answers().llm.queue.active == 0 and rs.answers().llm.queue.waiting == 0


def test_a_client_leaving_while_it_waits_gives_its_place_up(make_fast_index, tmp_path):
    with BusyLLM() as llm:
        rs = _index(make_fast_index, tmp_path, llm)
        holder = threading.Thread(target=lambda: rs.ask(QUESTION))
        holder.start()
        wait_for(lambda: llm.requests == 1, "the first question to reach the model")
        events = rs.stream_answer(QUESTION)
        assert next(events).type == "queued" and rs.answers().llm.queue.waiting == 1
        events.close()  # the client hung up while waiting
        assert rs.answers().llm.queue.waiting == 0
        llm.gate.set()
        holder.join(LONG)
    assert llm.requests == 1 and rs.answers().llm.queue.active == 0
