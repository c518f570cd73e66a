"""Retrieval benchmark on SciFact (BEIR, train split): quality per mode, ingest and query timings.

Usage: python bench/retrieval.py [--dataset ../shared/data/scifact] [--data-dir DIR] [--max-queries N]

Prints one JSON object. Without --data-dir the index is built from scratch in a temporary folder,
so ingest time is the cold time (no embedding cache). The baseline is BM25 in the same run: the
report says whether hybrid beats both BM25 and dense on NDCG@10.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import tempfile
import time
from pathlib import Path

from ragstream import Ragstream, load_config
from ragstream.evaluation.beir import evaluate_retrieval, load_beir

DEFAULT_DATASET = Path(__file__).resolve().parents[2] / "shared" / "data" / "scifact"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dataset", type=Path, default=DEFAULT_DATASET)
    parser.add_argument("--split", default="train")
    parser.add_argument("--data-dir", type=Path, default=None, help="Reuse an index folder (warm ingest).")
    parser.add_argument("--max-queries", type=int, default=None)
    parser.add_argument("--output", type=Path, default=Path(__file__).with_name("results") / "retrieval.json")
    args = parser.parse_args()
    if not (args.dataset / "corpus.jsonl").exists():
        sys.exit(f"dataset not found: {args.dataset}")

    dataset = load_beir(args.dataset, args.split)
    with tempfile.TemporaryDirectory(prefix="ragstream-bench-") as scratch:
        config = load_config(data_dir=args.data_dir or Path(scratch))
        load_started = time.perf_counter()
        with Ragstream(config) as rs:
            model_load_seconds = time.perf_counter() - load_started
            result = evaluate_retrieval(rs, dataset, max_queries=args.max_queries)
            chunks = rs.store.count()

    ndcg = {mode: scores["ndcg@10"] for mode, scores in result.metrics.items()}
    report = {
        "benchmark": "retrieval",
        "dataset": f"{dataset.name}/{args.split}",
        "queries": result.queries,
        "documents": sum(1 for _ in dataset.documents()),
        "chunks": chunks,
        "config": {"chunking": config.chunking.strategy, "chunk_size": config.chunking.chunk_size,
                   "embedding": config.embedding.model, "dtype": config.embedding.dtype,
                   "fusion": config.retrieval.fusion, "fusion_level": config.retrieval.fusion_level,
                   "alpha": config.retrieval.alpha, "candidates": config.retrieval.candidates,
                   "rrf_k": config.retrieval.rrf_k},
        "metrics": result.metrics,
        "baseline": {"mode": "bm25", "ndcg@10": ndcg.get("bm25")},
        "hybrid_beats_bm25_and_dense": ndcg["hybrid"] > max(ndcg["bm25"], ndcg["dense"]),
        "ingest": {**{k: round(v, 3) for k, v in result.ingest.items()}, "model_load_seconds": round(model_load_seconds, 3)},
        "query_latency_ms": result.query_latency_ms,
        "machine": {"python": platform.python_version(), "cpus": os.cpu_count()},
    }
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(report, indent=2))
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
