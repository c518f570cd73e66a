"""Coverage in the final selection (``pipeline.coverage_margin``): tune the margin on one half of each question set,
report it on the other half.

Usage: python bench/coverage.py [--sets httpx-docs,fastapi-docs,scifact] [--margins 0,0.02,0.05,0.1,0.2,0.5]
                                [--max-questions N] [--scifact-claims 80] [--distractors 300] [--index-root DIR]

The halves: the documentation sets' own ``dev`` (tune) and ``test`` (report) judgements; SciFact (train claims
only): the first ``--scifact-claims`` claims by id, alternately tune and report. Each question runs the pipeline
once through A3 (retrieval, the ReRanker with the packaged cross-encoder, the A3 gate: the expensive part), then
A4 (the token-budgeted final selection, where the coverage rule acts) once per margin on that same state, so every
margin sees the very same candidates and scores. Per set, half and margin, over the selection the answering model
reads (at most ``N3_FINAL_SELECTION_MAX`` attachments):

* ``hit``: share of questions whose selection holds a chunk of a document judged relevant (an answer can cite a
  relevant source only then: the citation-relevance of the answers, before the answer is written);
* ``doc_recall``: relevant documents selected over ``min(relevant, N3)``; ``doc_ndcg``: nDCG of the selection
  with a document's gain counted at its first chunk only;
* ``answer_sentence``: for the labelled questions (``datasets/extractive_labels.json``: the sentences that answer
  the first 15 questions of each documentation set), the share whose selection holds one of those sentences:
  what a second chunk of the same page may carry and coverage could push out;
* ``files``: distinct documents per selection (mean).

``choice``: the largest margin that holds or improves every metric on every tune half, then its report-half
numbers beside margin 0. Prints one JSON object (per-set progress to stderr) with the load average before and after.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import sys
import tempfile
import time
from itertools import islice
from pathlib import Path
from typing import Any

from ragstream import Ragstream, load_config
from ragstream.errors import RagstreamError
from ragstream.evaluation.beir import DOC_ID_KEY, load_beir
from ragstream.pipeline.super_prompt import SuperPrompt

BENCH = Path(__file__).resolve().parent
DOCS_SETS = {"httpx-docs": BENCH / "datasets" / "httpx-docs", "fastapi-docs": BENCH / "datasets" / "fastapi-docs"}
SCIFACT = BENCH.parents[1] / "shared" / "data" / "scifact"
LABELS = BENCH / "datasets" / "extractive_labels.json"
METRICS = ("hit", "doc_recall", "doc_ndcg", "answer_sentence")
_NOT_WORD = re.compile(r"[^0-9a-z]+")


def normal(text: str) -> str:
    """``text`` compared without case, punctuation, markup or spacing (as bench/extractive_sentences.py)."""
    return " ".join(_NOT_WORD.sub(" ", text.casefold()).split())


def halves(name: str, claims: int) -> tuple[dict[str, str], dict[str, set[str]], dict[str, list[str]], list[Any]]:
    """Questions (id -> text), relevant documents, the half of each question, and the documents to index."""
    if name in DOCS_SETS:
        folder = DOCS_SETS[name]
        dataset = load_beir(folder, "all")
        cap = ARGS.max_questions or None
        half = {"tune": sorted(load_beir(folder, "dev").queries)[:cap],
                "report": sorted(load_beir(folder, "test").queries)[:cap]}
        documents = list(dataset.documents())
    else:
        dataset = load_beir(SCIFACT, "train")
        chosen = sorted(dataset.queries)[:claims]
        half = {"tune": chosen[0::2], "report": chosen[1::2]}
        wanted = {doc for qid in chosen for doc in dataset.qrels[qid]}
        everything = list(dataset.documents())
        others = islice((d for d in everything if d.metadata[DOC_ID_KEY] not in wanted), ARGS.distractors)
        documents = [d for d in everything if d.metadata[DOC_ID_KEY] in wanted] + list(others)
    ids = half["tune"] + half["report"]
    relevant = {qid: {doc for doc, score in dataset.qrels.get(qid, {}).items() if score > 0} for qid in ids}
    return {qid: dataset.queries[qid] for qid in ids}, relevant, half, documents


def scores(selected: list[tuple[str, str]], relevant: set[str], answers: list[str] | None, cap: int) -> dict[str, Any]:
    """The metrics of one selection of (document id, chunk text)."""
    seen: set[str] = set()
    dcg = 0.0
    for rank, (doc, _) in enumerate(selected, start=1):
        if doc in relevant and doc not in seen:
            dcg += 1 / math.log2(rank + 1)
        seen.add(doc)
    ideal = sum(1 / math.log2(rank + 1) for rank in range(1, min(len(relevant), cap) + 1))
    found = {doc for doc, _ in selected} & relevant
    result: dict[str, Any] = {"hit": float(bool(found)), "doc_recall": len(found) / max(1, min(len(relevant), cap)),
                              "doc_ndcg": dcg / ideal if ideal else 0.0, "files": float(len(seen))}
    if answers is not None:
        text = normal(" ".join(chunk for _, chunk in selected))
        result["answer_sentence"] = float(any(normal(sentence) in text for sentence in answers))
    return result


def measure(rs: Ragstream, questions: dict[str, str], relevant: dict[str, set[str]], labels: dict[str, list[str]],
            margins: list[float]) -> dict[str, dict[float, dict[str, Any]]]:
    """Per question and margin, the metrics of A4's selection (questions A3 left nothing for are left out)."""
    cap = rs.config.pipeline.N3_FINAL_SELECTION_MAX
    out: dict[str, dict[float, dict[str, Any]]] = {}
    for qid, question in questions.items():
        try:
            gated: SuperPrompt = rs.run_pipeline(question, until="A3_NLI_Gate")
        except RagstreamError as error:
            print(json.dumps({"question": qid, "skipped": error.code}), file=sys.stderr, flush=True)
            continue
        out[qid] = {}
        for margin in margins:
            rs.config.pipeline.coverage_margin = margin  # the same A3 state, A4 again under each margin
            try:
                final = rs.run_stage(gated, "A4_Condenser")
            except RagstreamError as error:
                print(json.dumps({"question": qid, "margin": margin, "skipped": error.code}), file=sys.stderr, flush=True)
                continue
            chunks = final.chunks(final.final_selection_ids)
            selected = [(c.metadata.document_id.split(":", 1)[-1], c.text) for c in chunks]
            out[qid][margin] = scores(selected, relevant[qid], labels.get(qid), cap)
    return out


def summarise(per_question: dict[str, dict[float, dict[str, Any]]], ids: list[str], margins: list[float]) -> dict[str, Any]:
    """Mean of every metric per margin over the questions of one half."""
    result: dict[str, Any] = {}
    for margin in margins:
        rows = [per_question[qid][margin] for qid in ids if qid in per_question and margin in per_question[qid]]
        means = {key: round(sum(row[key] for row in rows if key in row) / n, 4)
                 for key in (*METRICS, "files") if (n := sum(key in row for row in rows))}
        result[str(margin)] = {"questions": len(rows), **means,
                               "labelled": sum("answer_sentence" in row for row in rows)}
    return result


def choose(tune: dict[str, dict[str, Any]], margins: list[float]) -> float:
    """The largest margin holding or improving every metric on every tune half (0 when none does)."""
    best = 0.0
    for margin in margins:
        holds = all(per_set[str(margin)].get(key, 0.0) >= per_set[str(0.0)].get(key, 0.0) - 1e-9
                    for per_set in tune.values() for key in METRICS)
        if holds:
            best = max(best, margin)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sets", default="httpx-docs,fastapi-docs,scifact")
    parser.add_argument("--margins", default="0,0.02,0.05,0.1,0.2,0.5")
    parser.add_argument("--scifact-claims", type=int, default=80, help="SciFact train claims (by id), halves alternate.")
    parser.add_argument("--max-questions", type=int, default=0,
                        help="Documentation sets: the first N questions (by id) of each half (0: all).")
    parser.add_argument("--distractors", type=int, default=300, help="SciFact: other corpus documents indexed.")
    parser.add_argument("--index-root", type=Path, default=None, help="Keep (and reuse) the indexes here.")
    global ARGS
    ARGS = parser.parse_args()
    margins = sorted({0.0, *(float(m) for m in ARGS.margins.split(","))})
    labels = {entry["query_id"]: entry["answers"] for entry in json.loads(LABELS.read_text())["questions"]}
    report: dict[str, Any] = {"benchmark": "coverage", "margins": margins, "cpus": os.cpu_count(),
                              "load_average_before": [round(x, 2) for x in os.getloadavg()], "sets": {}}
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="ragstream-coverage-") as scratch:
        root = ARGS.index_root or Path(scratch)
        for name in [s for s in ARGS.sets.split(",") if s]:
            questions, relevant, half, documents = halves(name, ARGS.scifact_claims)
            data_dir = root / name
            with Ragstream(load_config(data_dir=data_dir)) as rs:
                if len(rs.documents()) != len(documents):
                    rs.ingest_documents(documents)
                print(json.dumps({"set": name, "indexed": len(documents), "questions": len(questions)}),
                      file=sys.stderr, flush=True)
                per_question = measure(rs, questions, relevant, labels, margins)
            report["sets"][name] = {part: summarise(per_question, ids, margins) for part, ids in half.items()}
            print(json.dumps({name: report["sets"][name]}), file=sys.stderr, flush=True)
    chosen = choose({name: sets["tune"] for name, sets in report["sets"].items()}, margins)
    report["choice"] = {"margin": chosen, "report": {name: {"0.0": sets["report"][str(0.0)],
                                                             str(chosen): sets["report"][str(chosen)]}
                                                      for name, sets in report["sets"].items()}}
    report["seconds"] = round(time.perf_counter() - started, 1)
    report["load_average_after"] = [round(x, 2) for x in os.getloadavg()]
    print(json.dumps(report, indent=2))


ARGS: argparse.Namespace


if __name__ == "__main__":
    main()
