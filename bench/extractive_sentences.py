"""Does the extractive answer quote the sentence that answers? Two settings compared in one run.

Usage: python bench/extractive_sentences.py [--labels bench/datasets/extractive_labels.json ...]
                                            [--compare prose|scorer] [--datasets-dir bench/datasets]
                                            [--split all] [--all-questions]

``--compare prose`` (the default): the prose check off vs on; ``--compare scorer``: the sentences closest to
the question (cosine, off) vs the learned sentence scorer (on). ``--split test`` asks only the report half.

For each documentation dataset named in the labels file (BEIR form: corpus, queries, qrels), indexes
its whole corpus with the configured embedder (the packaged model by default), then asks every
labelled question through ``Ragstream.ask`` twice over the same index, extractive (no LLM): once with
``answer.prose.enabled = false`` (every sentence long enough may be quoted, as before the check) and
once with it on. Prints one JSON object:

* ``answered_share``: labelled questions whose answer quotes one of the labelled answering sentences
  (matched without case, punctuation or spacing), off and on;
* ``non_prose_quote_share``: quoted lines the prose check turns down (headings, link lists,
  fragments), off and on, over every question of the dataset with ``--all-questions`` (else the
  labelled ones);
* ``changed``: per question whose outcome differs, the quoted lines off and on.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from ragstream import Ragstream, load_config
from ragstream.answer.prose_check import is_prose
from ragstream.config.prose import ProseConfig
from ragstream.documents.prose import readable_units
from ragstream.evaluation.beir import load_beir

HERE = Path(__file__).resolve().parent
INDEXED = ".indexed"
"""The file in an index folder that says its set is fully indexed (bench/sentence_data.py writes it too)."""
_QUOTE_LINE = re.compile(r"^- (.*) \[\d+\]$")
_NOT_WORD = re.compile(r"[^0-9a-z]+")


def normal(text: str) -> str:
    """``text`` compared without case, punctuation, markup or spacing."""
    return " ".join(_NOT_WORD.sub(" ", text.casefold()).split())


def quoted_lines(answer: str) -> list[str]:
    """The quotes of an extractive answer (its ``- sentence [n]`` lines)."""
    return [match.group(1) for line in answer.splitlines() if (match := _QUOTE_LINE.match(line))]


def non_prose(line: str, config: ProseConfig) -> bool:
    """True when the prose check turns the quoted ``line`` down (read as a paragraph of its own)."""
    units = readable_units(line)
    return not units or not all(is_prose(s, unit, config) for unit in units for s in unit.sentences)


COMPARISONS: dict[str, dict[str, dict[str, Any]]] = {
    "prose": {"off": {"prose": {"enabled": False}}, "on": {"prose": {"enabled": True}}},
    "scorer": {"off": {"extractive_scorer": "cosine"}, "on": {"extractive_scorer": "learned"}},
}
"""``--compare``: the ``answer`` settings of the two runs ("off" is the baseline)."""


def ask_all(data_dir: Path, questions: dict[str, str], answer: dict[str, Any]) -> dict[str, Any]:
    """Every question's answer text, and the extractive step's milliseconds, under the ``answer`` settings."""
    config = load_config(data_dir=data_dir, answer=answer)
    out: dict[str, Any] = {}
    with Ragstream(config) as rs:
        for qid, text in questions.items():
            answer_ = rs.ask(text)
            out[qid] = {"answer": answer_.answer,
                        "ms": answer_.metadata.get("latencies_ms", {}).get("generation", 0.0)}
    return out


def percentile(values: list[float], q: float) -> float:
    """The ``q`` quantile of ``values`` (0 when empty)."""
    ordered = sorted(values)
    return round(ordered[min(len(ordered) - 1, int(q * len(ordered)))], 1) if ordered else 0.0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--labels", type=Path, action="append",
                        help="A labels file (repeatable); default bench/datasets/extractive_labels.json.")
    parser.add_argument("--compare", choices=sorted(COMPARISONS), default="prose",
                        help="prose: the prose check off vs on; scorer: sentences by cosine (off) vs the learned "
                        "sentence scorer (on).")
    parser.add_argument("--datasets-dir", type=Path, default=HERE / "datasets")
    parser.add_argument("--split", default="all")
    parser.add_argument("--index-root", type=Path,
                        help="Keep each set's index in INDEX_ROOT/SET and reuse it (default: a new one per run).")
    parser.add_argument("--all-questions", action="store_true",
                        help="Count non-prose quotes over every question of each dataset, not only the labelled.")
    args = parser.parse_args()
    files = args.labels or [HERE / "datasets" / "extractive_labels.json"]
    labels = [entry for path in files for entry in json.loads(path.read_text(encoding="utf-8"))["questions"]]
    by_dataset: dict[str, dict[str, list[str]]] = {}
    for entry in labels:
        by_dataset.setdefault(entry["dataset"], {})[entry["query_id"]] = entry["answers"]
    checker = ProseConfig()
    report: dict[str, Any] = {"benchmark": "extractive_sentences", "labels": [str(f) for f in files],
                              "compare": args.compare, "split": args.split, "datasets": {}}
    totals = {"questions": 0, "off": 0, "on": 0}
    started = time.perf_counter()
    for name, wanted in by_dataset.items():
        dataset = load_beir(args.datasets_dir / name, args.split)
        wanted = {q: a for q, a in wanted.items() if q in dataset.queries}
        asked = dict(dataset.queries) if args.all_questions else {q: dataset.queries[q] for q in wanted}
        with tempfile.TemporaryDirectory(prefix="ragstream-extractive-") as scratch:
            data_dir = args.index_root / name if args.index_root else Path(scratch)
            if not (data_dir / INDEXED).exists():
                with Ragstream(load_config(data_dir=data_dir)) as rs:
                    rs.ingest_documents(load_beir(args.datasets_dir / name, "all").documents(rs.config))
                (data_dir / INDEXED).write_text("ok", encoding="utf-8")
            print(f"{name}: indexed {len(wanted)} labelled questions' corpus", file=sys.stderr)
            runs = {mode: ask_all(data_dir, asked, COMPARISONS[args.compare][mode]) for mode in ("off", "on")}
        summary: dict[str, Any] = {"questions": len(wanted), "changed": {}}
        for mode in ("off", "on"):
            lines = [line for qid in asked for line in quoted_lines(runs[mode][qid]["answer"])]
            summary[f"non_prose_quote_share_{mode}"] = round(
                sum(non_prose(line, checker) for line in lines) / max(1, len(lines)), 3)
            summary[f"quotes_{mode}"] = len(lines)
            times = [runs[mode][qid]["ms"] for qid in asked]
            summary[f"extractive_ms_p50_p95_{mode}"] = [percentile(times, 0.5), percentile(times, 0.95)]
        for qid, answers in wanted.items():
            keys = [normal(a) for a in answers]
            hit = {mode: any(k in normal(runs[mode][qid]["answer"]) for k in keys) for mode in ("off", "on")}
            totals["off"] += hit["off"]
            totals["on"] += hit["on"]
            if hit["off"] != hit["on"]:
                summary["changed"][qid] = {mode: {"answered": hit[mode], "quotes": quoted_lines(runs[mode][qid]["answer"])}
                                           for mode in ("off", "on")}
        totals["questions"] += len(wanted)
        for mode in ("off", "on"):
            summary[f"answered_share_{mode}"] = round(
                sum(any(normal(k) in normal(runs[mode][q]["answer"]) for k in a) for q, a in wanted.items())
                / len(wanted), 3)
        report["datasets"][name] = summary
        print(json.dumps({name: {k: v for k, v in summary.items() if k != "changed"}}), file=sys.stderr)
    n = max(1, totals["questions"])
    report.update({
        "questions": totals["questions"],
        "answered_share": {"off": round(totals["off"] / n, 3), "on": round(totals["on"] / n, 3)},
        "seconds": round(time.perf_counter() - started, 1),
        "load_average": [round(x, 2) for x in os.getloadavg()],
    })
    json.dump(report, sys.stdout, indent=2)
    print()


if __name__ == "__main__":
    main()
