"""Embedding throughput of the local default model in float32 vs bfloat16 (the default), on SciFact passages.

Usage: python bench/embedders.py [--passages 256]

Prints JSON: passages/s and single-query latency per dtype, and the cosine agreement of bf16
vectors with the float32 baseline measured in the same run.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path

import numpy as np

from ragstream.config import EmbeddingConfig
from ragstream.providers.embedders.sentence_transformers import SentenceTransformerEmbedder

SCIFACT = Path(__file__).resolve().parents[2] / "shared" / "data" / "scifact" / "corpus.jsonl"
QUERY = "What is the effect of vitamin D on bone density?"
QUERY_REPEATS = 30


def _passages(limit: int) -> list[str]:
    with SCIFACT.open() as lines:
        return [json.loads(line)["text"][:1000] for line, _ in zip(lines, range(limit), strict=False)]


def _measure(dtype: str, passages: list[str]) -> tuple[dict, np.ndarray]:
    embedder = SentenceTransformerEmbedder(EmbeddingConfig(dtype=dtype))
    embedder.embed_documents(passages[:8])  # warm-up
    started = time.perf_counter()
    vectors = embedder.embed_documents(passages)
    seconds = time.perf_counter() - started
    latencies = []
    for _ in range(QUERY_REPEATS):
        query_started = time.perf_counter()
        embedder.embed_queries([QUERY])
        latencies.append((time.perf_counter() - query_started) * 1000)
    tokens = statistics.mean(embedder.count_tokens(text) for text in passages)
    return {"passages_per_second": round(len(passages) / seconds, 2), "query_ms_p50": round(statistics.median(latencies), 2),
            "mean_tokens_per_passage": round(tokens, 1)}, vectors


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--passages", type=int, default=256)
    args = parser.parse_args()
    passages = _passages(args.passages)
    baseline, baseline_vectors = _measure("float32", passages)
    bf16, bf16_vectors = _measure("bfloat16", passages)
    cosine = np.sum(baseline_vectors * bf16_vectors, axis=1)
    report = {
        "benchmark": "embedders",
        "model": EmbeddingConfig().model,
        "passages": len(passages),
        "baseline": {"dtype": "float32", **baseline},
        "bfloat16": {**bf16, "speedup_vs_float32": round(bf16["passages_per_second"] / baseline["passages_per_second"], 2),
                     "cosine_vs_float32_min": round(float(cosine.min()), 4), "cosine_vs_float32_mean": round(float(cosine.mean()), 4)},
    }
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
