"""The plain baseline ragstream is measured against: bm25s with stemming, exact numpy cosine, RRF.

Usage (alone; bench/retrieval.py runs it in the same run as ragstream):
    python bench/baselines.py --data-dir INDEX [--dataset ../shared/data/scifact] [--max-queries N]

It searches the same chunk texts and vectors as a ragstream index (read from the store once) and
embeds queries with the same embedder, so only the retrieval code differs: BM25 is ``bm25s``
(Lucene BM25, k1 1.2, b 0.75, English stopwords, Snowball stemmer), dense is one matrix product
over every chunk vector (exact), hybrid is reciprocal rank fusion (k 60) of the two top-``depth``
lists. Runs are scored like ``ragstream.evaluation.beir``: the top 100 chunks, a document ranked
by its best chunk, ranx metrics. Latency is per query, end to end (query embedding included).
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import bm25s
import numpy as np
import qdrant_edge as qe
import Stemmer
from ranx import Qrels, Run, evaluate

from ragstream import Ragstream, load_config
from ragstream.evaluation.beir import DOC_ID_KEY, METRICS, BeirDataset, load_beir
from ragstream.store.qdrant_edge import DENSE

RRF_K = 60
EVAL_DEPTH = 100
DEFAULT_DATASET = Path(__file__).resolve().parents[2] / "shared" / "data" / "scifact"


class PlainBaseline:
    """bm25s + exact numpy cosine + RRF over fixed chunk texts and (L2-normalised) vectors."""

    def __init__(self, texts: Sequence[str], vectors: np.ndarray, doc_ids: Sequence[str],
                 embed_query: Callable[[str], np.ndarray], *, k1: float = 1.2, b: float = 0.75) -> None:
        self.stemmer = Stemmer.Stemmer("english")
        self.bm25 = bm25s.BM25(k1=k1, b=b)
        self.bm25.index(bm25s.tokenize(list(texts), stopwords="en", stemmer=self.stemmer, show_progress=False),
                        show_progress=False)
        self.vectors = np.ascontiguousarray(vectors, dtype=np.float32)
        self.doc_ids = list(doc_ids)
        self.embed_query = embed_query

    def search_bm25(self, query: str, k: int) -> list[tuple[int, float]]:
        tokens = bm25s.tokenize([query], stopwords="en", stemmer=self.stemmer, return_ids=False, show_progress=False)
        if not tokens[0]:
            return []
        ids, scores = self.bm25.retrieve(tokens, k=min(k, len(self.doc_ids)), show_progress=False, n_threads=1)
        return [(int(i), float(s)) for i, s in zip(ids[0], scores[0], strict=True) if s > 0]

    def search_dense(self, vector: np.ndarray, k: int) -> list[tuple[int, float]]:
        scores = self.vectors @ vector.astype(np.float32)
        k = min(k, len(scores))
        top = np.argpartition(-scores, k - 1)[:k]
        top = top[np.argsort(-scores[top], kind="stable")]
        return [(int(i), float(scores[i])) for i in top]

    def search(self, mode: str, query: str, k: int) -> list[tuple[int, float]]:
        """The ranked (chunk index, score) list of one query in ``mode`` (bm25, dense, hybrid)."""
        if mode == "bm25":
            return self.search_bm25(query, k)
        vector = self.embed_query(query)
        if mode == "dense":
            return self.search_dense(vector, k)
        fused: dict[int, float] = {}
        for ranking in (self.search_dense(vector, k), self.search_bm25(query, k)):
            for rank, (index, _) in enumerate(ranking, start=1):
                fused[index] = fused.get(index, 0.0) + 1.0 / (RRF_K + rank)
        return sorted(fused.items(), key=lambda item: -item[1])


RAW_POINTS = {"edge_process": "off"}
"""The store section of a Ragstream whose raw points a bench reads: the embedded shard held in this process."""


def load_index(rs: Ragstream) -> tuple[list[str], np.ndarray, list[str]]:
    """Every chunk's text, dense vector and corpus document id, read from the store (a bench reads raw points; open
    ``rs`` with ``store=RAW_POINTS``)."""
    shard = rs.store._shard  # type: ignore[attr-defined]
    records, offset = [], None
    while True:
        page, offset = shard.scroll(qe.ScrollRequest(offset=offset, limit=1024, with_payload=True, with_vector=True))
        records.extend(page)
        if offset is None:
            break
    payloads = [record.payload or {} for record in records]
    texts = [payload.get("text", "") for payload in payloads]
    doc_ids = [str((payload.get("extra") or {}).get(DOC_ID_KEY, payload.get("document_id"))) for payload in payloads]
    vectors = np.array([record.vector[DENSE] for record in records], dtype=np.float32)
    return texts, vectors, doc_ids


def evaluate_baseline(baseline: PlainBaseline, dataset: BeirDataset, *, depth: int = 200,
                      max_queries: int | None = None, modes: Sequence[str] = ("bm25", "dense", "hybrid")) -> dict:
    """Metrics and latency (ms, p50/p95/p99) per mode, scored like ``evaluate_retrieval``."""
    query_ids = sorted(dataset.queries)[:max_queries] if max_queries else sorted(dataset.queries)
    qrels = Qrels({qid: dataset.qrels[qid] for qid in query_ids})
    report: dict = {}
    for mode in modes:
        run: dict[str, dict[str, float]] = {}
        timings = []
        for qid in query_ids:
            started = time.perf_counter()
            ranked = baseline.search(mode, dataset.queries[qid], depth)
            timings.append((time.perf_counter() - started) * 1000)
            scores: dict[str, float] = {}
            for index, _ in ranked[:EVAL_DEPTH]:
                scores.setdefault(baseline.doc_ids[index], float(EVAL_DEPTH - len(scores)))
            run[qid] = scores or {"__none__": 0.0}
        metrics = evaluate(qrels, Run(run), list(METRICS))
        report[mode] = {**{name: round(float(metrics[name]), 4) for name in METRICS}, "latency_ms": percentiles(timings)}
    return report


def percentiles(values: Sequence[float]) -> dict[str, float]:
    """p50, p95 and p99 of ``values`` (nearest rank), rounded to microseconds."""
    ordered = sorted(values)
    if not ordered:
        return {"p50": 0.0, "p95": 0.0, "p99": 0.0}
    return {"p50": round(ordered[len(ordered) // 2], 3),
            "p95": round(ordered[min(len(ordered) - 1, int(len(ordered) * 0.95))], 3),
            "p99": round(ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))], 3)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dataset", type=Path, default=DEFAULT_DATASET)
    parser.add_argument("--split", default="train")
    parser.add_argument("--data-dir", type=Path, required=True, help="A ragstream index of the dataset (read only).")
    parser.add_argument("--max-queries", type=int, default=None)
    parser.add_argument("--depth", type=int, default=200)
    args = parser.parse_args()
    dataset = load_beir(args.dataset, args.split)
    with Ragstream(load_config(data_dir=args.data_dir, store=RAW_POINTS)) as rs:
        texts, vectors, doc_ids = load_index(rs)
        embedder = rs.embedder().inner  # uncached: every query pays its embedding, like a first search
        baseline = PlainBaseline(texts, vectors, doc_ids, lambda query: embedder.embed_queries([query])[0])
        print(json.dumps({"benchmark": "plain_baseline", "chunks": len(texts),
                          "modes": evaluate_baseline(baseline, dataset, depth=args.depth, max_queries=args.max_queries)},
                         indent=2))


if __name__ == "__main__":
    main()
