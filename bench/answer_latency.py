"""Time to the first token of extractive answers on the documentation question sets, new settings against a
baseline, back to back in one run (``python bench/answers.py --sets ...`` runs this; docs/performance.md).

Each set is indexed once (``--index-root`` keeps the indexes for the next run), then copied twice, so the
baseline and the new settings start from the same index and the same embedding cache (sentence vectors
computed by one run would otherwise speed up the other). Both answer the same questions through
``Ragstream.stream_answer``, one question at a time and alternating which goes first, so a change of the
machine's load falls on both alike. Per set and per settings: p50/p95/p99 of the first ``token`` event, of the
``done`` event (the whole answer) and of the ReRanker stage, the load average before and after, and the share of
questions the two settings answered with the same text; with the set's ``answers.json`` the share of answers
quoting a labelled answering sentence.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import sys
import time
from pathlib import Path
from typing import Any

from ragstream import Ragstream, load_config
from ragstream.evaluation.beir import load_beir

DATASETS = Path(__file__).resolve().parent / "datasets"
DOC_SETS = ("httpx-docs", "fastapi-docs", "flask-docs", "starlette-docs", "pystdlib-ref", "pdf-manuals")
PREVIOUS = {"reranker": {"allow_spinning": True}}
"""The settings before issue 43 item 4: the baseline by default."""
PERCENTILES = (50, 95, 99)
FIRST_TOKEN_BUDGET_MS = 1000.0
RERANK_STAGE = "reranked"
WARM_UP = "How do I get started?"
_NOT_WORD = re.compile(r"[^0-9a-z]+")


def percentile(values: list[float], pct: int) -> float | None:
    """Nearest-rank percentile (None for no values)."""
    ordered = sorted(values)
    return round(ordered[min(len(ordered) - 1, len(ordered) * pct // 100)], 1) if ordered else None


def normal(text: str) -> str:
    """``text`` compared without case, punctuation, markup or spacing (as bench/extractive_sentences.py)."""
    return " ".join(_NOT_WORD.sub(" ", text.casefold()).split())


def timed_stream(rs: Ragstream, question: str) -> tuple[float | None, float, Any]:
    """Stream one answer: ms to its first ``token`` event (None without one) and to its end, and the response."""
    started = time.perf_counter()
    first_ms: float | None = None
    final = None
    for event in rs.stream_answer(question):
        if event.type == "token" and first_ms is None:
            first_ms = (time.perf_counter() - started) * 1000
        if event.type == "done":
            final = event.response
    return first_ms, (time.perf_counter() - started) * 1000, final


def stream_one(rs: Ragstream, question: str) -> dict[str, Any]:
    """One streamed answer: first token and total as the caller sees them, the ReRanker stage, the text."""
    first_ms, total, final = timed_stream(rs, question)
    if final is None:
        raise RuntimeError(f"{question!r}: the stream ended without a done event")
    stages = final.metadata["pipeline"].get("stages_ms", {})
    return {"first_token_ms": first_ms if first_ms is not None else total, "total_ms": total,
            "rerank_ms": stages.get(RERANK_STAGE), "answer": final.answer}


def summary(runs: list[dict[str, Any]], load_before: tuple[float, ...], load_after: tuple[float, ...],
            answers: dict[str, list[str]], qids: list[str]) -> dict[str, Any]:
    """The report of one settings' answers to one set."""
    def pcts(key: str) -> dict[str, float | None]:
        return {f"p{p}": percentile([r[key] for r in runs if r[key] is not None], p) for p in PERCENTILES}

    report: dict[str, Any] = {
        "first_token_ms": pcts("first_token_ms"), "total_ms": pcts("total_ms"), "rerank_stage_ms": pcts("rerank_ms"),
        "first_token_p95_within_1s": (percentile([r["first_token_ms"] for r in runs], 95) or 0.0) < FIRST_TOKEN_BUDGET_MS,
        "load_average": {"before": [round(x, 2) for x in load_before], "after": [round(x, 2) for x in load_after]},
    }
    labelled = [(qid, run) for qid, run in zip(qids, runs, strict=True) if qid in answers]
    if labelled:
        quoted = sum(any(normal(a) in normal(run["answer"]) for a in answers[qid]) for qid, run in labelled)
        report["answering_sentence_share"] = round(quoted / len(labelled), 3)
        report["labelled_questions"] = len(labelled)
    return report


def labelled_answers(folder: Path) -> dict[str, list[str]]:
    """The set's labelled answering sentences by question id (empty without ``answers.json``)."""
    path = folder / "answers.json"
    if not path.exists():
        return {}
    return {entry["query_id"]: entry["answers"] for entry in json.loads(path.read_text(encoding="utf-8"))["questions"]}


def run_set(name: str, index_root: Path, scratch: Path, questions: int, settings: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """Index ``name`` (or reuse its index), then answer its first ``questions`` questions under each settings."""
    folder = DATASETS / name
    dataset = load_beir(folder, "all")
    qids = sorted(dataset.queries)[:questions] if questions > 0 else sorted(dataset.queries)
    index = index_root / name
    with Ragstream(load_config(data_dir=index)) as rs:
        documents = list(dataset.documents(rs.config))
        if len(rs.documents()) != len(documents):  # new, or an ingest cut short
            rs.ingest_documents(documents)
    copies = {label: scratch / f"{name}-{label}" for label in settings}
    for copy in copies.values():
        shutil.rmtree(copy, ignore_errors=True)
        shutil.copytree(index, copy)
    runs: dict[str, list[dict[str, Any]]] = {label: [] for label in settings}
    opened = {label: Ragstream(load_config(data_dir=copies[label], **overrides)) for label, overrides in settings.items()}
    try:
        for rs in opened.values():
            stream_one(rs, WARM_UP)  # loads the models
        load_before = os.getloadavg()
        labels = list(settings)
        for position, qid in enumerate(qids):
            for label in labels if position % 2 == 0 else labels[::-1]:
                runs[label].append(stream_one(opened[label], dataset.queries[qid]))
            print(json.dumps({"set": name, "question": qid, **{label: round(runs[label][-1]["first_token_ms"])
                                                               for label in labels}, "load": os.getloadavg()[0]}),
                  file=sys.stderr, flush=True)
        load_after = os.getloadavg()
    finally:
        for rs in opened.values():
            rs.close()
        for copy in copies.values():
            shutil.rmtree(copy, ignore_errors=True)
    answers = labelled_answers(folder)
    report: dict[str, Any] = {"questions": len(qids)}
    for label in settings:
        report[label] = summary(runs[label], load_before, load_after, answers, qids)
    first, *others = list(settings)
    for other in others:
        same = sum(a["answer"] == b["answer"] for a, b in zip(runs[first], runs[other], strict=True))
        report[f"same_answer_share_{first}_{other}"] = round(same / max(1, len(qids)), 3)
    return report


def main(sets: list[str], index_root: Path, questions: int, baseline: dict[str, Any], new: dict[str, Any]) -> None:
    """Run every set and print one JSON object."""
    scratch = index_root / "_copies"
    scratch.mkdir(parents=True, exist_ok=True)
    settings = {"baseline": baseline, "new": new}
    report: dict[str, Any] = {"benchmark": "answer_latency", "mode": "extractive", "cpus": os.cpu_count(),
                              "settings": settings, "first_token_budget_ms": FIRST_TOKEN_BUDGET_MS, "sets": {}}
    for name in sets:
        report["sets"][name] = run_set(name, index_root, scratch, questions, settings)
        print(json.dumps({name: report["sets"][name]}), file=sys.stderr, flush=True)
    report["load_average_end"] = [round(x, 2) for x in os.getloadavg()]
    print(json.dumps(report, indent=2))
