"""Hybrid fusion settings on every question set: tuned on the dev halves, reported on the test halves.

Usage:
    python bench/fusion_check.py --index-root /work/idx [--dataset DIR[:split] ...]

Each dataset's index is built once under ``--index-root`` (retrieval settings do not change stored
chunks), then every fusion setting below searches it in hybrid mode. Scored per document (a document
ranked by its best chunk) with ranx: NDCG@10, hit@1, MRR. Halves: qrels/dev.tsv and qrels/test.tsv
when the dataset has them, else even/odd question positions. Prints one JSON object with the load average.
"""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path
from typing import Any

from ranx import Qrels, Run, evaluate

from ragstream import Ragstream, load_config
from ragstream.evaluation.beir import DOC_ID_KEY, load_beir

BENCH = Path(__file__).resolve().parent
DEFAULT_DATASETS = [f"{BENCH.parents[1] / 'shared' / 'data' / 'scifact'}:train",
                    f"{BENCH / 'datasets' / 'httpx-docs'}:all", f"{BENCH / 'datasets' / 'fastapi-docs'}:all"]
SETTINGS: dict[str, dict[str, Any]] = {
    "alpha0.5_neighbours (default)": {"fusion": "alpha", "fusion_level": "neighbours", "alpha": 0.5},
    "alpha0.5_chunk": {"fusion": "alpha", "fusion_level": "chunk", "alpha": 0.5},
    "alpha0.5_document": {"fusion": "alpha", "fusion_level": "document", "alpha": 0.5},
    "alpha0.3_neighbours": {"fusion": "alpha", "fusion_level": "neighbours", "alpha": 0.3},
    "alpha0.4_neighbours": {"fusion": "alpha", "fusion_level": "neighbours", "alpha": 0.4},
    "alpha0.6_neighbours": {"fusion": "alpha", "fusion_level": "neighbours", "alpha": 0.6},
    "alpha0.7_neighbours": {"fusion": "alpha", "fusion_level": "neighbours", "alpha": 0.7},
    "rrf_chunk": {"fusion": "rrf", "fusion_level": "chunk"},
    "rrf_neighbours": {"fusion": "rrf", "fusion_level": "neighbours"},
    "dbsf_neighbours": {"fusion": "alpha", "fusion_level": "neighbours", "alpha": 0.5, "normalisation": "dbsf"},
}
METRICS = ["ndcg@10", "hit_rate@1", "mrr@10"]


def halves(directory: Path, ids: list[str]) -> dict[str, list[str]]:
    found = {}
    for half in ("dev", "test"):
        path = directory / "qrels" / f"{half}.tsv"
        if path.is_file():
            found[half] = sorted({line.split("\t")[0] for line in path.read_text().splitlines()[1:] if line.strip()} & set(ids))
    return found if len(found) == 2 else {"dev": sorted(ids)[0::2], "test": sorted(ids)[1::2]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dataset", action="append")
    parser.add_argument("--index-root", type=Path, required=True)
    parser.add_argument("--depth", type=int, default=100)
    args = parser.parse_args()
    report: dict[str, Any] = {"benchmark": "fusion_check", "load_average_before": [round(x, 2) for x in os.getloadavg()],
                              "datasets": {}}
    for spec in args.dataset or DEFAULT_DATASETS:
        directory, _, split = spec.rpartition(":")
        dataset = load_beir(Path(directory), split)
        split_ids = halves(Path(directory), list(dataset.queries))
        results: dict[str, Any] = {}
        for name, retrieval in SETTINGS.items():
            with Ragstream(load_config(data_dir=args.index_root / dataset.name, retrieval=retrieval)) as rs:
                rs.ingest_documents(dataset.documents())
                run: dict[str, dict[str, float]] = {}
                for qid, text in dataset.queries.items():
                    hits = rs.search(text, mode="hybrid", top_k=args.depth).hits
                    scores: dict[str, float] = {}
                    for hit in hits:
                        doc = str(hit.chunk.metadata.extra.get(DOC_ID_KEY, hit.chunk.metadata.document_id))
                        scores.setdefault(doc, float(len(hits) - len(scores)))
                    run[qid] = scores or {"__none__": 0.0}
            results[name] = {}
            for half, ids in split_ids.items():
                scored = evaluate(Qrels({q: dataset.qrels[q] for q in ids}), Run({q: run[q] for q in ids}), METRICS)
                results[name][half] = {metric: round(float(value), 4) for metric, value in scored.items()}
        report["datasets"][dataset.name] = results
    report["load_average_after"] = [round(x, 2) for x in os.getloadavg()]
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
