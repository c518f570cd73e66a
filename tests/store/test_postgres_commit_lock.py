"""The postgres backend's cross-process locks, with real processes on a real PostgreSQL.

The commit lock (``store/postgres/commit_lock.py``): held by another process, a writer here waits at most
``store.commit_lock_timeout_seconds`` and gets a 503 error; when the holder is SIGKILLed, the server frees the lock
with its connection and the writer takes it. The HNSW build: an index left unfinished by a cancelled build
(PostgreSQL keeps it, invalid, and no query uses it) is dropped and built again by the next optimize.
"""

from __future__ import annotations

import subprocess
import sys
import threading
import time

import numpy as np
import psycopg
import pytest

from ragstream.config import StoreConfig
from ragstream.errors import VectorDBUnavailableError
from ragstream.models import Chunk, ChunkMetadata
from ragstream.store.postgres.commit_lock import CommitLock
from ragstream.store.postgres.connection import Database
from ragstream.store.postgres.store import HNSW_INDEX, PostgresStore

HOLDER = """
import sys, time
from ragstream.config import StoreConfig
from ragstream.store.postgres.commit_lock import CommitLock
with CommitLock(StoreConfig(backend="postgres", url=sys.argv[1])):
    print("held", flush=True)
    time.sleep(600)
"""
PROCESS_SECONDS = 60.0
DIMENSIONS = 8


def test_commit_lock_waits_a_bounded_time_and_is_freed_when_its_holder_is_killed(postgres_url: str) -> None:
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, postgres_url], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        lock = CommitLock(StoreConfig(backend="postgres", url=postgres_url, commit_lock_timeout_seconds=0.5))
        with pytest.raises(VectorDBUnavailableError, match="commit_lock_timeout_seconds"):
            lock.__enter__()
        with lock:  # reentrant in this process, and usable again after a timeout
            with lock:
                pass
            pytest.fail("taken while another process holds it")  # pragma: no cover
    except VectorDBUnavailableError:
        pass
    finally:
        holder.kill()
        holder.wait(timeout=PROCESS_SECONDS)
    lock = CommitLock(StoreConfig(backend="postgres", url=postgres_url, commit_lock_timeout_seconds=PROCESS_SECONDS))
    with lock, lock:  # taken once the holder's connection is gone; reentrant
        pass
    lock.close()


def test_commit_lock_serialises_threads_and_processes(postgres_url: str) -> None:
    config = StoreConfig(backend="postgres", url=postgres_url)
    first, second = CommitLock(config), CommitLock(config)  # two processes' locks, as two catalogs in two processes
    inside: list[int] = []
    overlaps: list[int] = []

    def work(lock: CommitLock) -> None:
        for _ in range(20):
            with lock:
                inside.append(1)
                overlaps.append(len(inside))
                time.sleep(0.001)
                inside.pop()

    threads = [threading.Thread(target=work, args=(lock,)) for lock in (first, second, first, second)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=PROCESS_SECONDS)
    first.close()
    second.close()
    assert len(overlaps) == 80 and max(overlaps) == 1


def _chunk(index: int) -> Chunk:
    metadata = ChunkMetadata(document_id=f"doc{index}", source=f"doc{index}.md", title="t", chunk_index=0, word_count=2,
                             has_code=False, has_equations=False, checksum="c", content_hash=f"h{index}",
                             mime="text/markdown", created_at="2026-01-01T00:00:00+00:00")
    return Chunk(chunk_id=f"00000000-0000-0000-0000-{index:012d}", text=f"word{index} text", metadata=metadata)


def _valid(url: str) -> bool | None:
    with psycopg.connect(url) as conn:
        row = conn.execute("SELECT i.indisvalid FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid "
                           "WHERE c.relname = %s", (HNSW_INDEX,)).fetchone()
    return None if row is None else bool(row[0])


def test_an_hnsw_index_left_unfinished_is_built_again(postgres_url: str) -> None:
    config = StoreConfig(backend="postgres", url=postgres_url, optimize_min_points=10)
    db = Database(config, "CREATE TABLE IF NOT EXISTS counters (name TEXT PRIMARY KEY, value BIGINT NOT NULL);")
    store = PostgresStore(db, DIMENSIONS, config, owns_db=True)
    try:
        vectors = np.random.default_rng(0).standard_normal((20, DIMENSIONS)).astype(np.float32)
        store.upsert([_chunk(i) for i in range(20)], vectors, generation=1)
        # A build cancelled midway, for real: CREATE INDEX CONCURRENTLY waits for an open transaction that wrote
        # to the table; cancelling it then leaves the index in the catalog, invalid.
        with (psycopg.connect(postgres_url) as blocker, psycopg.connect(postgres_url, autocommit=True) as builder,
              psycopg.connect(postgres_url, autocommit=True) as canceller):
            blocker.execute("UPDATE chunks SET length = length WHERE chunk_id = %s", (_chunk(0).chunk_id,))
            pid = builder.info.backend_pid
            cancel = threading.Timer(1.0, lambda: canceller.execute("SELECT pg_cancel_backend(%s)", (pid,)))
            cancel.start()
            with pytest.raises(psycopg.errors.QueryCanceled):
                builder.execute(f"CREATE INDEX CONCURRENTLY {HNSW_INDEX} ON chunks USING hnsw (embedding vector_cosine_ops)")
            cancel.join()
            blocker.rollback()
        assert _valid(postgres_url) is False and store.info()["hnsw_index"] is False
        assert store.maybe_optimize()
        assert _valid(postgres_url) is True and store.info()["hnsw_index"] is True
        assert not store.build_ann_index()  # built: nothing more to do
    finally:
        store.close()
