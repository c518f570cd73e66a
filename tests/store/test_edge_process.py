"""The embedded store held by a child process (``store.edge_process``): it answers as the shard in process does,
an index build is loaded by a second child while the first keeps answering, a child that dies is started again,
and a child never outlives its parent (real Qdrant Edge shards on disk, real child processes, real threads).
The shared store contract runs on it too (``edge_process`` in tests/store/test_store_contract.py)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from support.rankings import same_ranking

from ragstream.config import StoreConfig
from ragstream.errors import InsufficientStorageError, VectorDBUnavailableError
from ragstream.models import Chunk, ChunkMetadata
from ragstream.store import hnsw_build
from ragstream.store.base import Snapshot
from ragstream.store.edge_process import EdgeProcessStore, _Child, _RetiredError
from ragstream.store.qdrant_edge import QdrantEdgeStore

WAIT_SECONDS = 60.0
"""A bound for waiting on another thread or process: reached only when the code under test is broken."""

DIMENSIONS = 32
POINTS = 600
ALL = Snapshot(sequence=0, max_generation=1, uncommitted=frozenset())
BUILD = {"optimize_min_points": 100, "optimize_min_new_points": 100}


def _chunk(index: int) -> Chunk:
    metadata = ChunkMetadata(document_id=f"doc{index // 10}", source="s", title="t", chunk_index=index % 10,
                             word_count=3, has_code=False, has_equations=False, checksum="c", content_hash=f"h{index}",
                             mime="text/plain", created_at="2026-01-01T00:00:00+00:00")
    return Chunk(chunk_id=f"00000000-0000-0000-0000-{index:012d}", text=f"passage number {index} of doc{index // 10}",
                 metadata=metadata)


def _vectors() -> np.ndarray:
    vectors = np.random.default_rng(7).standard_normal((POINTS, DIMENSIONS)).astype(np.float32)
    return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


def _fill(store: Any, vectors: np.ndarray) -> None:
    store.upsert([_chunk(i) for i in range(POINTS)], vectors, generation=1)
    store.flush()


def _scored(hits: list[tuple[Chunk, float]]) -> list[tuple[str, float]]:
    return [(chunk.chunk_id, score) for chunk, score in hits]


def _ids(hits: list[tuple[Chunk, float]]) -> list[str]:
    return [chunk.chunk_id for chunk, _ in hits]


def test_a_store_process_answers_as_the_shard_in_process(tmp_path: Path):
    vectors = _vectors()
    here = QdrantEdgeStore(tmp_path / "here", DIMENSIONS, StoreConfig())
    there = EdgeProcessStore(tmp_path / "there", DIMENSIONS, StoreConfig(edge_process="on"))
    try:
        assert there.info()["process"] != os.getpid()
        for store in (here, there):
            _fill(store, vectors)
            store.set_collections("doc3", ["c1"])
            store.delete_generation("doc5", 1)
        for i in range(5):
            assert there.search_dense(vectors[i], 10, None, ALL) == here.search_dense(vectors[i], 10, None, ALL)
            assert there.rank_dense(vectors[i], 10, {"document_id": "doc2"}, ALL) == \
                here.rank_dense(vectors[i], 10, {"document_id": "doc2"}, ALL)
        same_ranking(_scored(there.search_bm25("passage doc7", 10, None, ALL)),  # ties in any order
                     _scored(here.search_bm25("passage doc7", 10, None, ALL)))
        same_ranking([(r.chunk_id, r.score) for r in there.rank_bm25("passage doc7", 10, None, ALL)],
                     [(r.chunk_id, r.score) for r in here.rank_bm25("passage doc7", 10, None, ALL)])
        assert there.count() == here.count() == POINTS - 10
        assert there.count({"collections": "c1"}) == 10
        assert there.chunks_of("doc3", 1) == here.chunks_of("doc3", 1)
        assert [chunk for chunk, _ in there.points_of("doc4", 1)] == [chunk for chunk, _ in here.points_of("doc4", 1)]
        ids = [_chunk(i).chunk_id for i in (1, 2, 55)]
        assert there.fetch(ids) == here.fetch(ids) and set(there.fetch(ids)) == set(ids[:2])  # doc5 was deleted
        with pytest.raises(ValueError):  # the child's exception, raised here
            there.upsert([_chunk(0)], vectors[:2], generation=1)
    finally:
        here.close()
        there.close()


def test_a_read_only_store_process_refuses_writes_with_the_stores_error(tmp_path: Path):
    path = tmp_path / "qdrant"
    store = EdgeProcessStore(path, DIMENSIONS, StoreConfig(edge_process="on"))
    _fill(store, _vectors())
    store.close()
    read_only = EdgeProcessStore(path, DIMENSIONS, StoreConfig(edge_process="on"), read_only=True)
    try:
        assert read_only.read_only and read_only.count() == POINTS
        with pytest.raises(InsufficientStorageError):
            read_only.upsert([_chunk(0)], _vectors()[:1], generation=2)
    finally:
        read_only.close()


def test_the_build_is_loaded_by_a_second_process_while_readers_go_on(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """auto: the shard starts in this process; the first build's copy is loaded by a child while this process's
    readers keep searching, then every call goes to that child, and the next open starts with a child."""
    path = tmp_path / "qdrant"
    vectors = _vectors()
    store = EdgeProcessStore(path, DIMENSIONS, StoreConfig(**BUILD))
    assert store.info()["process"] == os.getpid()
    _fill(store, vectors)
    exact = [_ids(store.search_dense(vectors[i], 10, None, ALL)) for i in range(5)]
    loading, searched = threading.Event(), threading.Event()
    start = _Child.start

    def start_and_wait_for_a_reader(*args: Any, **kwargs: Any) -> _Child:
        child = start(*args, **kwargs)  # the built copy is loaded in the child: a reader must get through meanwhile
        loading.set()
        assert searched.wait(WAIT_SECONDS), "no reader got through while the second process held the built shard"
        return child

    monkeypatch.setattr(_Child, "start", start_and_wait_for_a_reader)

    def reader() -> None:
        assert loading.wait(WAIT_SECONDS)
        assert _ids(store.search_dense(vectors[0], 10, None, ALL)) == exact[0]
        searched.set()

    thread = threading.Thread(target=reader)
    thread.start()
    assert store.maybe_optimize() is True
    thread.join()
    monkeypatch.undo()
    assert store.info()["process"] != os.getpid() and store.info()["indexed_vectors"] > 0
    assert [_ids(store.search_dense(vectors[i], 10, None, ALL)) for i in range(5)] == exact
    assert hnsw_build.active_path(path) == tmp_path / "qdrant.hnsw-1"
    store.upsert([_chunk(POINTS)], vectors[:1], generation=1)  # the child holding the built shard takes writes
    store.flush()
    assert store.count() == POINTS + 1
    store.close()
    assert sorted(p.name for p in tmp_path.iterdir() if p.is_dir()) == ["qdrant.hnsw-1"], "the old shard was deleted"
    reopened = EdgeProcessStore(path, DIMENSIONS, StoreConfig(**BUILD))
    try:
        assert reopened.info()["process"] != os.getpid(), "an index built before opens in a child"
        assert reopened.count() == POINTS + 1
    finally:
        reopened.close()


def test_builds_swap_one_child_for_the_next(tmp_path: Path):
    path = tmp_path / "qdrant"
    vectors = _vectors()
    store = EdgeProcessStore(path, DIMENSIONS, StoreConfig(edge_process="on", **BUILD))
    try:
        _fill(store, vectors)
        first, picked = store.info()["process"], store._child
        assert store.maybe_optimize() is True
        second = store.info()["process"]
        assert second != first
        store.settle()
        _wait_gone(first)  # the retired child closed its shard and exited
        with pytest.raises(_RetiredError):  # a reader that picked the old child just before the swap is sent on
            picked.call("count", None)
        store.upsert([_chunk(POINTS + i) for i in range(100)], np.repeat(vectors[:1], 100, axis=0), generation=1)
        assert store.maybe_optimize() is True
        assert store.info()["process"] not in (first, second)
        assert hnsw_build.active_path(path) == tmp_path / "qdrant.hnsw-2" and store.count() == POINTS + 100
        assert store.maybe_optimize() is False, "nothing new since the build"
    finally:
        store.close()


def test_a_store_process_that_dies_is_started_again(tmp_path: Path):
    store = EdgeProcessStore(tmp_path / "qdrant", DIMENSIONS, StoreConfig(edge_process="on"))
    try:
        _fill(store, _vectors())
        pid = store.info()["process"]
        os.kill(pid, signal.SIGKILL)
        _wait_gone(pid)
        assert store.count() == POINTS, "the flushed points are back in the new process"
        assert store.info()["process"] != pid
    finally:
        store.close()


def test_a_store_process_that_cannot_open_the_shard_is_a_clear_error(tmp_path: Path):
    path = tmp_path / "qdrant"
    EdgeProcessStore(path, DIMENSIONS, StoreConfig(edge_process="on")).close()
    holder = QdrantEdgeStore(path, DIMENSIONS, StoreConfig())  # the shard's lock is taken
    try:
        with pytest.raises(VectorDBUnavailableError, match="open in another ragstream process"):
            EdgeProcessStore(path, DIMENSIONS, StoreConfig(edge_process="on"))
    finally:
        holder.close()


def test_a_store_process_exits_with_its_parent(tmp_path: Path):
    path = tmp_path / "qdrant"
    script = textwrap.dedent(f"""
        import os, sys
        from pathlib import Path
        from ragstream.config import StoreConfig
        from ragstream.store.edge_process import EdgeProcessStore
        store = EdgeProcessStore(Path({str(path)!r}), {DIMENSIONS}, StoreConfig(edge_process="on"))
        print(store.info()["process"], flush=True)
        os._exit(0)  # no close: the child must notice on its own
    """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=WAIT_SECONDS,
                          check=True)
    _wait_gone(int(done.stdout.split()[-1]))
    reopened = EdgeProcessStore(path, DIMENSIONS, StoreConfig(edge_process="on"))  # its lock was released
    reopened.close()


def _wait_gone(pid: int) -> None:
    deadline = time.monotonic() + WAIT_SECONDS
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return
        try:
            os.waitpid(pid, os.WNOHANG)  # reap it if it is our own child
        except ChildProcessError:
            pass
        time.sleep(0.05)
    raise AssertionError(f"process {pid} is still running")
