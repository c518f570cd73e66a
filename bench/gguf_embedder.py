"""What running a GGUF embedder in a child process costs against running it in the ragstream process.

Usage: python bench/gguf_embedder.py [--model PATH] [--rounds 15] [--batch 8] [--chars 400] [--threads 1]

Loads one GGUF file twice in embedding mode (mean pooling): in this process (xllamacpp's ``Server`` called
directly through ``handle_embeddings``, no HTTP) and as ``embedding.provider = "gguf"`` runs it (the managed child,
reached over loopback HTTP). Then, alternating the two so both see the same machine load, it times a single query
(a SciFact claim, as a search embeds it) and a batch of passages (SciFact abstracts, as an ingest embeds them),
plus a bare loopback round trip to the child (``/health``). Prints JSON: p50/p95 in milliseconds per way and
measure, the child's overhead (p50 difference) and the load average before and after. Default model: the packaged
SmolLM2-135M (no GGUF embedding model ships in a package we know of; llama.cpp mean-pools a chat model's tokens).
"""

from __future__ import annotations

import argparse
import json
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx

from ragstream.config import EmbeddingConfig
from ragstream.providers.embedders.gguf import GgufEmbedder
from ragstream.providers.gguf_models import smollm2_gguf_path
from ragstream.providers.local_llm import stop_all

SCIFACT = Path(__file__).resolve().parents[2] / "shared" / "data" / "scifact"
PERCENTILES = (50, 95)


def percentile(values: list[float], pct: int) -> float:
    """Nearest-rank percentile."""
    ordered = sorted(values)
    return round(ordered[min(len(ordered) - 1, len(ordered) * pct // 100)], 2)


def texts(scifact: Path, batch: int, chars: int) -> tuple[str, list[str]]:
    """One SciFact claim and ``batch`` abstracts (title + text, cut to ``chars`` characters)."""
    with (scifact / "queries.jsonl").open() as lines:
        claim = json.loads(next(lines))["text"]
    passages = []
    with (scifact / "corpus.jsonl").open() as lines:
        for line in lines:
            entry = json.loads(line)
            passages.append(f"{entry['title']}\n\n{entry['text']}"[:chars])
            if len(passages) == batch:
                break
    return claim, passages


def in_process(model: Path, context: int, threads: int) -> Callable[[list[str]], Any]:
    """The model loaded in this process; a function embedding texts through ``handle_embeddings``."""
    import xllamacpp

    params = xllamacpp.CommonParams()
    params.model.path = str(model)
    params.embedding = True
    params.pooling_type = xllamacpp.llama_pooling_type.LLAMA_POOLING_TYPE_MEAN
    params.n_ctx = params.n_batch = params.n_ubatch = context
    params.cpuparams.n_threads = params.cpuparams_batch.n_threads = threads
    params.hostnames = ["127.0.0.1"]
    params.ui = False
    server = xllamacpp.Server(params)

    def embed(batch: list[str]) -> Any:
        return server.handle_embeddings({"input": batch, "encoding_format": "float"})

    embed.server = server  # type: ignore[attr-defined]  # kept alive with the function
    return embed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", type=Path, default=None, help="A GGUF file (default: the packaged SmolLM2).")
    parser.add_argument("--rounds", type=int, default=15, help="Timed calls per way and measure.")
    parser.add_argument("--batch", type=int, default=8, help="Passages per batch call.")
    parser.add_argument("--chars", type=int, default=400, help="Characters of each passage (about a chunk).")
    parser.add_argument("--threads", type=int, default=1, help="CPU threads of each model.")
    parser.add_argument("--context", type=int, default=2048, help="Context (and batch) in tokens.")
    parser.add_argument("--scifact", type=Path, default=SCIFACT, help="The SciFact folder (default: beside the repo).")
    args = parser.parse_args()
    model = args.model or smollm2_gguf_path()
    claim, passages = texts(args.scifact, args.batch, args.chars)
    load_before = os.getloadavg()
    child = GgufEmbedder(EmbeddingConfig(provider="gguf", model=str(model), threads=args.threads,
                                         gguf_context=args.context, batch_size=args.batch, timeout_seconds=600))
    local = in_process(model, args.context, args.threads)
    base = child.server.base_url().removesuffix("/v1")
    loopback = httpx.Client()  # kept open, as the embedder's own client is
    ways: dict[str, dict[str, Callable[[], Any]]] = {
        "in_process": {"query": lambda: local([claim]), "batch": lambda: local(passages)},
        "child": {"query": lambda: child.embed_queries([claim]), "batch": lambda: child.embed_documents(passages),
                  "loopback_round_trip": lambda: loopback.get(f"{base}/health")},
    }
    for calls in ways.values():  # warm up: first calls allocate
        for call in calls.values():
            call()
    timings: dict[str, dict[str, list[float]]] = {way: {name: [] for name in calls} for way, calls in ways.items()}
    for _ in range(args.rounds):
        for way, calls in ways.items():
            for name, call in calls.items():
                started = time.perf_counter()
                call()
                timings[way][name].append((time.perf_counter() - started) * 1000)
    report: dict[str, Any] = {
        "benchmark": "gguf_embedder", "model": str(model), "threads": args.threads, "rounds": args.rounds,
        "batch": args.batch, "chars": args.chars, "cpus": os.cpu_count(),
        "ms": {way: {name: {f"p{p}": percentile(values, p) for p in PERCENTILES} for name, values in measures.items()}
               for way, measures in timings.items()},
    }
    report["child_overhead_ms_p50"] = {
        name: round(report["ms"]["child"][name]["p50"] - report["ms"]["in_process"][name]["p50"], 2)
        for name in ("query", "batch")}
    report["load_average"] = {"before": [round(x, 2) for x in load_before],
                              "after": [round(x, 2) for x in os.getloadavg()]}
    stop_all()
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
