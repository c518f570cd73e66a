"""The ReRanker's levers on every question set: tuned on one half of each, reported on the other.

Usage:
    python bench/rerank_levers.py --dataset ../shared/data/scifact:train --dataset bench/datasets/httpx-docs:all \\
        --dataset bench/datasets/fastapi-docs:all --index-root /work/idx --cache /work/idx/rerank_cache.json

Per dataset it builds (or reuses) an index under ``--index-root``, runs the pipeline through Retrieval
for every question, and scores the head of each candidate list with the packaged cross-encoder once
per passage variant (cached in ``--cache``, so the sweep that follows is cheap). The sweep varies the
blend weight, the head size (``reranker.top_n``), the normalisation and the skip margin, and scores
each setting at document level (a document ranked by its best chunk): NDCG@10, hit@1 (a relevant
document first), MRR@10. Halves: the dataset's ``dev``/``test`` qrels when present, else even/odd
question positions. The setting chosen is the one with the best mean dev score over the datasets
(hit@1 for question sets, NDCG@10 for claim sets), reported on the test halves beside hybrid, with the
hit@1 ceiling of any use of the model on each half (:func:`ceiling`). Prints one JSON object.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ragstream import Ragstream, load_config
from ragstream.config import RerankerConfig
from ragstream.evaluation.beir import DOC_ID_KEY, BeirDataset, load_beir
from ragstream.providers.rerankers.onnx_cross_encoder import OnnxCrossEncoderReranker
from ragstream.retrieval.rerank import blend, decisive, passages, relative

VARIANTS: dict[str, dict[str, Any]] = {
    "window_heading_160": {"max_tokens": 160, "passage_window": True, "passage_heading": True},
    "head_heading_160": {"max_tokens": 160, "passage_window": False, "passage_heading": True},
    "window_plain_160": {"max_tokens": 160, "passage_window": True, "passage_heading": False},
    "window_heading_256": {"max_tokens": 256, "passage_window": True, "passage_heading": True},
    "window_heading_96": {"max_tokens": 96, "passage_window": True, "passage_heading": True},
    "head_plain_320": {"max_tokens": 320, "passage_window": False, "passage_heading": False},
    "head_heading_320": {"max_tokens": 320, "passage_window": False, "passage_heading": True},
}
WEIGHTS = [round(0.1 * step, 1) for step in range(11)]
TOP_NS = [5, 8, 10, 12, 16, 20]
NORMALISATIONS = ("min_max", "sigmoid")
MARGINS = [1.0, 0.3]
GATES = [-100.0, -2.0, 0.0, 2.0, 4.0]
"""The cross-encoder re-orders a question's head only when its best logit reaches the gate (-100: always)."""
CUTOFF = 10


def halves(dataset_dir: Path, split: str, query_ids: Sequence[str]) -> dict[str, list[str]]:
    """``dev``/``test`` query ids: from qrels/dev.tsv and qrels/test.tsv when present, else even/odd positions."""
    found = {}
    for half in ("dev", "test"):
        path = dataset_dir / "qrels" / f"{half}.tsv"
        if path.is_file():
            found[half] = sorted({line.split("\t")[0] for line in path.read_text().splitlines()[1:] if line.strip()})
    if len(found) == 2:
        return {half: [q for q in ids if q in set(query_ids)] for half, ids in found.items()}
    ordered = sorted(query_ids)
    return {"dev": ordered[0::2], "test": ordered[1::2]}


def collect(dataset: BeirDataset, index: Path, depth: int, max_queries: int | None) -> dict[str, Any]:
    """Per question: the retrieval view's chunk ids, their documents, fused scores and (query, passages) inputs."""
    config = load_config(data_dir=index, reranker={"backend": "none"})
    rows: dict[str, Any] = {}
    with Ragstream(config) as rs:
        rs.ingest_documents(dataset.documents())
        ids = sorted(dataset.queries)[:max_queries] if max_queries else sorted(dataset.queries)
        for qid in ids:
            sp = rs.run_pipeline(dataset.queries[qid], until="Retrieval")
            view = sp.views_by_stage["retrieval"][:depth]
            chunks = sp.chunks(view)
            rows[qid] = {
                "docs": [str(c.metadata.extra.get(DOC_ID_KEY, c.metadata.document_id)) for c in chunks],
                "fused": sp.scores_by_stage["retrieval"][: len(view)],
                "query": " ".join(dataset.queries[qid].split()),
                "chunks": [c.model_dump(mode="json") for c in chunks],
            }
    return rows


def score_variants(rows: dict[str, Any], head: int, variants: Sequence[str]) -> dict[str, float]:
    """Cross-encoder logits of each question's head, per passage variant (in place); seconds per variant."""
    from ragstream.models import Chunk

    seconds: dict[str, float] = {}
    for name in variants:
        config = RerankerConfig(**VARIANTS[name], top_n=head)
        model = OnnxCrossEncoderReranker(config)
        started = time.perf_counter()
        for row in rows.values():
            if name in row.setdefault("ce", {}):
                continue
            chunks = [Chunk.model_validate(c) for c in row["chunks"][:head]]
            row["ce"][name] = model.score(row["query"], passages(row["query"], chunks, config))
        seconds[name] = round(time.perf_counter() - started, 1)
    return seconds


def ranked_docs(docs: Sequence[str], order: Sequence[int]) -> list[str]:
    seen: list[str] = []
    for index in order:
        if docs[index] not in seen:
            seen.append(docs[index])
    return seen


def metrics(ranking: Sequence[str], relevant: dict[str, int]) -> dict[str, float]:
    """NDCG@10 (graded), hit@1 and MRR@10 of one document ranking."""
    gains = [relevant.get(doc, 0) for doc in ranking[:CUTOFF]]
    dcg = sum((2**g - 1) / math.log2(i + 2) for i, g in enumerate(gains))
    ideal = sorted(relevant.values(), reverse=True)[:CUTOFF]
    idcg = sum((2**g - 1) / math.log2(i + 2) for i, g in enumerate(ideal))
    first = next((i for i, g in enumerate(gains) if g > 0), None)
    return {"ndcg@10": dcg / idcg if idcg else 0.0, "hit@1": float(bool(gains and gains[0] > 0)),
            "mrr@10": 1.0 / (first + 1) if first is not None else 0.0}


def order_for(row: dict[str, Any], setting: dict[str, Any] | None) -> list[int]:
    """The candidate order under a setting (None: the fused order)."""
    count = len(row["docs"])
    if setting is None or decisive(row["fused"], setting["margin"]):
        return list(range(count))
    head = min(count, setting["top_n"])
    logits = row["ce"][setting["variant"]][:head]
    if max(logits) < setting.get("gate", -100.0):
        return list(range(count))
    if setting["norm"] == "sigmoid":
        cross = [1.0 / (1.0 + math.exp(-x)) for x in logits]
        final = [setting["weight"] * c + (1 - setting["weight"]) * f for c, f in zip(cross, relative(row["fused"]), strict=False)]
    else:
        final = blend(logits, row["fused"], setting["weight"])
    return sorted(range(head), key=lambda i: (-final[i], i)) + list(range(head, count))


def evaluate_setting(rows: dict[str, Any], qrels: dict[str, dict[str, int]], ids: Sequence[str],
                     setting: dict[str, Any] | None) -> dict[str, float]:
    totals = {"ndcg@10": 0.0, "hit@1": 0.0, "mrr@10": 0.0}
    for qid in ids:
        for name, value in metrics(ranked_docs(rows[qid]["docs"], order_for(rows[qid], setting)), qrels[qid]).items():
            totals[name] += value
    return {name: round(value / max(1, len(ids)), 4) for name, value in totals.items()}


def first_pages(row: dict[str, Any], variant: str, head: int) -> tuple[str, str]:
    """A question's first page by hybrid, and by the cross-encoder over hybrid's first ``head`` candidates."""
    count = min(head, len(row["docs"]))
    logits = row["ce"][variant][:count]
    return row["docs"][0], row["docs"][max(range(count), key=lambda i: logits[i])]


def ceiling(rows: dict[str, Any], qrels: dict[str, dict[str, int]], ids: Sequence[str], variant: str,
            head: int) -> dict[str, float]:
    """What any use of this cross-encoder could reach on hit@1: hybrid's first page, the model's first page
    (over ``head`` candidates), a perfect choice between the two ("either"), and a relevant page anywhere in
    hybrid's first 2 / 5 pages (what a perfect reranker of that head would reach)."""
    counts = {"hybrid": 0, "cross_encoder": 0, "either": 0, "hybrid_top2": 0, "hybrid_top5": 0}
    for qid in ids:
        row, relevant = rows[qid], qrels[qid]
        first_hybrid, first_model = (relevant.get(page, 0) > 0 for page in first_pages(row, variant, head))
        pages = ranked_docs(row["docs"], range(len(row["docs"])))
        counts["hybrid"] += first_hybrid
        counts["cross_encoder"] += first_model
        counts["either"] += first_hybrid or first_model
        counts["hybrid_top2"] += any(relevant.get(doc, 0) > 0 for doc in pages[:2])
        counts["hybrid_top5"] += any(relevant.get(doc, 0) > 0 for doc in pages[:5])
    return {name: round(value / max(1, len(ids)), 4) for name, value in counts.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dataset", action="append", required=True, help="DIR[:split] (split default: all, else train)")
    parser.add_argument("--index-root", type=Path, required=True)
    parser.add_argument("--cache", type=Path, required=True)
    parser.add_argument("--head", type=int, default=max(TOP_NS), help="Candidates scored per question and variant.")
    parser.add_argument("--variants", default=",".join(VARIANTS))
    parser.add_argument("--max-queries", type=int, default=None)
    args = parser.parse_args()
    cache: dict[str, Any] = json.loads(args.cache.read_text()) if args.cache.is_file() else {}
    variants = args.variants.split(",")
    loads: list[list[float]] = [list(os.getloadavg())]
    data: dict[str, Any] = {}
    timing: dict[str, Any] = {}
    for spec in args.dataset:
        directory, _, split = spec.partition(":")
        path = Path(directory)
        split = split or ("all" if (path / "qrels" / "all.tsv").is_file() else "train")
        dataset = load_beir(path, split)
        name = dataset.name
        if name not in cache:
            cache[name] = collect(dataset, args.index_root / name, args.head, args.max_queries)
        timing[name] = score_variants(cache[name], args.head, variants)
        args.cache.write_text(json.dumps(cache))
        loads.append(list(os.getloadavg()))
        data[name] = {"rows": cache[name], "qrels": dataset.qrels, "halves": halves(path, split, list(cache[name])),
                      "questions": not name.startswith("scifact")}

    variants = [v for v in variants if all(v in row.get("ce", {}) for d in data.values() for row in d["rows"].values())]
    settings = [{"variant": v, "weight": w, "top_n": n, "norm": norm, "margin": m, "gate": g}
                for v in variants for w in WEIGHTS for n in TOP_NS if n <= args.head for norm in NORMALISATIONS
                for m in MARGINS for g in GATES]
    target = {name: ("hit@1" if d["questions"] else "ndcg@10") for name, d in data.items()}

    def dev_score(setting: dict[str, Any]) -> float:
        return sum(evaluate_setting(d["rows"], d["qrels"], d["halves"]["dev"], setting)[target[n]]
                   - evaluate_setting(d["rows"], d["qrels"], d["halves"]["dev"], None)[target[n]]
                   for n, d in data.items()) / len(data)

    scored = sorted(((dev_score(s), i) for i, s in enumerate(settings)), reverse=True)
    best = settings[scored[0][1]]
    report: dict[str, Any] = {"benchmark": "rerank_levers", "chosen_on_dev": best, "chosen_dev_gain": round(scored[0][0], 4),
                              "top_settings_on_dev": [{**settings[i], "mean_dev_gain": round(g, 4)} for g, i in scored[:15]],
                              "datasets": {}, "scoring_seconds": timing}
    for name, d in data.items():
        entry: dict[str, Any] = {"questions": len(d["rows"]), "target_metric": target[name]}
        for half in ("dev", "test"):
            ids = d["halves"][half]
            entry[half] = {"n": len(ids), "hybrid": evaluate_setting(d["rows"], d["qrels"], ids, None),
                           "reranked": evaluate_setting(d["rows"], d["qrels"], ids, best),
                           "cross_encoder_alone": evaluate_setting(d["rows"], d["qrels"], ids, {**best, "weight": 1.0}),
                           "hit@1_ceiling": ceiling(d["rows"], d["qrels"], ids, best["variant"], args.head)}
        report["datasets"][name] = entry
    by_weight = {}
    for weight in WEIGHTS:
        setting = {**best, "weight": weight}
        by_weight[str(weight)] = {name: {half: evaluate_setting(d["rows"], d["qrels"], d["halves"][half], setting)[target[name]]
                                         for half in ("dev", "test")} for name, d in data.items()}
    report["by_weight_at_chosen"] = by_weight
    report["load_average"] = [[round(x, 2) for x in load] for load in loads]
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    sys.exit(main())
