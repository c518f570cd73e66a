"""Fit the calibrated confidence (the probability that an answer cites a right page) on the sets' tune halves.

Usage:
    flock /tmp/ragstream-heavy.lock python bench/train_confidence.py --set httpx-docs --set fastapi-docs \\
        --set flask-docs --set starlette-docs --set pystdlib-ref --set pdf-manuals --set scifact \\
        --index-root /tmp/confidence-idx --cache /tmp/confidence-cache [--max-questions 200] [--out FILE]

Each set (``bench/ranker_data.py``: a folder of bench/datasets, ``scifact``, or a BEIR path) is indexed once under
``--index-root``. Every question of both halves (at most ``--max-questions`` per half, first by sorted id) is
asked through ``Ragstream.ask`` (extractive, the defaults, confidence by rules), and its answer's signals
(``Confidence.signals``), rule level and label are cached in ``--cache`` (one file per set and half), so fitting
again takes a second. The label: the answer cites at least one page judged relevant (the qrels' corpus ids; a
PDF's pages as ``FILE#pN``). A no-results answer cites nothing: label 0, probability 0 at run time, not fitted.

Fitting, on the tune halves only, each set weighing the same: a logistic regression over ``--features``
(standardised), then an isotonic map of its output (pool-adjacent violators; each block's rate smoothed by one
success and one failure), then the thresholds: High from the lowest probability at which every tune half's
answers rated High are right at least ``--high-target`` of the time, Low below the highest probability under
which every tune half's answers are right at most ``--low-target`` of the time. Writes the JSON model (default:
the package's ``answer/trained/confidence.json``) and prints one JSON report: the thresholds, and per set and half
the reliability table (probability bins against the observed rate) and the right-rate and count per level, for
the calibrated confidence and for the rules. ``--cv 4`` cross-validates on the tune halves instead (how the
``--high-target`` margin was chosen).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import itertools

from ranker_data import REPORT, TUNE, QuestionSet, open_index, question_set

from ragstream import Ragstream
from ragstream.answer.calibrated_confidence import FORMAT, SHIPPED_MODEL, calibrated_confidence, read_model
from ragstream.answer.confidence_signals import SIGNALS
from ragstream.evaluation.beir import chunk_corpus_id

DEFAULT_FEATURES = ("ce_top", "ce_margin", "blend_top", "blend_margin", "top_share", "retrievers_agree",
                    "rerank_kept_top", "top_relevance", "cited_best", "cites_top")
TARGETS = (0.9, 0.5)
"""The issue's targets on every report half: High right at least 90% of the time, Low at most half the time."""
BINS = (0.0, 0.5, 0.7, 0.8, 0.9, 0.95, 1.0001)
"""Edges of the reliability table's probability bins."""
LEVELS = ("High", "Medium", "Low")
REGULARISATION = 1.0
"""The logistic regression's L2 penalty on its standardised coefficients (not the intercept)."""
NEWTON_STEPS = 50


def collect(rs: Ragstream, qs: QuestionSet, half: str, limit: int | None) -> list[dict[str, Any]]:
    """Ask every question of ``qs``'s ``half``: its signals, rule level, mode and label."""
    dataset = qs.dataset(half)
    paged = dataset.files_dir is not None
    pages: dict[str, dict[str, str]] = {}
    rows = []
    for qid in sorted(dataset.queries)[:limit]:
        answer = rs.ask(dataset.queries[qid])
        relevant = {doc for doc, grade in dataset.qrels[qid].items() if grade > 0}
        cited = set()
        for citation in answer.citations:
            if citation.matched and citation.document_id and citation.chunk_id:
                if citation.document_id not in pages:
                    pages[citation.document_id] = {c.chunk_id: chunk_corpus_id(c.metadata, paged=paged)
                                                   for c in rs.document_chunks(citation.document_id)}
                cited.add(pages[citation.document_id].get(citation.chunk_id, ""))
        rows.append({"qid": qid, "mode": answer.metadata["mode"], "rules": answer.confidence.level,
                     "signals": answer.confidence.signals, "cited": sorted(cited),
                     "right": int(bool(cited & relevant))})
    return rows


def cached(cache: Path, index_root: Path, qs: QuestionSet, half: str, limit: int | None) -> list[dict[str, Any]]:
    """The cached rows of ``qs``'s ``half`` (collected on first use)."""
    path = cache / f"{qs.name}.{half}.json"
    if path.is_file():
        loaded: list[dict[str, Any]] = json.loads(path.read_text(encoding="utf-8"))
        return loaded[:limit]
    with open_index(index_root, qs, answer={"confidence": {"method": "rules"}}) as rs:
        rows = collect(rs, qs, half, limit)
    cache.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(rows), encoding="utf-8")
    return rows


def pav(scores: Sequence[float], labels: Sequence[float], weights: Sequence[float]) -> tuple[list[float], list[float]]:
    """Isotonic regression by pool-adjacent violators: knots (x, y) of the non-decreasing fit of ``labels`` on
    ``scores``; each block's weighted rate is smoothed by one success and one failure (in questions), then kept
    monotone."""
    order = np.argsort(scores, kind="stable")
    blocks: list[list[float]] = []  # [x_min, x_max, weight, weighted positives, questions]
    for i in order:
        blocks.append([scores[i], scores[i], weights[i], weights[i] * labels[i], 1.0])
        while len(blocks) > 1 and blocks[-2][3] / blocks[-2][2] >= blocks[-1][3] / blocks[-1][2]:
            last = blocks.pop()
            blocks[-1] = [blocks[-1][0], last[1], blocks[-1][2] + last[2], blocks[-1][3] + last[3],
                          blocks[-1][4] + last[4]]
    xs: list[float] = []
    ys: list[float] = []
    level = 0.0
    for x_min, x_max, weight, positive, count in blocks:
        level = max(level, (positive / weight * count + 1.0) / (count + 2.0))
        for x in (x_min, x_max) if x_max > x_min else (x_min,):
            xs.append(float(x))
            ys.append(round(level, 4))
    return xs, ys


def logistic(x: np.ndarray, y: np.ndarray, w: np.ndarray) -> tuple[np.ndarray, float]:
    """Weighted L2-penalised logistic regression by Newton's method: coefficients and intercept."""
    design = np.hstack([x, np.ones((len(x), 1))])
    penalty = np.diag([REGULARISATION] * x.shape[1] + [0.0])
    beta = np.zeros(design.shape[1])
    for _ in range(NEWTON_STEPS):
        p = 1.0 / (1.0 + np.exp(-design @ beta))
        gradient = design.T @ (w * (p - y)) + penalty @ beta
        hessian = design.T @ (design * (w * p * (1 - p))[:, None]) + penalty + 1e-9 * np.eye(len(beta))
        step = np.linalg.solve(hessian, gradient)
        beta -= step
        if np.abs(step).max() < 1e-8:
            break
    return beta[:-1], float(beta[-1])


def fit(rows: list[dict[str, Any]], features: Sequence[str]) -> dict[str, Any]:
    """The model (logistic regression + isotonic map) fitted on ``rows`` (each with ``set`` and ``weight``)."""
    matrix = np.array([[row["signals"][name] for name in features] for row in rows], dtype=float)
    labels = np.array([row["right"] for row in rows], dtype=float)
    weights = np.array([row["weight"] for row in rows], dtype=float)
    mean, scale = matrix.mean(axis=0), matrix.std(axis=0)
    scale[scale == 0] = 1.0
    coef, intercept = logistic((matrix - mean) / scale, labels, weights)
    z = (matrix - mean) / scale @ coef + intercept
    xs, ys = pav(list(1.0 / (1.0 + np.exp(-z))), list(labels), list(weights))
    return {"format": FORMAT, "features": list(features), "mean": [round(float(v), 6) for v in mean],
            "scale": [round(float(v), 6) for v in scale], "coef": [round(float(v), 6) for v in coef],
            "intercept": round(float(intercept), 6), "calibration": {"x": xs, "y": ys},
            "thresholds": {"high": 1.0, "medium": 0.0}}  # chosen once the probabilities are known


def rate(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Count and right-rate of ``rows``."""
    return {"n": len(rows), "right": round(sum(r["right"] for r in rows) / len(rows), 3) if rows else None}


def probability(model: Any, row: dict[str, Any]) -> float:
    """A row's probability as the run time computes it (a no-results answer: 0)."""
    return float(model.probability(row["signals"])) if row["mode"] != "no_results" else 0.0


def choose_thresholds(by_set: dict[str, list[dict[str, Any]]], high_target: float, low_target: float) -> tuple[float, float]:
    """High: the lowest probability from which on (at it and at every higher one) every set's rows rated High are
    right >= ``high_target``; Low: below the highest probability under which every set's rows are right <=
    ``low_target`` (candidates: the rows' own probabilities)."""
    values = sorted({row["p"] for rows in by_set.values() for row in rows})

    def holds(test: Any, rows: list[dict[str, Any]], target: float, above: bool) -> bool:
        share = rate([r for r in rows if test(r["p"])])["right"]
        return share is None or (share >= target if above else share <= target)

    high = 1.0
    for t in reversed(values):
        if not all(holds(lambda p, t=t: p >= t, rows, high_target, True) for rows in by_set.values()):
            break
        high = t
    low = max((t for t in values if t <= high and all(holds(lambda p, t=t: p < t, rows, low_target, False)
                                                      for rows in by_set.values())), default=0.0)
    return high, low


def report(rows: list[dict[str, Any]], thresholds: tuple[float, float], high_target: float,
           low_target: float) -> dict[str, Any]:
    """Reliability bins, per-level figures (calibrated and rules) of one set's half, and whether the calibrated
    levels meet the targets (High right >= ``high_target``, Low right <= ``low_target``; an empty level meets it)."""
    for row in rows:
        row["level"] = calibrated_confidence(row["p"], thresholds, {}).level
    bins = {}
    for low, high in itertools.pairwise(BINS):
        inside = [r for r in rows if low <= r["p"] < high]
        if inside:
            bins[f"{low:.2f}-{min(high, 1.0):.2f}"] = {**rate(inside),
                                                       "mean_p": round(sum(r["p"] for r in inside) / len(inside), 3)}
    brier = sum((r["p"] - r["right"]) ** 2 for r in rows) / len(rows) if rows else None
    calibrated = {level: rate([r for r in rows if r["level"] == level]) for level in LEVELS}
    rules = {level: rate([r for r in rows if r["rules"] == level]) for level in LEVELS}
    return {"questions": len(rows), "right": rate(rows)["right"], "brier": round(brier, 4) if brier is not None else None,
            "bins": bins, "calibrated": calibrated, "rules": rules,
            "targets_met": {name: (levels["High"]["right"] is None or levels["High"]["right"] >= high_target)
                            and (levels["Low"]["right"] is None or levels["Low"]["right"] <= low_target)
                            for name, levels in (("calibrated", calibrated), ("rules", rules))}}


def weighted(by_set: dict[str, list[dict[str, Any]]]) -> list[dict[str, Any]]:
    """The answered rows of every set, each set weighing the same (weights summing to the rows' count)."""
    answered = {name: [row for row in rows if row["mode"] != "no_results"] for name, rows in by_set.items()}
    total = sum(len(rows) for rows in answered.values())
    return [{**row, "weight": total / (len(answered) * len(rows))} for rows in answered.values() for row in rows]


def fitted(by_set: dict[str, list[dict[str, Any]]], features: Sequence[str], out: Path) -> Any:
    """Fit on ``by_set``, write the model to ``out`` and read it back as the run time does; every row gets its ``p``."""
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(fit(weighted(by_set), features), indent=1) + "\n", encoding="utf-8")
    model = read_model(out)
    for rows in by_set.values():
        for row in rows:
            row["p"] = probability(model, row)
    return model


def cross_validate(tune: dict[str, list[dict[str, Any]]], features: Sequence[str], folds: int, high_target: float,
                   low_target: float, scratch: Path) -> dict[str, Any]:
    """Per set, the levels of its tune questions when the model and thresholds come from the other folds (every
    ``folds``-th question by sorted id held out in turn): High and Low counts and right-rates."""
    levels: dict[str, list[tuple[str, int]]] = {name: [] for name in tune}
    for fold in range(folds):
        train = {name: [r for i, r in enumerate(rows) if i % folds != fold] for name, rows in tune.items()}
        model = fitted(train, features, scratch)
        thresholds = choose_thresholds(train, high_target, low_target)
        for name, rows in tune.items():
            for row in rows[fold::folds]:
                levels[name].append((calibrated_confidence(probability(model, row), thresholds, {}).level, row["right"]))
    return {name: {level: rate([{"right": y} for lv, y in found if lv == level]) for level in LEVELS}
            for name, found in levels.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--set", action="append", required=True, dest="sets")
    parser.add_argument("--index-root", type=Path, required=True)
    parser.add_argument("--cache", type=Path, required=True)
    parser.add_argument("--max-questions", type=int, default=None, help="Per half, first by sorted id.")
    parser.add_argument("--features", default=",".join(DEFAULT_FEATURES), help=f"Of {','.join(SIGNALS)}.")
    parser.add_argument("--high-target", type=float, default=0.92,
                        help="High's right-rate the thresholds must reach on every tune half (a margin over the 0.9 "
                             "target: 4-fold cross-validation on the tune halves, docs/answers.md).")
    parser.add_argument("--low-target", type=float, default=0.5)
    parser.add_argument("--out", type=Path, default=SHIPPED_MODEL)
    parser.add_argument("--cv", type=int, default=0, help="Cross-validate on the tune halves in this many folds "
                        "(per set: High and Low counts and right-rates); writes no model.")
    args = parser.parse_args()
    features = [name for name in args.features.split(",") if name]
    if unknown := [name for name in features if name not in SIGNALS]:
        sys.exit(f"unknown signals {unknown}; known: {list(SIGNALS)}")
    sets = [question_set(name) for name in args.sets]
    halves = {half: {qs.name: cached(args.cache, args.index_root, qs, half, args.max_questions) for qs in sets}
              for half in ((TUNE,) if args.cv else (TUNE, REPORT))}
    if args.cv:
        scratch = args.cache / "cv-model.json"
        print(json.dumps({"benchmark": "train_confidence --cv", "folds": args.cv, "features": features,
                          "high_target": args.high_target, "low_target": args.low_target,
                          "sets": cross_validate(halves[TUNE], features, args.cv, args.high_target, args.low_target,
                                                 scratch)}, indent=1))
        return
    loaded = fitted(halves[TUNE], features, args.out)
    for rows in halves[REPORT].values():
        for row in rows:
            row["p"] = probability(loaded, row)
    model = json.loads(args.out.read_text(encoding="utf-8"))
    high, low = choose_thresholds(halves[TUNE], args.high_target, args.low_target)
    model["thresholds"] = {"high": high, "medium": low}
    model["chosen"] = {"high_target": args.high_target, "low_target": args.low_target}
    model["trained_on"] = {name: len(rows) for name, rows in halves[TUNE].items()}
    model["commit"] = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                                     check=False).stdout.strip()
    args.out.write_text(json.dumps(model, indent=1) + "\n", encoding="utf-8")
    out = {"benchmark": "train_confidence", "model": str(args.out), "features": features,
           "thresholds": model["thresholds"], "chosen": model["chosen"],
           "load_average": [round(x, 2) for x in os.getloadavg()],
           "halves": {half: {name: report(rows, (high, low), *TARGETS) for name, rows in by_set.items()}
                      for half, by_set in halves.items()}}
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
