"""Embedding speed and agreement of the local backends on SciFact texts.

Usage: python bench/embedders.py [--passages 256] [--queries 200] [--backends torch-bf16,torch-fp32,onnx]

Prints JSON: per backend, bulk passages/s (SciFact abstracts, title + text like an ingest) and
single-query latency p50/p95/p99 (SciFact claims, one call each, like a search); and the cosine of every
backend's passage and query vectors to the torch bfloat16 vectors (the default passage encoder),
measured in the same run: min, mean and the share of texts at >= 0.999.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np

from ragstream.config import EmbeddingConfig
from ragstream.providers.embedders import Embedder, make_embedder

SCIFACT = Path(__file__).resolve().parents[2] / "shared" / "data" / "scifact"
BACKENDS = {
    "torch-bf16": EmbeddingConfig(provider="sentence_transformers", dtype="bfloat16"),
    "torch-fp32": EmbeddingConfig(provider="sentence_transformers", dtype="float32"),
    "onnx": EmbeddingConfig(provider="onnx"),
}
REFERENCE = "torch-bf16"
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--passages", type=int, default=256)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--backends", default=",".join(BACKENDS))
    args = parser.parse_args()
    passages, queries = _texts(args.passages, args.queries)
    names = [REFERENCE, *(name for name in args.backends.split(",") if name != REFERENCE)]
    results, vectors = {}, {}
    for name in names:
        results[name], *vectors[name] = _measure(make_embedder(BACKENDS[name]), passages, queries)
    reference_passages, reference_queries = vectors[REFERENCE]
    for name in names:
        results[name]["speedup_vs_reference"] = round(
            results[name]["passages_per_second"] / results[REFERENCE]["passages_per_second"], 2)
        if name != REFERENCE:
            results[name]["cosine_to_reference"] = {"passages": _agreement(vectors[name][0], reference_passages),
                                                    "queries": _agreement(vectors[name][1], reference_queries)}
    print(json.dumps({"benchmark": "embedders", "model": EmbeddingConfig().model, "reference": REFERENCE,
                      "passages": len(passages), "queries": len(queries), "backends": results}, indent=2))


if __name__ == "__main__":
    main()
