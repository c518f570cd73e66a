"""Collect the extractive answer's candidate sentences, their features and labels, per question and split.

Usage: flock /tmp/ragstream-heavy.lock python bench/sentence_data.py --out /tmp/sentences.jsonl
           [--set flask-docs --set starlette-docs ...] [--index-root DIR]

For every labelled question of each set (``answers.json`` in the set's folder, or the shared
``extractive_labels.json``), the answer path runs as ``ragstream ask`` runs it (packaged models, no LLM) up to
the extractive answer; every sentence the extractive answer could quote from its attachments becomes one row:
the features of :mod:`ragstream.answer.sentence_features` (computed by the same code the answer path uses) and
``label`` 1 when it holds one of the question's labelled answering sentences (compared without case,
punctuation or spacing, as bench/extractive_sentences.py compares them). ``split`` is ``tune`` for questions of
``qrels/dev.tsv`` and ``report`` for ``qrels/test.tsv``. One JSON line per question; bench/train_sentences.py
trains on the tune rows and reports on the report rows.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

from ragstream import Ragstream, load_config
from ragstream.answer.extractive import candidate_quotes
from ragstream.answer.sentence_features import sentence_features
from ragstream.evaluation.beir import DOC_ID_KEY, load_beir

HERE = Path(__file__).resolve().parent
DATASETS = HERE / "datasets"
DEFAULT_SETS = ("flask-docs", "starlette-docs", "pystdlib-ref", "pdf-manuals", "httpx-docs", "fastapi-docs")
SPLITS = {"dev": "tune", "test": "report"}
sys.path.insert(0, str(HERE))
from extractive_sentences import INDEXED, normal  # noqa: E402


def labels_of(name: str) -> dict[str, list[str]]:
    """The set's labelled answering sentences per question id."""
    own = DATASETS / name / "answers.json"
    source = own if own.exists() else DATASETS / "extractive_labels.json"
    entries = json.loads(source.read_text(encoding="utf-8"))["questions"]
    return {e["query_id"]: e["answers"] for e in entries if e["dataset"] == name}


def index(name: str, root: Path) -> Path:
    """The set's index under ``root`` (built once with the default configuration)."""
    data_dir = root / name
    marker = data_dir / INDEXED
    if not marker.exists():
        dataset = load_beir(DATASETS / name, "all")
        with Ragstream(load_config(data_dir=data_dir)) as rs:
            rs.ingest_documents(dataset.documents(rs.config))
        marker.write_text("ok", encoding="utf-8")
    return data_dir


def collect(name: str, data_dir: Path, overrides: dict[str, Any]) -> list[dict[str, Any]]:
    """One row per labelled question: its candidate sentences' features and labels."""
    wanted = labels_of(name)
    split_of = {qid: SPLITS[split] for split in SPLITS for qid in load_beir(DATASETS / name, split).queries}
    questions = load_beir(DATASETS / name, "all").queries
    rows = []
    with Ragstream(load_config(data_dir=data_dir, **overrides)) as rs:
        service = rs.answers()
        config = rs.config.answer
        reranker = rs.reranker()[0]
        embedder = rs.embedder()
        for qid, answers in wanted.items():
            if qid not in questions or qid not in split_of:
                continue
            question = questions[qid]
            turn = service._prepare(question, None, None, None, None)
            chunks = turn.chunks[: config.extractive_max_chunks]
            candidates = candidate_quotes(chunks, config.extractive_min_sentence_chars,
                                          config.extractive_max_example_chars, config.prose)
            features = sentence_features(question, turn.query_vectors, chunks,
                                         [(n, q.sentence, q.example is not None) for n, q in candidates],
                                         embedder, reranker)
            keys = [normal(a) for a in answers]
            labels = [int(any(k and k in normal(q.sentence + " " + (q.example or "")) for k in keys))
                      for _, q in candidates]
            rows.append({"set": name, "query_id": qid, "split": split_of[qid], "features": features,
                         "labels": labels,
                         "attached": [c.metadata.get(DOC_ID_KEY) or c.metadata.get("source") for c in chunks],
                         "sentences": [q.sentence for _, q in candidates]})
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--set", action="append", dest="sets")
    parser.add_argument("--index-root", type=Path, default=Path("/tmp/ragstream-sentence-index"))
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--pipeline", action="append", default=[], metavar="KEY=VALUE",
                        help="A pipeline setting for the questions (not the index), e.g. N3_FINAL_SELECTION_MAX=5.")
    args = parser.parse_args()
    overrides = {"pipeline": {key: json.loads(value) for key, value in (item.split("=", 1) for item in args.pipeline)}}
    started = time.perf_counter()
    with args.out.open("w", encoding="utf-8") as out:
        for name in args.sets or DEFAULT_SETS:
            rows = collect(name, index(name, args.index_root), overrides)
            for row in rows:
                out.write(json.dumps(row) + "\n")
            found = sum(any(r["labels"]) for r in rows)
            print(json.dumps({"set": name, "questions": len(rows), "answer_among_candidates": found}), file=sys.stderr)
    print(json.dumps({"seconds": round(time.perf_counter() - started, 1),
                      "load_average": [round(x, 2) for x in os.getloadavg()]}))


if __name__ == "__main__":
    main()
