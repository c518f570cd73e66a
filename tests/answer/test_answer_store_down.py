"""With the vector store down, the answer path retries once, then answers without retrieval and says why
(docs/answers.md, "The vector store down"); search and retrieve keep their 503 ``vector_db_unavailable``.

The fault is real: the embedded engine's shard is closed under the open index (removing its files under a
running process is no fault: the engine keeps the shard loaded). tests/server/test_server_store_down.py
stops a real PostgreSQL under a running server.
"""

from __future__ import annotations

import logging

import pytest
from support.answer_fixtures import MARKDOWN_SAMPLES
from support.recording_llm import RecordingLLM

from ragstream.errors import VectorDBUnavailableError

QUESTION = "How far can an operative move during the movement phase?"


def _down(rs):
    rs.ingest(MARKDOWN_SAMPLES[:2])
    rs.store.close()  # the engine's shard is gone: every query raises
    return rs


def _retries(caplog) -> tuple[int, int]:
    records = [r for r in caplog.records if r.name == "ragstream.answer" and "vector store unavailable" in r.getMessage()]
    return (sum(r.levelno == logging.WARNING for r in records), sum(r.levelno == logging.ERROR for r in records))


def test_ask_without_retrieval_after_one_retry(make_fast_index, caplog):
    rs = _down(make_fast_index())
    caplog.set_level(logging.WARNING, "ragstream.answer")
    answer = rs.ask(QUESTION)
    assert answer.metadata["mode"] == "no_retrieval"
    assert "vector_db_unavailable" in answer.metadata["degraded_reason"]
    assert answer.answer.startswith("The documents could not be searched (")
    assert answer.confidence.level == "Low" and "could not be searched" in answer.confidence.reason
    assert answer.citations == [] and answer.sources == [] and answer.metadata["chunksRetrieved"] == 0
    assert _retries(caplog) == (1, 1)  # one retry (WARNING), then the ERROR line
    with pytest.raises(VectorDBUnavailableError):
        rs.search(QUESTION)
    with pytest.raises(VectorDBUnavailableError):
        rs.retrieve(QUESTION, "ctx")


def test_retries_are_a_knob(make_fast_index, caplog):
    rs = _down(make_fast_index(answer={"store_outage": {"retries": 0}}))
    caplog.set_level(logging.WARNING, "ragstream.answer")
    assert rs.ask(QUESTION).metadata["mode"] == "no_retrieval"
    assert _retries(caplog) == (0, 1)


def test_stream_answer_without_retrieval(make_fast_index):
    rs = _down(make_fast_index())
    events = list(rs.stream_answer(QUESTION))
    assert [e.type for e in events if e.type != "token"] == ["done"]  # no citation, no support event
    done = events[-1]
    assert done.mode == "no_retrieval" and "vector_db_unavailable" in (done.degraded_reason or "")
    text = "".join(e.token for e in events if e.type == "token")
    assert text.startswith("The documents could not be searched (")
    assert done.response.confidence.level == "Low" and done.response.citations == []


def test_with_an_llm_the_question_is_answered_from_general_knowledge(make_fast_index):
    with RecordingLLM(reply="A general answer about movement.") as llm:
        rs = _down(make_fast_index(llm={"base_url": llm.base_url, "model": "recorder", "max_retries": 0}))
        answer = rs.ask(QUESTION)
        events = list(rs.stream_answer(QUESTION))
    assert answer.metadata["mode"] == "no_retrieval" and answer.metadata["model"] == "recorder"
    assert answer.answer.endswith("A general answer about movement.") and "could not be searched" in answer.answer
    sent = llm.requests[0]["messages"]
    assert [m["role"] for m in sent] == ["system", "user"] and sent[1]["content"] == QUESTION  # no attachment
    text = "".join(e.token for e in events if e.type == "token")
    assert text.startswith("The documents could not be searched (") and text.endswith("A general answer about movement.")
    assert events[-1].mode == "no_retrieval" and events[-1].degraded_reason


def test_a_healthy_store_is_not_degraded(make_fast_index):
    rs = make_fast_index()
    rs.ingest(MARKDOWN_SAMPLES[:2])
    answer = rs.ask(QUESTION)
    assert answer.metadata["mode"] in ("extractive", "no_results") and answer.metadata["degraded_reason"] is None
