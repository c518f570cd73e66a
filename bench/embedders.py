"""Embedding speed and agreement of the local runtimes on SciFact texts, with the CPU they ran on.

Usage: python bench/embedders.py [--passages 256] [--queries 200] [--backends torch-bf16,torch-fp32,onnx-int8]
                                 [--rounds 1]

Prints JSON: the CPU's flags and whether bfloat16 is native there (``ragstream.cpu_runtime``), what
``embedding.provider = auto`` chooses on it and why, the load average before and after; per backend
(provider and dtype), bulk passages/s (SciFact abstracts, title + text like an ingest) and single-query
latency p50/p95/p99 (SciFact claims, one call each, like a search); and the cosine of every backend's
passage and query vectors to every other's, measured in the same run: min, mean and the share of texts at
>= 0.999 (the agreement docs/performance.md states). ``--rounds N`` measures the backends in turn N times and
reports the median (and every round's) passages/s, so load from other jobs on a shared machine falls on all of
them alike. ``ONEDNN_MAX_CPU_ISA=AVX2`` in the environment shows what a CPU without bfloat16 instructions pays
for torch bfloat16.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from pathlib import Path
from typing import Any

import numpy as np

from ragstream.config import EmbeddingConfig
from ragstream.cpu_runtime import detect_cpu_features, native_bf16
from ragstream.providers.embedders import Embedder, make_embedder

SCIFACT = Path(__file__).resolve().parents[2] / "shared" / "data" / "scifact"
BACKENDS = {
    "torch-bf16": EmbeddingConfig(provider="sentence_transformers", dtype="bfloat16", query_provider="same"),
    "torch-fp32": EmbeddingConfig(provider="sentence_transformers", dtype="float32", query_provider="same"),
    "onnx-int8": EmbeddingConfig(provider="onnx"),
}
AGREEMENT = 0.999


def _texts(passages: int, queries: int) -> tuple[list[str], list[str]]:
    with (SCIFACT / "corpus.jsonl").open() as lines:
        entries = [json.loads(line) for line, _ in zip(lines, range(passages), strict=False)]
    with (SCIFACT / "queries.jsonl").open() as lines:
        claims = [json.loads(line)["text"] for line, _ in zip(lines, range(queries), strict=False)]
    return [f"{entry['title']}\n\n{entry['text']}" for entry in entries], claims


def _measure(embedder: Embedder, passages: list[str], queries: list[str]) -> tuple[dict, np.ndarray, np.ndarray]:
    embedder.embed_documents(passages[:8])  # warm-up
    embedder.embed_queries(queries[:4])
    started = time.perf_counter()
    passage_vectors = embedder.embed_documents(passages)
    seconds = time.perf_counter() - started
    latencies, query_vectors = [], []
    for query in queries:
        query_started = time.perf_counter()
        query_vectors.append(embedder.embed_queries([query])[0])
        latencies.append((time.perf_counter() - query_started) * 1000)
    latencies.sort()
    return ({"passages_per_second": round(len(passages) / seconds, 2),
             "query_ms_p50": round(latencies[len(latencies) // 2], 2),
             "query_ms_p95": round(latencies[int(len(latencies) * 0.95)], 2),
             "query_ms_p99": round(latencies[min(len(latencies) - 1, int(len(latencies) * 0.99))], 2)},
            passage_vectors, np.array(query_vectors))


def _agreement(vectors: np.ndarray, reference: np.ndarray) -> dict:
    cosine = np.sum(vectors * reference, axis=1)
    return {"min": round(float(cosine.min()), 5), "mean": round(float(cosine.mean()), 5),
            f"share_at_least_{AGREEMENT}": round(float((cosine >= AGREEMENT).mean()), 4)}


def _cpu() -> dict[str, Any]:
    features = detect_cpu_features()
    native, why = native_bf16(features)
    auto = EmbeddingConfig().local_runtime()
    return {"flags": features.shown(), "flags_from": features.source, "onednn_max_cpu_isa": features.onednn_max_isa,
            "native_bfloat16": native, "why": why, "auto_choice": {"provider": auto.provider, "dtype": auto.dtype,
                                                                     "why": auto.reason}}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--passages", type=int, default=256)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--backends", default=",".join(BACKENDS))
    parser.add_argument("--rounds", type=int, default=1)
    args = parser.parse_args()
    passages, queries = _texts(args.passages, args.queries)
    names = args.backends.split(",")
    load_before = os.getloadavg()
    embedders = {name: make_embedder(BACKENDS[name]) for name in names}
    results: dict[str, dict[str, Any]] = {}
    vectors: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    rounds: dict[str, list[float]] = {name: [] for name in names}
    for _ in range(args.rounds):
        for name in names:
            results[name], *measured = _measure(embedders[name], passages, queries)
            vectors[name] = (measured[0], measured[1])
            rounds[name].append(results[name]["passages_per_second"])
    for name in names:
        runtime = BACKENDS[name].local_runtime()
        results[name] |= {"provider": runtime.provider, "dtype": runtime.dtype or "int8 weights",
                          "passages_per_second": round(statistics.median(rounds[name]), 2),
                          "passages_per_second_rounds": rounds[name]}
    for name in names:
        results[name]["cosine_to"] = {other: {"passages": _agreement(vectors[name][0], vectors[other][0]),
                                              "queries": _agreement(vectors[name][1], vectors[other][1])}
                                      for other in names if other != name}
    print(json.dumps({"benchmark": "embedders", "model": EmbeddingConfig().model, "cpu": _cpu(),
                      "load_average_before": [round(value, 2) for value in load_before],
                      "load_average_after": [round(value, 2) for value in os.getloadavg()],
                      "passages": len(passages), "queries": len(queries), "backends": results}, indent=2))


if __name__ == "__main__":
    main()
