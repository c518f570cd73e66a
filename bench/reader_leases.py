"""What reader leases cost on PostgreSQL: one reading request's snapshot with and without its lease.

Usage: flock /tmp/ragstream-heavy.lock python bench/reader_leases.py [--requests 2000]

Starts the bundled PostgreSQL 18 + pgvector in a temporary directory and opens the postgres catalog
and store on it. Then, alternating rounds so both see the same machine load, times ``Snapshots.open()``
(what every search, answer and document read does first) as shipped (register a reader lease, read
the snapshot, unregister) and with the lease switched off (the baseline: the snapshot read alone),
and a BM25 search over a small store through each. Prints one JSON object with p50/p95/p99 in ms and the
load average (the machine is shared).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from ragstream.config import load_config
from ragstream.models import Chunk, ChunkMetadata
from ragstream.store.factory import open_backend
from ragstream.store.postgres import server
from ragstream.store.snapshots import Snapshots

DIMENSIONS = 64
CHUNKS = 2000
ROUNDS = 10
WORDS = ("pool", "timeout", "connection", "retry", "stream", "proxy", "cookie", "header", "client", "async")


def _chunks() -> list[Chunk]:
    rng = np.random.default_rng(7)
    return [Chunk(chunk_id=f"c{i}", text=" ".join(rng.choice(WORDS, size=40)),
                  metadata=ChunkMetadata(document_id=f"d{i % 100}", source=f"d{i % 100}", title="t", chunk_index=i,
                                         word_count=40, has_code=False, has_equations=False, checksum="c",
                                         content_hash=f"h{i}", mime="text/plain", created_at="2026-01-01T00:00:00Z"))
            for i in range(CHUNKS)]


def _percentiles(seconds: list[float]) -> dict[str, float]:
    ms = np.array(seconds) * 1000
    return {"n": len(ms), **{f"p{p}": round(float(np.percentile(ms, p)), 3) for p in (50, 95, 99)}}


def _time(step: Callable[[], Any], count: int) -> list[float]:
    spent = []
    for _ in range(count):
        start = time.perf_counter()
        step()
        spent.append(time.perf_counter() - start)
    return spent


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=2000, help="Timed requests per variant and measure.")
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="ragstream-bench-leases-"))
    try:
        url = server.start(root / "db").url
        config = load_config(data_dir=root / "index", store={"backend": "postgres", "url": url})
        catalog, store = open_backend(config, lambda catalog: DIMENSIONS)
        chunks = _chunks()
        store.upsert(chunks, np.random.default_rng(8).standard_normal((CHUNKS, DIMENSIONS)).astype(np.float32), 1)
        with_lease = Snapshots(catalog.reads, catalog.versions, store)
        without = Snapshots(_NoLeases(catalog.reads), catalog.versions, store)  # the baseline: no lease written
        results: dict[str, list[float]] = {key: [] for key in ("snapshot_lease", "snapshot_baseline",
                                                               "bm25_search_lease", "bm25_search_baseline")}
        per_round = max(args.requests // ROUNDS, 1)
        for _ in range(ROUNDS):
            for name, snapshots in (("lease", with_lease), ("baseline", without)):
                results[f"snapshot_{name}"] += _time(lambda s=snapshots: _open_close(s), per_round)
                results[f"bm25_search_{name}"] += _time(lambda s=snapshots: _search(s, store), per_round)
        store.close()
        catalog.close()
        print(json.dumps({"requests_per_measure": per_round * ROUNDS, "chunks": CHUNKS,
                          "load_average": [round(x, 2) for x in os.getloadavg()],
                          **{key: _percentiles(values) for key, values in results.items()}}, indent=2))
    finally:
        server.stop(root / "db")
        shutil.rmtree(root, ignore_errors=True)


def _open_close(snapshots: Snapshots) -> None:
    with snapshots.open():
        pass


def _search(snapshots: Snapshots, store: Any) -> None:
    with snapshots.open() as snapshot:
        store.search_bm25("connection pool timeout", 10, None, snapshot)


class _NoLeases:
    """The catalog's read consistency with reader registration switched off (what a single-process catalog does)."""

    def __init__(self, reads: Any) -> None:
        self._reads = reads

    def open_reader(self) -> None:
        return None

    def oldest_reader(self) -> float:
        return float("inf")

    def __getattr__(self, name: str) -> Any:
        return getattr(self._reads, name)


if __name__ == "__main__":
    main()
