"""What loading a built Qdrant Edge shard costs the serving process, by memory placement of its parts.

Usage: python bench/shard_load.py [--size 100000] [--queries 200] [--placements default,cold] [--workdir DIR]

The swap after an HNSW build (store/hnsw_build.py) loads the built shard in the serving process, and
qdrant-edge holds Python's GIL while it loads: every thread waits (docs/performance.md). This bench fills a
shard with ``--size`` synthetic chunks through ``QdrantEdgeStore`` (bench/scale.py's chunks: payloads, BM25
vectors), builds its index in the child process as the store does, then loads the built shard once per
placement, each in a shard of its own, created with that placement and then filled and built
(``qdrant_edge.Memory`` of the dense vectors, the HNSW graph, the sparse vectors, the payload, the id tracker and
the payload field indexes: ``default`` leaves them as the store creates them; ``cold`` creates every part mapped,
not read into memory, and the field indexes on disk), loads it while a ticker thread sleeps 1 ms at a time, and
prints one JSON object per placement: the load's seconds,
the ticker's longest gap (how long every thread of the process was stopped), and dense search latency at the
searcher's depth just after the load (first pass over the queries) and again (second pass).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import tempfile
import threading
import time
from pathlib import Path

import numpy as np
import qdrant_edge as qe
from scale import DIMENSIONS, _centres, _fill, _percentiles, _queries

from ragstream.config import RetrievalConfig, StoreConfig
from ragstream.store import hnsw_build
from ragstream.store.qdrant_edge import DENSE, INTEGER_INDEXES, KEYWORD_INDEXES, SPARSE, QdrantEdgeStore

TICK_SECONDS = 0.001
LOADS = 3
"""Loads of each built shard (the machine is shared: the spread says how much one figure means)."""


def _create_cold(path: Path) -> None:
    """Create the shard with every part mapped (``Memory.Cold``) and its field indexes on disk; the store then
    opens it as it opens any shard (its own config leaves these placements as the shard has them)."""
    cold = qe.Memory.Cold
    path.mkdir(parents=True)
    shard = qe.EdgeShard.create(str(path), qe.EdgeConfig(
        vectors={DENSE: qe.EdgeVectorParams(size=DIMENSIONS, distance=qe.Distance.Cosine, memory=cold)},
        sparse_vectors={SPARSE: qe.EdgeSparseVectorParams(modifier=qe.Modifier.Idf, memory=cold)},
        hnsw_config=qe.HnswIndexConfig(m=16, ef_construct=100, full_scan_threshold=10_000, memory=cold),
        payload_memory=cold, id_tracker_memory=cold))
    for field in KEYWORD_INDEXES:
        shard.update(qe.UpdateOperation.create_field_index(field, qe.KeywordIndexParams(on_disk=True)))
    for field in INTEGER_INDEXES:
        shard.update(qe.UpdateOperation.create_field_index(field, qe.IntegerIndexParams(lookup=True, range=True, on_disk=True)))
    shard.flush()
    shard.close()


def _built(scratch: Path, placement: str, size: int, centres: np.ndarray) -> tuple[Path, dict]:
    """A shard of ``size`` chunks with that placement, built as the store builds it; its folder and costs."""
    path = scratch / placement / "qdrant"
    if placement == "cold":
        _create_cold(path)
    store = QdrantEdgeStore(path, DIMENSIONS, StoreConfig(optimize_min_points=size + 1))
    fill_seconds = _fill(store, size, centres)
    store._config = StoreConfig(optimize_min_points=1, optimize_min_new_points=1)  # a bench forces the build
    started = time.perf_counter()
    store.maybe_optimize()
    build_seconds = time.perf_counter() - started
    built = hnsw_build.active_path(path)
    store.close()
    return built, {"fill_s": round(fill_seconds, 1), "build_s": round(build_seconds, 1),
                   "disk_mb": round(sum(f.stat().st_size for f in built.rglob("*") if f.is_file()) / 2**20, 1)}


def _load(folder: Path) -> tuple[qe.EdgeShard, float, float]:
    """Load the shard while a ticker runs; the shard, the load's seconds and the ticker's longest gap (ms)."""
    gaps: list[float] = []
    stop = threading.Event()

    def ticker() -> None:
        last = time.perf_counter()
        while not stop.is_set():
            time.sleep(TICK_SECONDS)
            now = time.perf_counter()
            gaps.append((now - last) * 1000)
            last = now

    thread = threading.Thread(target=ticker)
    thread.start()
    time.sleep(0.05)
    started = time.perf_counter()
    shard = qe.EdgeShard.load(str(folder))
    seconds = time.perf_counter() - started
    time.sleep(0.05)
    stop.set()
    thread.join()
    return shard, seconds, max(gaps, default=0.0)


def _dense_ms(shard: qe.EdgeShard, queries: np.ndarray, depth: int) -> dict[str, float]:
    latencies = []
    for vector in queries:
        started = time.perf_counter()
        shard.query(qe.QueryRequest(query=qe.Query.Nearest(vector.tolist(), using=DENSE), limit=depth, with_payload=False))
        latencies.append((time.perf_counter() - started) * 1000)
    return _percentiles(latencies)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--size", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--placements", default="default,cold")
    parser.add_argument("--depth", type=int, default=RetrievalConfig().candidates)
    parser.add_argument("--workdir", type=Path, default=None)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="ragstream-shard-load-", dir=args.workdir) as scratch:
        centres, rng = _centres()
        queries, _, _ = _queries(args.size, args.queries, centres, rng)
        for placement in args.placements.split(","):
            load_before = [round(x, 2) for x in os.getloadavg()]
            built, costs = _built(Path(scratch), placement, args.size, centres)
            loads = []
            for _ in range(LOADS):
                shard, seconds, longest = _load(built)
                loads.append((seconds, longest))
                if len(loads) < LOADS:
                    shard.close()
            first = _dense_ms(shard, queries, args.depth)
            second = _dense_ms(shard, queries, args.depth)
            started = time.perf_counter()
            shard.close()
            close_seconds = time.perf_counter() - started
            print(json.dumps({"size": args.size, "placement": placement, **costs,
                              "load_s": [round(seconds, 3) for seconds, _ in loads],
                              "longest_thread_stop_ms": [round(longest, 1) for _, longest in loads],
                              "close_s": round(close_seconds, 3), "dense_ms_first_pass": first,
                              "dense_ms_second_pass": second, "load_average_before": load_before,
                              "load_average_after": [round(x, 2) for x in os.getloadavg()]}), flush=True)
            shutil.rmtree(built.parent, ignore_errors=True)


if __name__ == "__main__":
    main()
