"""How far any choice among the offline models could lift hit@1: hybrid, the cross-encoder and bge-small.

Usage:
    python bench/rerank_levers.py ... --cache CACHE          # first: the cross-encoder scores, cached
    python bench/rerank_ceiling.py --cache CACHE --index-root DIR \\
        --dataset bench/datasets/httpx-docs --dataset bench/datasets/fastapi-docs

Per question set and half (dev/test), hit@1 of: ragstream's hybrid (MiniLM), the packaged cross-encoder's
first page over hybrid's top ``--head`` (from ``rerank_levers.py``'s cache), the hybrid search of an index
embedded with bge-small-en-v1.5 (built under ``--index-root`` if absent), and the oracles that pick, per
question, whichever of two or all three first pages is right. An oracle is an upper bound on any blend,
gate or learned combination of these rankings' first choices. Prints one JSON object.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from rerank_levers import first_pages, halves

from ragstream import Ragstream, load_config
from ragstream.evaluation.beir import DOC_ID_KEY, BeirDataset, load_beir

SECOND_EMBEDDER = "bge-small-en-v1.5"
VARIANT = "head_heading_160"


def first_page_by_second_embedder(dataset: BeirDataset, index: Path, queries: dict[str, str]) -> dict[str, str]:
    """Per question, the first page of a hybrid search on an index embedded with :data:`SECOND_EMBEDDER`."""
    config = load_config(data_dir=index, embedding={"model": SECOND_EMBEDDER}, reranker={"backend": "none"})
    firsts: dict[str, str] = {}
    with Ragstream(config) as rs:
        rs.ingest_documents(dataset.documents())
        for qid, text in queries.items():
            hits = rs.search(text, top_k=1).hits
            metadata = hits[0].chunk.metadata if hits else None
            firsts[qid] = str(metadata.extra.get(DOC_ID_KEY, metadata.document_id)) if metadata else ""
    return firsts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dataset", action="append", required=True, help="A question set folder (BEIR form).")
    parser.add_argument("--cache", type=Path, required=True, help="rerank_levers.py's cache of cross-encoder scores.")
    parser.add_argument("--index-root", type=Path, required=True, help="Where the bge-small indexes are kept.")
    parser.add_argument("--head", type=int, default=20, help="Candidates the cross-encoder chose from.")
    parser.add_argument("--variant", default=VARIANT, help="The cached passage variant of the cross-encoder.")
    args = parser.parse_args()
    cache: dict[str, Any] = json.loads(args.cache.read_text())
    report: dict[str, Any] = {"benchmark": "rerank_ceiling", "second_embedder": SECOND_EMBEDDER,
                              "variant": args.variant, "datasets": {}, "load_average": [list(os.getloadavg())]}
    for directory in map(Path, args.dataset):
        dataset = load_beir(directory, "all")
        rows = cache[dataset.name]
        firsts = first_page_by_second_embedder(dataset, args.index_root / f"bge-{dataset.name}",
                                               {qid: dataset.queries[qid] for qid in rows})
        entry: dict[str, Any] = {}
        for half, ids in halves(directory, "all", list(rows)).items():
            counts = dict.fromkeys(("hybrid", "cross_encoder", "bge_hybrid", "either_hybrid_or_cross_encoder",
                                    "any_of_three"), 0)
            for qid in ids:
                relevant = dataset.qrels[qid]
                right = [relevant.get(page, 0) > 0
                         for page in (*first_pages(rows[qid], args.variant, args.head), firsts[qid])]
                for name, value in zip(("hybrid", "cross_encoder", "bge_hybrid"), right, strict=True):
                    counts[name] += value
                counts["either_hybrid_or_cross_encoder"] += right[0] or right[1]
                counts["any_of_three"] += any(right)
            entry[half] = {"n": len(ids), **{name: round(value / max(1, len(ids)), 4) for name, value in counts.items()}}
        report["datasets"][dataset.name] = entry
    report["load_average"].append(list(os.getloadavg()))
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    sys.exit(main())
