"""Train the learned ranker (LightGBM lambdarank over page features) on the tune halves of the named sets.

Usage:
    flock /tmp/ragstream-heavy.lock python bench/train_ranker.py --set httpx-docs --set fastapi-docs --set scifact \\
        --index-root /tmp/ranker-idx --cache /tmp/ranker-cache

Each set (``bench/ranker_data.py``: a folder of bench/datasets, ``scifact``, or a BEIR path; a new question set
is added by naming it) is indexed once under ``--index-root``; the pipeline runs through the ReRanker (the blend)
for every question of its tune half, and the stage's candidates are cached in ``--cache`` (so later trainings
take seconds). Rows are pages (:mod:`ragstream.retrieval.ranker_features`, the stage's own code), labelled by
the qrels grade, one group per question. Every ``--holdout``-th tune question of each set (by sorted id) is held
out for early stopping and the figures of the card; each set weighs the same in training (``--balance``).
The model shipped is then trained again on every tune question for the rounds early stopping chose (``--refit``).
Writes the LightGBM text model (default: the package's ``retrieval/models/ranker.txt``) and its JSON card beside it
(features, sets, commit, parameters, held-out figures against hybrid and the blend). Prints the card.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import lightgbm
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from ranker_data import TUNE, QuestionSet, cached_rows, candidates, mean_metrics, open_index, page_of, question_set

from ragstream.config import RerankerConfig
from ragstream.retrieval.learned_ranker import BASE_FEATURE_INDEX, SHIPPED_MODEL, LearnedRanker, card_path
from ragstream.retrieval.ranker_features import FEATURES, page_rows

PARAMS: dict[str, Any] = {
    "objective": "lambdarank", "metric": "ndcg", "eval_at": [1, 10], "learning_rate": 0.05, "num_leaves": 15,
    "min_data_in_leaf": 20, "feature_fraction": 0.8, "lambda_l2": 1.0, "lambdarank_truncation_level": 20,
    "deterministic": True, "force_row_wise": True, "num_threads": 2, "seed": 13, "verbosity": -1,
}
ROUNDS, PATIENCE = 300, 20
BASE_SCALE = 10.0
"""The trees learn a correction of the blend: every page starts from 10 x its blended score (``blend_best``, 0..1).
Chosen by 4-fold cross-validation on the tune halves (docs/ranking.md): plain lambdarank, with no start, and starts
of 2 and 5 ranked httpx's held-out folds lower."""
RERANKER = RerankerConfig()
"""The blend's settings the features' blend columns use: the defaults, as at run time."""


def group_rows(qs: QuestionSet, rows: dict[str, Any], qrels: dict[str, dict[str, int]]) -> list[dict[str, Any]]:
    """Per question: its page feature matrix, the pages' corpus ids and grades."""
    groups = []
    for qid in sorted(rows):
        row = rows[qid]
        cands = candidates(row)
        found = page_rows(row["query"], cands, RERANKER)
        ids = [page_of(cands[members[0]].chunk) for members in found.members]
        groups.append({"set": qs.name, "qid": qid, "X": found.matrix, "pages": ids,
                       "y": [qrels[qid].get(page, 0) for page in ids], "row": row})
    return groups


def stack(groups: list[dict[str, Any]], weights: dict[str, float]) -> lightgbm.Dataset:
    """One LightGBM dataset of ``groups`` (one query group each), rows weighted by their set's weight."""
    matrix = np.vstack([g["X"] for g in groups])
    y = np.concatenate([g["y"] for g in groups])
    w = np.concatenate([[weights[g["set"]]] * len(g["y"]) for g in groups])
    return lightgbm.Dataset(matrix, y, group=[len(g["y"]) for g in groups], weight=w, feature_name=list(FEATURES),
                            init_score=BASE_SCALE * matrix[:, BASE_FEATURE_INDEX], free_raw_data=False)


def learned_pages(ranker: LearnedRanker, group: dict[str, Any]) -> list[str]:
    """A question's page ranking by the model."""
    row = group["row"]
    cands = candidates(row)
    outcome = ranker.rank(row["query"], cands, RERANKER)
    return list(dict.fromkeys(page_of(cands[i].chunk) for i in outcome.order))


def figures(learned: Callable[[dict[str, Any]], list[str]], groups: list[dict[str, Any]],
            qrels: dict[str, dict[str, dict[str, int]]]) -> dict[str, Any]:
    """Per set: hybrid, the blend and the learned ranking (``learned(group)``: its pages) on ``groups``."""
    out: dict[str, Any] = {}
    for name in sorted({g["set"] for g in groups}):
        mine = [g for g in groups if g["set"] == name]
        out[name] = {"questions": len(mine)} | {
            method: mean_metrics({g["qid"]: pick(g) for g in mine}, qrels[name])
            for method, pick in (("hybrid", lambda g: g["row"]["hybrid"]), ("blend", lambda g: g["row"]["blend"]),
                                 ("learned", learned))}
    return out


def cross_validate(groups: list[dict[str, Any]], weights: dict[str, float], qrels: dict[str, dict[str, dict[str, int]]],
                   folds: int, rounds: int, params: dict[str, Any]) -> dict[str, Any]:
    """Figures of models trained for ``rounds`` on all folds but one of every set's tune questions (by sorted id
    position), each scored on the fold it did not see; the folds' rankings pooled per set."""
    position = {(g["set"], g["qid"]): i for name in {g["set"] for g in groups}
                for i, g in enumerate(sorted((g for g in groups if g["set"] == name), key=lambda g: g["qid"]))}
    pages: dict[tuple[str, str], list[str]] = {}
    for fold in range(folds):
        seen = [g for g in groups if position[g["set"], g["qid"]] % folds != fold]
        booster = lightgbm.train({**PARAMS, **params}, stack(seen, weights), num_boost_round=rounds)
        ranker = LearnedRanker(path=Path("cv"), booster=booster, features=FEATURES, base_scale=BASE_SCALE)
        for g in groups:
            if position[g["set"], g["qid"]] % folds == fold:
                pages[g["set"], g["qid"]] = learned_pages(ranker, g)
    return figures(lambda g: pages[g["set"], g["qid"]], groups, qrels)


def commit() -> str:
    try:
        return subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True, check=True,
                              cwd=Path(__file__).parent).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--set", action="append", required=True, dest="sets")
    parser.add_argument("--index-root", type=Path, required=True)
    parser.add_argument("--cache", type=Path, required=True)
    parser.add_argument("--out", type=Path, default=SHIPPED_MODEL)
    parser.add_argument("--holdout", type=int, default=4, help="Every n-th tune question is held out (early stopping).")
    parser.add_argument("--refit", action=argparse.BooleanOptionalAction, default=True,
                        help="Ship a model trained on every tune question for the rounds early stopping chose.")
    parser.add_argument("--balance", action=argparse.BooleanOptionalAction, default=True,
                        help="Each set weighs the same in training (else each question does).")
    parser.add_argument("--cv", type=int, default=0, metavar="FOLDS",
                        help="Only cross-validate on the tune halves (no model written): --rounds trees per fold.")
    parser.add_argument("--rounds", type=int, default=50, help="With --cv: trees per fold.")
    parser.add_argument("--param", action="append", default=[], metavar="KEY=VALUE",
                        help="With --cv: a LightGBM parameter instead of the default (a number).")
    args = parser.parse_args()
    loads = [list(os.getloadavg())]
    train, valid = [], []
    qrels: dict[str, dict[str, dict[str, int]]] = {}
    sizes: dict[str, int] = {}
    for name in args.sets:
        qs = question_set(name)
        rows = cached_rows(args.cache, lambda qs=qs: open_index(args.index_root, qs, reranker={"ranking": "blend"}),
                           qs, TUNE)
        qrels[qs.name] = qs.dataset(TUNE).qrels
        groups = group_rows(qs, rows, qrels[qs.name])
        train += [g for i, g in enumerate(groups) if i % args.holdout != args.holdout - 1]
        valid += [g for i, g in enumerate(groups) if i % args.holdout == args.holdout - 1]
        sizes[qs.name] = len(groups)
    loads.append(list(os.getloadavg()))
    weights = {name: (sum(sizes.values()) / len(sizes) / size if args.balance else 1.0) for name, size in sizes.items()}
    if args.cv:
        params = {key: float(value) if "." in value else int(value)
                  for key, value in (item.split("=", 1) for item in args.param)}
        print(json.dumps({"cv_folds": args.cv, "rounds": args.rounds, "base_scale": BASE_SCALE, "params": params,
                          "sets": cross_validate(train + valid, weights, qrels, args.cv, args.rounds, params)}, indent=2))
        return
    train_set = stack(train, weights)
    valid_set = stack(valid, weights)
    booster = lightgbm.train(PARAMS, train_set, num_boost_round=ROUNDS, valid_sets=[valid_set], valid_names=["holdout"],
                             callbacks=[lightgbm.early_stopping(PATIENCE, verbose=False)])
    held_out = LearnedRanker(path=args.out, features=FEATURES, base_scale=BASE_SCALE,
                             booster=lightgbm.Booster(model_str=booster.model_to_string(num_iteration=booster.best_iteration)))
    rounds = booster.best_iteration or ROUNDS
    if args.refit:  # the shipped model learns from every tune question, for the rounds early stopping chose
        booster = lightgbm.train(PARAMS, stack(train + valid, weights), num_boost_round=rounds)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(booster.model_to_string(num_iteration=rounds), encoding="utf-8")
    importance = dict(zip(FEATURES, booster.feature_importance("gain", iteration=rounds).round(1).tolist(), strict=True))
    card = {
        "model": args.out.name, "base_scale": BASE_SCALE, "library": f"lightgbm {lightgbm.__version__}", "features": list(FEATURES),
        "sets": {name: {"tune_questions": size, "weight": round(weights[name], 4)} for name, size in sizes.items()},
        "halves": "tune = qrels/dev.tsv; sets with only train qrels: even positions of the sorted query ids",
        "holdout": f"every {args.holdout}th tune question of each set (sorted ids), for early stopping",
        "commit": commit(), "params": PARAMS, "rounds": rounds,
        "refit": "trained again on every tune question (holdout included) for those rounds" if args.refit else None,
        "holdout_figures": figures(lambda g: learned_pages(held_out, g), valid, qrels), "feature_gain": importance,
        "command": "python bench/train_ranker.py " + " ".join(f"--set {s}" for s in args.sets),
        "load_average": [[round(x, 2) for x in load] for load in loads],
    }
    card_path(args.out).write_text(json.dumps(card, indent=2) + "\n", encoding="utf-8")
    print(json.dumps(card, indent=2))


if __name__ == "__main__":
    main()
