"""Waiting on the store process (``store.edge_process``): a busy child is waited for, a dead one fails at once
and says how it ended (exit status or signal), a hung one fails after a bounded wait, and every failure is logged
with its reason (real child processes stopped, continued and killed with real signals, real threads).

``retrieve`` waits on its vector search the same way: past ``answer.timeout_seconds`` a slow search is logged
and waited for, and fails only past ``answer.search_max_wait_seconds``.
"""

from __future__ import annotations

import logging
import os
import signal
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from support.answer_fixtures import MARKDOWN_SAMPLES

from ragstream.config import StoreConfig
from ragstream.errors import VectorDBUnavailableError
from ragstream.models import Chunk, ChunkMetadata
from ragstream.store import edge_process
from ragstream.store.edge_process import EdgeProcessStore

WAIT_SECONDS = 60.0
"""A bound for waiting on another thread or process: reached only when the code under test is broken."""

DIMENSIONS = 8
POINTS = 20


def _filled(path: Path, **config: Any) -> EdgeProcessStore:
    store = EdgeProcessStore(path, DIMENSIONS, StoreConfig(edge_process="on", **config))
    vectors = np.random.default_rng(3).standard_normal((POINTS, DIMENSIONS)).astype(np.float32)
    chunks = [Chunk(chunk_id=f"00000000-0000-0000-0000-{i:012d}", text=f"passage {i}",
                    metadata=ChunkMetadata(document_id=f"doc{i}", source="s", title="t", chunk_index=0, word_count=2,
                                           has_code=False, has_equations=False, checksum="c", content_hash=f"h{i}",
                                           mime="text/plain", created_at="2026-01-01T00:00:00+00:00"))
              for i in range(POINTS)]
    store.upsert(chunks, vectors / np.linalg.norm(vectors, axis=1, keepdims=True), generation=1)
    store.flush()
    return store


def _in_threads(*calls: Any) -> list[dict[str, Any]]:
    """Each of ``calls`` at once on a thread of its own, so a call that never returns fails the test instead of
    hanging it: its value or error."""
    outcomes: list[dict[str, Any]] = [{} for _ in calls]

    def run(call: Any, outcome: dict[str, Any]) -> None:
        try:
            outcome["value"] = call()
        except BaseException as error:
            outcome["error"] = error

    threads = [threading.Thread(target=run, args=pair, daemon=True) for pair in zip(calls, outcomes, strict=True)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(WAIT_SECONDS)
        assert not thread.is_alive(), "a store call never returned"
    return outcomes


def _stop(pid: int) -> None:
    """SIGSTOP ``pid`` and wait until every thread of it has stopped (the signal is delivered asynchronously: a
    thread already running could still answer a call meanwhile)."""
    os.kill(pid, signal.SIGSTOP)
    deadline = time.monotonic() + WAIT_SECONDS
    tasks = Path(f"/proc/{pid}/task")
    while not all(_state(task) in "tT" for task in tasks.iterdir()):
        assert time.monotonic() < deadline, f"process {pid} did not stop"
        time.sleep(0.01)


def _state(task: Path) -> str:
    try:
        return (task / "stat").read_text().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:  # a thread that exited
        return "T"


def _store_warnings(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == "ragstream.store" and r.levelno >= logging.WARNING]


def test_a_child_killed_while_it_opens_the_index_says_so(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                         caplog: pytest.LogCaptureFixture):
    caplog.set_level(logging.WARNING, "ragstream.store")
    read_first_line = edge_process._first_line

    def killed_first(process: Any, timeout: float) -> str:
        # The kill must land between the start and the ready line: only this hook can time it (the signal is real).
        process.send_signal(signal.SIGKILL)
        return read_first_line(process, timeout)

    monkeypatch.setattr(edge_process, "_first_line", killed_first)
    with pytest.raises(VectorDBUnavailableError) as caught:
        EdgeProcessStore(tmp_path / "qdrant", DIMENSIONS, StoreConfig(edge_process="on"))
    assert "did not open the index" in caught.value.message
    assert "killed by SIGKILL" in caught.value.message, caught.value.message
    assert any("killed by SIGKILL" in line for line in _store_warnings(caplog)), caplog.text


def test_a_hung_child_fails_calls_after_the_bounded_wait_and_answers_again_once_it_runs(
        tmp_path: Path, caplog: pytest.LogCaptureFixture):
    caplog.set_level(logging.WARNING, "ragstream.store")
    store = _filled(tmp_path / "qdrant", edge_process_call_seconds=1.0, edge_process_liveness_seconds=0.1)
    pid = store.info()["process"]
    try:
        _stop(pid)  # hung: alive, but it answers nothing
        # two calls at once: one on the idle connection, one on a new connection (whose handshake the child must answer)
        outcomes = _in_threads(lambda: store.count(), lambda: store.count())
        for outcome in outcomes:
            error = outcome.get("error")
            assert isinstance(error, VectorDBUnavailableError), outcome
            assert "did not answer count within 1 s" in error.message, error.message
            assert "store.edge_process_call_seconds" in error.message
        assert sum("did not answer count" in line for line in _store_warnings(caplog)) == 2, caplog.text
    finally:
        os.kill(pid, signal.SIGCONT)
    assert store.count() == POINTS, "the late answer to an abandoned call is not taken for the next one"
    assert store.info()["process"] == pid, "a child that runs is not replaced"
    store.close()


def test_a_child_killed_during_a_call_fails_it_at_once_naming_the_signal(tmp_path: Path,
                                                                         caplog: pytest.LogCaptureFixture):
    caplog.set_level(logging.WARNING, "ragstream.store")
    store = _filled(tmp_path / "qdrant", edge_process_call_seconds=WAIT_SECONDS * 10)
    pid = store.info()["process"]
    try:
        _stop(pid)
        outcome: dict[str, Any] = {}

        def count() -> None:
            try:
                outcome["value"] = store.count()
            except BaseException as error:
                outcome["error"] = error

        thread = threading.Thread(target=count, daemon=True)
        thread.start()
        in_flight = store._child._in_flight  # type: ignore[union-attr]
        deadline = time.monotonic() + WAIT_SECONDS
        while in_flight._busy == 0 and time.monotonic() < deadline:  # the call has picked the child
            time.sleep(0.01)
        os.kill(pid, signal.SIGKILL)  # dead while the call waits: no waiting out the bound
        thread.join(WAIT_SECONDS)
        assert not thread.is_alive(), "a call on a dead child waited on"
        error = outcome.get("error")
        assert isinstance(error, VectorDBUnavailableError) and "killed by SIGKILL" in error.message, outcome
        assert any("killed by SIGKILL" in line for line in _store_warnings(caplog)), caplog.text
        assert store.count() == POINTS and store.info()["process"] != pid, "started again on the next call"
    finally:
        store.close()


def test_retrieve_waits_for_a_slow_store_past_its_timeout(make_fast_index, caplog: pytest.LogCaptureFixture):
    """The search takes longer than ``answer.timeout_seconds`` (the child is stopped, then continued once the slow
    search is logged): it answers, slowly, instead of failing with vector_db_unavailable."""
    caplog.set_level(logging.WARNING)
    rs = make_fast_index(store={"edge_process": "on"}, answer={"timeout_seconds": 0.2})
    rs.ingest(MARKDOWN_SAMPLES[:1])
    pid = rs.store.info()["process"]
    done = threading.Event()

    def continue_once_logged_slow() -> None:
        while not done.wait(0.05):
            if any("still waiting" in r.getMessage() for r in caplog.records):
                break
        os.kill(pid, signal.SIGCONT)

    _stop(pid)
    helper = threading.Thread(target=continue_once_logged_slow, daemon=True)
    helper.start()
    try:
        found = rs.retrieve("timeouts", "test:slow", min_relevance=0.0)
    finally:
        done.set()
        helper.join(WAIT_SECONDS)
    assert found.document_chunks, "the slow search answered"
    assert any("answer.timeout_seconds" in r.getMessage() for r in caplog.records if r.levelno == logging.WARNING)


def test_retrieve_fails_past_its_bounded_wait_and_logs_why(make_fast_index, caplog: pytest.LogCaptureFixture):
    caplog.set_level(logging.WARNING)
    rs = make_fast_index(store={"edge_process": "on"},
                         answer={"timeout_seconds": 0.1, "search_max_wait_seconds": 0.5})
    rs.ingest(MARKDOWN_SAMPLES[:1])
    pid = rs.store.info()["process"]
    _stop(pid)
    try:
        with pytest.raises(VectorDBUnavailableError, match=r"answer\.search_max_wait_seconds"):
            rs.retrieve("timeouts", "test:hung")
    finally:
        os.kill(pid, signal.SIGCONT)
    assert any("did not answer within" in r.getMessage() and r.levelno == logging.WARNING for r in caplog.records)
    assert rs.retrieve("timeouts", "test:after", min_relevance=0.0).document_chunks
