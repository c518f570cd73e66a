"""The learned ranker against hybrid and the blend on the report halves, through the real answer path.

Usage:
    flock /tmp/ragstream-heavy.lock python bench/ranker_report.py --set httpx-docs --set fastapi-docs --set scifact \\
        --index-root /tmp/ranker-idx [--model FILE]

Per set (named as in bench/train_ranker.py; its report half: ``qrels/test.tsv``, or odd positions of the sorted
train ids) ``ragstream eval``'s own scoring runs on the same index: hybrid search, the answer path's ranking
with the blend (``reranker.ranking = "blend"``) and with the learned ranker (``"learned"``, the shipped model or
``--model``): right page first (hit@1), MRR and NDCG@10 per page, and the ReRanker stage's p50/p95 ms for both
(each after one warm-up question). ``default_ok`` says whether the learned ranker may be the default: on every set
its hit@1 and NDCG@10 are at least the blend's, one of them higher, and the stage's p50 and p95 at most +20%.
Prints one JSON object with the load average before and after every set.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from ranker_data import REPORT, open_index, question_set

from ragstream.evaluation.beir import PIPELINE, RANKING_STAGE, BeirDataset, evaluate_retrieval
from ragstream.retrieval.learned_ranker import SHIPPED_MODEL

SLOWER_AT_MOST = 1.2
"""The learned ranker may make the ReRanker stage at most 20% slower (issue 42)."""
MEASURES = {"hit@1": "hit_rate@1", "mrr": "mrr", "ndcg@10": "ndcg@10"}


def measured(metrics: dict[str, float]) -> dict[str, float]:
    return {name: metrics[key] for name, key in MEASURES.items()}


def run_one(index_root: Path, name: str, half: BeirDataset, modes: tuple[str, ...], reranker: dict[str, Any]) -> Any:
    qs = question_set(name)
    with open_index(index_root, qs, reranker=reranker) as rs:
        rs.run_pipeline(next(iter(half.queries.values())), until=RANKING_STAGE)  # warm-up: models loaded
        return evaluate_retrieval(rs, half, modes=modes)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--set", action="append", required=True, dest="sets")
    parser.add_argument("--index-root", type=Path, required=True)
    parser.add_argument("--model", type=Path, default=SHIPPED_MODEL)
    args = parser.parse_args()
    report: dict[str, Any] = {"benchmark": "ranker_report", "model": str(args.model), "half": REPORT, "sets": {}}
    loads = [list(os.getloadavg())]
    default_ok = True
    for name in args.sets:
        half = question_set(name).dataset(REPORT)
        blend = run_one(args.index_root, name, half, ("hybrid", PIPELINE), {"ranking": "blend"})
        learned = run_one(args.index_root, name, half, (PIPELINE,),
                          {"ranking": "learned", "ranker_model": str(args.model.resolve())})
        loads.append(list(os.getloadavg()))
        times = {"blend": blend.stage_latency_ms[RANKING_STAGE], "learned": learned.stage_latency_ms[RANKING_STAGE]}
        ratio = {p: round(times["learned"][p] / times["blend"][p], 3) for p in ("p50", "p95")}
        entry = {"questions": len(half.queries), "hybrid": measured(blend.metrics["hybrid"]),
                 "blend": measured(blend.metrics[PIPELINE]), "learned": measured(learned.metrics[PIPELINE]),
                 "reranker_stage_ms": {method: {p: t[p] for p in ("p50", "p95")} for method, t in times.items()},
                 "learned_over_blend_time": ratio}
        better = [entry["learned"][m] - entry["blend"][m] for m in ("hit@1", "ndcg@10")]
        entry["learned_minus_blend"] = {m: round(d, 4) for m, d in zip(("hit@1", "ndcg@10"), better, strict=True)}
        default_ok &= min(better) >= 0 and max(better) > 0 and max(ratio.values()) <= SLOWER_AT_MOST
        report["sets"][name] = entry
    report["default_ok"] = default_ok
    report["load_average"] = [[round(x, 2) for x in load] for load in loads]
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
