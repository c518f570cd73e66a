"""The HNSW build runs in a child process on a copy of the shard: readers keep searching meanwhile
(while the built copy loads too), the built copy answers like the exact search did, and a crash at
any step of the swap is repaired when the store opens again (real Qdrant Edge shards on disk, a
real child process, real threads)."""

from __future__ import annotations

import json
import shutil
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np

from ragstream.config import StoreConfig
from ragstream.models import Chunk, ChunkMetadata
from ragstream.store import hnsw_build
from ragstream.store.base import Snapshot
from ragstream.store.qdrant_edge import QdrantEdgeStore

WAIT_SECONDS = 60.0
"""A bound for waiting on another thread: reached only when the code under test is broken."""

DIMENSIONS = 32
POINTS = 600
ALL = Snapshot(sequence=0, max_generation=1, uncommitted=frozenset())


def _chunk(index: int) -> Chunk:
    metadata = ChunkMetadata(document_id=f"doc{index // 10}", source="s", title="t", chunk_index=index % 10,
                             word_count=3, has_code=False, has_equations=False, checksum="c", content_hash=f"h{index}",
                             mime="text/plain", created_at="2026-01-01T00:00:00+00:00")
    return Chunk(chunk_id=f"00000000-0000-0000-0000-{index:012d}", text=f"passage number {index}", metadata=metadata)


def _filled_store(path: Path, config: StoreConfig) -> tuple[QdrantEdgeStore, np.ndarray]:
    vectors = np.random.default_rng(7).standard_normal((POINTS, DIMENSIONS)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    store = QdrantEdgeStore(path, DIMENSIONS, config)
    store.upsert([_chunk(i) for i in range(POINTS)], vectors, generation=1)
    store.flush()
    return store, vectors


def test_readers_keep_searching_while_the_index_builds(tmp_path: Path):
    store, vectors = _filled_store(tmp_path / "qdrant", StoreConfig(optimize_min_points=100, optimize_min_new_points=100))
    exact = [[c.chunk_id for c, _ in store.search_dense(vectors[i], 10, None, ALL)] for i in range(5)]
    done_at: list[float] = []
    stop = threading.Event()

    def reader() -> None:
        while not stop.is_set():
            assert store.search_dense(vectors[0], 10, None, ALL)
            done_at.append(time.perf_counter())

    thread = threading.Thread(target=reader)
    thread.start()
    started = time.perf_counter()
    assert store.maybe_optimize() is True
    finished = time.perf_counter()
    stop.set()
    thread.join()
    during = [t for t in done_at if started < t < finished]
    assert during, "no search completed while the index was being built"
    assert store.maybe_optimize() is False, "nothing new since the build"
    live = tmp_path / "qdrant"
    assert hnsw_build.last_build_points(live) == POINTS
    assert not hnsw_build.building_path(live).exists()
    assert hnsw_build.active_path(live) == tmp_path / "qdrant.hnsw-1" and not live.exists()  # the old one is gone
    assert store.count() == POINTS
    assert [[c.chunk_id for c, _ in store.search_dense(vectors[i], 10, None, ALL)] for i in range(5)] == exact
    store.upsert([_chunk(POINTS)], vectors[:1], generation=1)  # the swapped-in shard takes writes
    assert store.count() == POINTS + 1
    store.close()
    reopened = QdrantEdgeStore(live, DIMENSIONS, StoreConfig())  # the pointer leads a new process to the built one
    assert reopened.count() == POINTS + 1 and reopened.info()["indexed_vectors"] > 0
    reopened.close()


class _LoadWatcher(QdrantEdgeStore):
    """Loads the built shard, then waits for a reader to finish a search before handing it over."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self.searched, self.loading = threading.Event(), threading.Event()
        super().__init__(*args, **kwargs)

    def _load(self, folder: Path) -> object:
        shard = super()._load(folder)
        self.loading.set()
        assert self.searched.wait(WAIT_SECONDS), "no reader got through while the built shard was loading"
        return shard


def test_readers_search_the_old_shard_while_the_built_one_loads(tmp_path: Path):
    config = StoreConfig(optimize_min_points=100, optimize_min_new_points=100)
    _filled_store(tmp_path / "qdrant", config)[0].close()
    store = _LoadWatcher(tmp_path / "qdrant", DIMENSIONS, config)
    vectors = np.eye(DIMENSIONS, dtype=np.float32)

    def reader() -> None:
        assert store.loading.wait(WAIT_SECONDS)
        assert store.search_dense(vectors[0], 10, None, ALL)
        store.searched.set()

    thread = threading.Thread(target=reader)
    thread.start()
    assert store.maybe_optimize() is True
    thread.join()
    assert store.searched.is_set()
    assert store.search_dense(vectors[0], 10, None, ALL)
    store.close()


class _FailingLoad(QdrantEdgeStore):
    """A built shard that cannot be loaded (a fault a real build does not produce on demand)."""

    def _load(self, folder: Path) -> object:
        raise RuntimeError(f"cannot load the built shard at {folder}: injected")


def test_a_built_shard_that_fails_to_load_leaves_the_old_one_in_use(tmp_path: Path):
    config = StoreConfig(optimize_min_points=100, optimize_min_new_points=100)
    live = tmp_path / "qdrant"
    _filled_store(live, config)[0].close()
    vectors = np.eye(DIMENSIONS, dtype=np.float32)
    store = _FailingLoad(live, DIMENSIONS, config)
    assert store.maybe_optimize() is False
    assert hnsw_build.active_path(live) == live and sorted(p.name for p in tmp_path.iterdir()) == ["qdrant"]
    assert store.count() == POINTS and store.search_dense(vectors[0], 3, None, ALL)
    store.close()


def test_below_the_thresholds_nothing_is_built(tmp_path: Path):
    store, _ = _filled_store(tmp_path / "qdrant", StoreConfig(optimize_min_points=POINTS + 1))
    assert store.maybe_optimize() is False
    store.close()
    store, _ = _filled_store(tmp_path / "other", StoreConfig(optimize_min_points=10, optimize_min_new_points=POINTS + 1))
    assert store.maybe_optimize() is False
    assert not hnsw_build.state_path(tmp_path / "other").exists()
    store.close()


def test_a_crash_in_the_middle_of_a_swap_is_repaired_on_open(tmp_path: Path):
    live = tmp_path / "qdrant"
    store, vectors = _filled_store(live, StoreConfig())
    store.close()
    live.rename(hnsw_build.retired_path(live))  # crashed after moving the live shard away
    hnsw_build.building_path(live).mkdir()  # ... and before the half-built copy was moved in
    (hnsw_build.building_path(live) / "junk").write_text("partial")
    reopened = QdrantEdgeStore(live, DIMENSIONS, StoreConfig())
    assert reopened.count() == POINTS
    assert not hnsw_build.building_path(live).exists() and not hnsw_build.retired_path(live).exists()
    assert reopened.search_dense(vectors[3], 1, None, ALL)[0][0].chunk_id == _chunk(3).chunk_id
    reopened.close()


def test_a_crash_between_placing_and_committing_a_build_keeps_the_old_shard(tmp_path: Path):
    live = tmp_path / "qdrant"
    store, vectors = _filled_store(live, StoreConfig())
    store.close()
    built = hnsw_build.building_path(live)
    built.mkdir()
    (built / "junk").write_text("a build the crash left before its commit")
    placed = hnsw_build.place(live, built)
    reopened = QdrantEdgeStore(live, DIMENSIONS, StoreConfig())
    assert not placed.exists() and hnsw_build.active_path(live) == live
    assert reopened.search_dense(vectors[3], 1, None, ALL)[0][0].chunk_id == _chunk(3).chunk_id
    reopened.close()


def test_a_crash_after_the_commit_keeps_the_built_shard_and_deletes_the_old(tmp_path: Path):
    live = tmp_path / "qdrant"
    store, vectors = _filled_store(live, StoreConfig(optimize_min_points=100, optimize_min_new_points=100))
    assert store.maybe_optimize() is True
    store.close()
    first = hnsw_build.active_path(live)
    shutil.copytree(first, live)  # as if the process died after the commit, before deleting the old folder
    reopened = QdrantEdgeStore(live, DIMENSIONS, StoreConfig(optimize_min_points=100, optimize_min_new_points=1))
    assert not live.exists() and hnsw_build.active_path(live) == first
    reopened.upsert([_chunk(POINTS)], vectors[:1], generation=1)
    assert reopened.maybe_optimize() is True  # a second build replaces the first built folder
    second = hnsw_build.active_path(live)
    assert second.name == "qdrant.hnsw-2" and not first.exists()
    assert reopened.count() == POINTS + 1
    assert reopened.search_dense(vectors[3], 1, None, ALL)[0][0].chunk_id == _chunk(3).chunk_id
    reopened.close()


def test_the_build_uses_the_configured_hnsw_parameters(tmp_path: Path):
    config = StoreConfig(optimize_min_points=100, optimize_min_new_points=100, edge_hnsw_m=8, edge_hnsw_ef_construct=32,
                         edge_hnsw_full_scan_kb=500, edge_indexing_threads=1)
    store, _ = _filled_store(tmp_path / "qdrant", config)
    assert store.maybe_optimize() is True
    store.close()
    built = json.loads((hnsw_build.active_path(tmp_path / "qdrant") / "edge_config.json").read_text())
    assert built["hnsw_config"] == {"m": 8, "ef_construct": 32, "full_scan_threshold": 500, "max_indexing_threads": 1}
    # other settings later (as after an upgrade that changed a default): the built shard still opens and serves
    reopened = QdrantEdgeStore(tmp_path / "qdrant", DIMENSIONS, config.model_copy(update={"edge_hnsw_ef_construct": 48}))
    try:
        assert reopened.count() == POINTS
        assert len(reopened.search_dense(np.ones(DIMENSIONS, dtype=np.float32), 10, None, ALL)) == 10
    finally:
        reopened.close()
