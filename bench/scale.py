"""The embedded store at scale: 100k and 1M chunks of synthetic vectors, before and after the HNSW build.

Usage: python bench/scale.py [--sizes 100000,1000000] [--queries 200] [--output FILE]

For each size, a fresh Qdrant Edge store in a temporary folder (``QdrantEdgeStore``, the class
ragstream runs, payloads and BM25 vectors included) is filled with synthetic 384-d chunks: unit
vectors drawn around 1,000 random centres (so neighbourhoods exist, like real embeddings) and short
texts of words from a 5,000-word vocabulary. Queries are stored vectors plus noise. Prints one JSON
object, per size:

- ``fill``: seconds to upsert every chunk, shard size on disk;
- ``exact`` / ``hnsw``: store query latency p50/p95/p99 (ms) for dense at ``--depth`` (the searcher's
  candidate depth), BM25 at the same depth, and the hybrid store part (both rankings as ids and scores,
  fusion, then the kept ``top_k`` chunks read back, as the searcher runs it), and the
  dense recall@10 against exact numpy search over every vector;
- ``build``: seconds of ``maybe_optimize()`` (copy, child process build, swap), the child's peak
  memory, and the latency of a reader thread searching all through the build (how many searches
  completed, p50/p95/p99/max): readers are not blocked when that count is high and max stays small;
- ``memory``: this process's resident memory after filling and after the build.

Heavy (1M chunks: several GB on disk and tens of minutes): run it under the shared lock, alone.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from ragstream.config import RetrievalConfig, StoreConfig
from ragstream.models import Chunk, ChunkMetadata
from ragstream.retrieval.searcher import fuse_rankings
from ragstream.store import hnsw_build
from ragstream.store.base import Snapshot
from ragstream.store.qdrant_edge import QdrantEdgeStore

DIMENSIONS = 384
CENTRES = 1_000
VOCABULARY = 5_000
WORDS_PER_CHUNK = 40
BATCH = 5_000
SEED = 12
ALL = Snapshot(sequence=0, max_generation=1, uncommitted=frozenset())


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


def _measure(store: QdrantEdgeStore, queries: np.ndarray, texts: list[str], exact: np.ndarray, depth: int) -> dict:
    """The store part of a search as the searcher runs it: both rankings (ids, scores, places) at ``depth``,
    fusion, then the kept ``top_k`` chunks read back."""
    config = RetrievalConfig()
    dense_ms, bm25_ms, hybrid_ms, recalls = [], [], [], []
    for vector, text, truth in zip(queries, texts, exact, strict=True):
        started = time.perf_counter()
        dense = store.rank_dense(vector, depth, None, ALL)
        dense_ms.append((time.perf_counter() - started) * 1000)
        middle = time.perf_counter()
        bm25 = store.rank_bm25(text, depth, None, ALL)
        bm25_ms.append((time.perf_counter() - middle) * 1000)
        fused = fuse_rankings({hit.chunk_id: hit.score for hit in dense}, {hit.chunk_id: hit.score for hit in bm25},
                              dense + bm25, config)
        store.fetch([chunk_id for chunk_id, _ in fused[: config.top_k]])
        hybrid_ms.append((time.perf_counter() - started) * 1000)
        found = {int(hit.chunk_id.rsplit("-", 1)[1]) for hit in dense[:10]}
        recalls.append(len(found & set(truth.tolist())) / 10)
    return {"dense_ms": _percentiles(dense_ms), "bm25_ms": _percentiles(bm25_ms), "hybrid_store_ms": _percentiles(hybrid_ms),
            "dense_recall@10": round(float(np.mean(recalls)), 4)}


def run_size(size: int, query_count: int, depth: int, workdir: Path, progress: Callable[[dict], None]) -> dict:
    """Fill, measure exact, build under a reading thread, measure HNSW; one size (``progress`` gets each phase's result)."""
    rng = np.random.default_rng(SEED)
    centres = rng.standard_normal((CENTRES, DIMENSIONS)).astype(np.float32)
    centres /= np.linalg.norm(centres, axis=1, keepdims=True)
    path = workdir / f"qdrant-{size}"
    config = StoreConfig(optimize_min_points=size + 1)  # no build while filling; the bench triggers it
    store = QdrantEdgeStore(path, DIMENSIONS, config)
    started = time.perf_counter()
    for start in range(0, size, BATCH):
        count = min(BATCH, size - start)
        texts = _texts(start, count)
        store.upsert([_chunk(start + i, text) for i, text in enumerate(texts)], _vectors(start, count, centres), generation=1)
    store.flush()
    fill_seconds = time.perf_counter() - started
    disk_mb = sum(f.stat().st_size for f in path.rglob("*") if f.is_file()) / 2**20
    source = rng.integers(0, size, query_count)
    queries = np.vstack([_stored(int(i), size, lambda start, count: _vectors(start, count, centres)) for i in source])
    queries += rng.standard_normal(queries.shape).astype(np.float32) * 0.05
    queries /= np.linalg.norm(queries, axis=1, keepdims=True)
    query_texts = [" ".join(_stored(int(i), size, _texts).split()[:5]) for i in source]
    exact = _exact_top10(size, queries, centres)
    memory_filled = _rss_mb()
    result: dict = {"chunks": size, "fill": {"seconds": round(fill_seconds, 1), "disk_mb": round(disk_mb, 1)},
                    "memory_mb": {"after_fill": memory_filled}}
    progress(result)
    result["exact"] = _measure(store, queries, query_texts, exact, depth)
    progress(result)

    during: list[float] = []
    stop = threading.Event()

    def reader() -> None:
        index = 0
        while not stop.is_set():
            vector = queries[index % len(queries)]
            started = time.perf_counter()
            store.rank_dense(vector, depth, None, ALL)
            during.append((time.perf_counter() - started) * 1000)
            index += 1

    store._config = StoreConfig(optimize_min_points=1, optimize_min_new_points=1)  # a bench forces the build
    thread = threading.Thread(target=reader)
    thread.start()
    started = time.perf_counter()
    built = store.maybe_optimize()
    build_seconds = time.perf_counter() - started
    stop.set()
    thread.join()
    child_peak_mb = round(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024, 1)
    after = _measure(store, queries, query_texts, exact, depth)
    info = dict(store.info())
    store.close()
    for folder in {path, hnsw_build.active_path(path)}:  # after a build the shard sits in path.hnsw-<n>
        shutil.rmtree(folder, ignore_errors=True)
    for beside in (hnsw_build.state_path(path), hnsw_build.pointer_path(path)):
        beside.unlink(missing_ok=True)
    result.update({"info_after": info, "hnsw": after,
                   "build": {"built": built, "seconds": round(build_seconds, 1), "child_peak_rss_mb": child_peak_mb,
                             "reader_during_build": {"searches": len(during), **_percentiles(during)}}})
    result["memory_mb"]["after_build"] = _rss_mb()
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="100000,1000000")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--depth", type=int, default=RetrievalConfig().candidates)
    parser.add_argument("--workdir", type=Path, default=None, help="Where the temporary shards go (default: the system temp dir).")
    parser.add_argument("--output", type=Path, default=Path(__file__).with_name("results") / "scale.json")
    args = parser.parse_args()
    report: dict = {"benchmark": "scale", "dimensions": DIMENSIONS, "depth": args.depth, "queries": args.queries,
                    "cpus": os.cpu_count(), "load_average_before": [round(x, 2) for x in os.getloadavg()], "sizes": []}
    args.output.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="ragstream-scale-", dir=args.workdir) as scratch:
        for size in (int(value) for value in args.sizes.split(",")):
            def progress(partial: dict, done: int = len(report["sizes"])) -> None:  # each phase as soon as it is measured
                report["sizes"][done:] = [partial]
                report["load_average_after"] = [round(x, 2) for x in os.getloadavg()]
                args.output.write_text(json.dumps(report, indent=2))
                print(json.dumps(partial), flush=True)

            progress(run_size(size, args.queries, args.depth, Path(scratch), progress))
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
