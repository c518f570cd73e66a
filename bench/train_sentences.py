"""Train the extractive answer's sentence scorer on the tune halves; report on the report halves.

Usage: python bench/train_sentences.py --rows /tmp/sentences.jsonl [--write] [--quotes 3] [--c 1.0]

Reads the rows bench/sentence_data.py wrote (one per labelled question: its candidate sentences' features
and labels). Scikit-learn learns which
sentence answers from the **tune** questions of every set: a logistic regression over the differences between
an answering sentence's features and another sentence's of the same question (each set weighs the same; the
features :data:`WITHIN_QUESTION` names standardised over the question's sentences). The shipped model is
its weights in JSON (``ragstream/answer/trained/sentences.json``, with ``--write``), read at run time with
numpy alone. Prints JSON: per set and split, the share of questions whose answer quotes a labelled
answering sentence among its ``--quotes`` quotes, for the cosine order the answer path used before (``cosine``),
the learned scorer (``learned``) and the best any order could do with these candidates (``ceiling``).
"""

from __future__ import annotations

import argparse
import json
import os
from collections import defaultdict
from pathlib import Path
from typing import Any

import numpy as np
from sklearn.linear_model import LogisticRegression

from ragstream.answer.sentence_features import FEATURES
from ragstream.answer.sentence_scorer import SHIPPED_MODEL, SentenceScorer

COSINE = FEATURES.index("cosine")


def answered(rows: list[dict[str, Any]], score: Any, quotes: int) -> float:
    """Share of ``rows`` whose ``quotes`` best sentences under ``score`` hold a labelled one."""
    hits = 0
    for row in rows:
        if not row["labels"]:
            continue
        order = np.argsort(-np.asarray(score(np.asarray(row["features"], dtype=np.float64))), kind="stable")
        hits += any(row["labels"][i] for i in order[:quotes])
    return round(hits / max(1, len(rows)), 3)


USED = ("cosine", "question_terms_share", "question_terms", "chunk_number", "position", "relative_position",
        "chars_log", "introduces_example", "same_document_as_first", "heading_terms_share")
"""The features the shipped model weighs (the others get weight 0): a sentence's gap to the best and its rank
say what its standardised score says, and the attachment's own relevance is left to its rank. The
cross-encoder's score of each sentence is left out too: with it, leave-one-set-out on the tune halves gained
0.242 over the cosine order (summed over the six sets) against 0.193 without it, the report halves were the
same either way, and it costs one cross-encoder call per sentence before the first token (about 60-200 ms
per answer); ``--with-cross-encoder`` weighs it (the answer path then scores sentences with it)."""


def fit(rows: list[dict[str, Any]], c: float, used: tuple[str, ...] = USED, per_set: bool = True) -> SentenceScorer:
    """A pairwise scorer fitted on ``rows``: for every question, each answering sentence against each other one
    (features prepared as at run time); each question weighs the same, each set the same."""
    blank = SentenceScorer(features=FEATURES, weights=np.zeros(len(FEATURES)))
    questions_per_set: dict[str, int] = defaultdict(int)
    usable = [row for row in rows if any(row["labels"]) and not all(row["labels"])]
    for row in usable:
        questions_per_set[row["set"]] += 1
    differences, weights = [], []
    for row in usable:
        x = blank.prepared(np.asarray(row["features"], dtype=np.float64))
        y = np.asarray(row["labels"], dtype=bool)
        pairs = (x[y][:, None, :] - x[~y][None, :, :]).reshape(-1, x.shape[1])
        differences.append(pairs)
        weights.append(np.full(len(pairs), 1.0 / (len(pairs) * (questions_per_set[row["set"]] if per_set else 1))))
    columns = [FEATURES.index(name) for name in used]
    d, w = np.concatenate(differences)[:, columns], np.concatenate(weights)
    x = np.concatenate([d, -d])
    y = np.concatenate([np.ones(len(d)), np.zeros(len(d))])
    sample = np.concatenate([w, w])
    model = LogisticRegression(C=c, fit_intercept=False, max_iter=5000)
    model.fit(x, y, sample_weight=sample * len(sample) / sample.sum())
    full = np.zeros(len(FEATURES))
    full[columns] = model.coef_[0]
    return SentenceScorer(features=FEATURES, weights=full)


def report(rows: list[dict[str, Any]], scorer: SentenceScorer, quotes: int) -> dict[str, Any]:
    """Per set and split: the answered share by cosine, learned and the ceiling."""
    out: dict[str, Any] = {}
    groups: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
    for row in rows:
        groups[(row["set"], row["split"])].append(row)
    for (name, split), group in sorted(groups.items()):
        out.setdefault(name, {})[split] = {
            "questions": len(group),
            "cosine": answered(group, lambda f: f[:, COSINE], quotes),
            "learned": answered(group, scorer.scores, quotes),
            "ceiling": round(sum(any(r["labels"]) for r in group) / len(group), 3),
        }
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=Path, required=True)
    parser.add_argument("--quotes", type=int, default=3)
    parser.add_argument("--c", type=float, default=0.1)
    parser.add_argument("--write", action="store_true")
    parser.add_argument("--with-cross-encoder", action="store_true",
                        help="Weigh the cross-encoder's score of each sentence too (slower answers).")
    args = parser.parse_args()
    rows = [json.loads(line) for line in args.rows.read_text(encoding="utf-8").splitlines() if line.strip()]
    used = (*USED, "cross_encoder") if args.with_cross_encoder else USED
    scorer = fit([row for row in rows if row["split"] == "tune" and row["labels"]], args.c, used)
    result = {"benchmark": "train_sentences", "quotes": args.quotes, "c": args.c,
              "weights": dict(zip(FEATURES, np.round(scorer.weights, 3).tolist(), strict=True)),
              "sets": report(rows, scorer, args.quotes), "load_average": [round(x, 2) for x in os.getloadavg()]}
    if args.write:
        scorer.save(SHIPPED_MODEL, card={"sets": sorted({row["set"] for row in rows}), "c": args.c,
                                         "trained_on": "tune halves (qrels/dev.tsv)", "report": result["sets"]})
        result["written"] = str(SHIPPED_MODEL)
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
