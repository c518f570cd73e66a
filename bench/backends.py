"""Store backends side by side: SciFact quality and speed, BM25 exactness, and 100k synthetic chunks.

Usage: flock /tmp/ragstream-heavy.lock python bench/backends.py [--dataset ../shared/data/scifact]
       [--source-index /work/idx/scifact] [--synthetic 100000] [--max-queries N] [--bm25-only [--store KEY=VALUE]]

Per backend (qdrant_edge; postgres on the bundled PostgreSQL 18 + pgvector, started in a
temporary directory; qdrant on ``--qdrant-url`` or, without one, qdrant-client's local mode), on
SciFact (train queries):

* ingest seconds, with the embedding cache primed from ``--source-index`` (a copy of an existing
  index's SQLite catalog) when given, so no backend re-embeds and both ingest under the same
  conditions; without it the first backend embeds cold and primes the second;
* NDCG@10 and query p50/p95/p99 (end to end, ms) for bm25, dense and hybrid;
* BM25 top-10 agreement with an exact BM25 computed here in numpy (the same tokens, the corpus's
  true average chunk length, IDF ln(1 + (N - df + 0.5) / (df + 0.5))): the share of the exact top
  10 the store returns, averaged over queries;
* postgres: dense recall@10 of the HNSW index (``store.hnsw_ef_search``) against exact search; with
  ``--pg-graphs M:EF,...`` also per graph setting (``store.hnsw_m`` / ``hnsw_ef_construction``), rebuilt on
  the same chunks: build seconds and recall@10 by ``ef_search``.

Then ``--synthetic`` random chunks (Zipf-distributed words, clustered 384-d unit vectors) are written
straight to each store, ANN indexes built (``maybe_optimize``), and dense and BM25 query p50/p95/p99,
dense recall@10 against exact search and the disk size reported. Prints one JSON object; the load
average is in it, since the machine is shared.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import signal
import sqlite3
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np
from ranx import Qrels, Run, evaluate

from ragstream import Ragstream, load_config
from ragstream.evaluation.beir import evaluate_retrieval, load_beir
from ragstream.models import Chunk, ChunkMetadata
from ragstream.store.base import Snapshot, VectorStore
from ragstream.store.factory import open_backend, open_store
from ragstream.store.postgres import server
from ragstream.store.postgres.bm25 import Bm25Terms, idf

DEFAULT_DATASET = Path(__file__).resolve().parents[2] / "shared" / "data" / "scifact"
BACKENDS = ("qdrant_edge", "postgres", "qdrant")
MODES = ("bm25", "dense", "hybrid")
SEED = 7
SYNTHETIC_DIMENSIONS = 384
SYNTHETIC_VOCABULARY = 30_000
SYNTHETIC_CLUSTERS = 500
SYNTHETIC_QUERIES = 200
WRITE_BATCH = 500
EF_SEARCH_SWEEP = (10, 40, 100, 200, 400)
BM25_ONLY_DIMENSIONS = 8
ALL = Snapshot(sequence=0, max_generation=2**62, uncommitted=frozenset())


def percentiles(values: list[float]) -> dict[str, float]:
    ordered = sorted(values)
    return {"p50": round(ordered[len(ordered) // 2], 2), "p95": round(ordered[min(len(ordered) - 1, int(len(ordered) * 0.95))], 2),
            "p99": round(ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))], 2)}


def timed(calls: list[Callable[[], Any]]) -> tuple[list[Any], dict[str, float]]:
    results, times = [], []
    for call in calls:
        started = time.perf_counter()
        results.append(call())
        times.append((time.perf_counter() - started) * 1000)
    return results, percentiles(times)


def store_section(backend: str, url: str | None, **extra: Any) -> dict[str, Any]:
    return {"backend": backend, **({"url": url} if url else {}), **extra}


def backend_url(backend: str, pg: Any, qdrant_url: str | None, root: Path, run: str) -> str | None:
    """The ``store.url`` of one backend for one run: a fresh database, a Qdrant server or local-mode folder."""
    if backend == "postgres" and pg:
        return new_database(pg.url, run)
    if backend == "qdrant":
        return qdrant_url or str(root / f"qdrant-local-{run}")
    return None


def qdrant_collection(backend: str, run: str) -> dict[str, Any]:
    """A collection of its own per run (and process) on a Qdrant server (``--qdrant-url``); left there afterwards."""
    if backend != "qdrant":
        return {}
    return {"qdrant": {"collection": f"ragstream_bench_{run}_{os.getpid()}"}}


def new_database(admin_url: str, name: str) -> str:
    import psycopg

    with psycopg.connect(admin_url.rsplit("/", 1)[0] + "/postgres", autocommit=True) as conn:
        conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
        conn.execute(f"CREATE DATABASE {name}")
    return admin_url.rsplit("/", 1)[0] + f"/{name}"


def all_chunks(rs: Ragstream) -> list[Chunk]:
    return [chunk for record in rs.documents() for chunk in rs.store.chunks_of(record.document_id, record.generation)]


# -- exact references ------------------------------------------------------------------------

class ExactBm25:
    """BM25 over the given chunks with the store's tokens and the true average length."""

    def __init__(self, chunks: list[Chunk], terms: Bm25Terms) -> None:
        self.ids = [chunk.chunk_id for chunk in chunks]
        self.terms = terms
        counts = [terms.counts(chunk.text) for chunk in chunks]
        self.lengths = np.array([c.length for c in counts], dtype=float)
        self.avgdl = float(self.lengths.mean())
        self.postings: dict[int, list[tuple[int, int]]] = defaultdict(list)
        for row, count in enumerate(counts):
            for term, tf in count.tf.items():
                self.postings[term].append((row, tf))

    def top(self, text: str, k: int) -> list[str]:
        scores: dict[int, float] = defaultdict(float)
        k1, b = self.terms.k1, self.terms.b
        for term in self.terms.query_terms(text):
            postings = self.postings.get(term, [])
            weight = idf(len(self.ids), len(postings)) if postings else 0.0
            for row, tf in postings:
                scores[row] += weight * tf * (k1 + 1) / (tf + k1 * (1 - b + b * self.lengths[row] / self.avgdl))
        ranked = sorted(scores.items(), key=lambda item: (-item[1], item[0]))[:k]
        return [self.ids[row] for row, _ in ranked]


def bm25_agreement(store: VectorStore, exact: ExactBm25, queries: list[str], k: int = 10) -> float:
    shares = []
    for text in queries:
        expected = exact.top(text, k)
        if expected:
            got = {chunk.chunk_id for chunk, _ in store.search_bm25(text, k, None, ALL)}
            shares.append(len(got & set(expected)) / len(expected))
    return round(float(np.mean(shares)), 4)


def dense_recall(store: VectorStore, ids: list[str], matrix: np.ndarray, queries: np.ndarray,
                 k: int = 10) -> tuple[float, dict[str, float]]:
    exact = np.argsort(-(queries @ matrix.T), axis=1)[:, :k]
    hits, timing = timed([partial(store.search_dense, q, k, None, ALL) for q in queries])
    recall = [len({c.chunk_id for c, _ in got} & {ids[i] for i in want}) / k for got, want in zip(hits, exact, strict=True)]
    return round(float(np.mean(recall)), 4), timing


def ef_sweep(config: Any, catalog: Any, ids: list[str], matrix: np.ndarray, queries: np.ndarray) -> dict[str, Any]:
    """postgres: dense recall@10 and latency at several ``store.hnsw_ef_search`` values (same database)."""
    sweep: dict[str, Any] = {}
    for ef in EF_SEARCH_SWEEP:
        store = open_store(config.model_copy(update={"store": config.store.model_copy(update={"hnsw_ef_search": ef})}),
                           catalog, matrix.shape[1])
        recall, timing = dense_recall(store, ids, matrix, queries)
        sweep[str(ef)] = {"recall@10": recall, "ms": timing}
    return sweep


def graph_sweep(config: Any, catalog: Any, ids: list[str], matrix: np.ndarray, queries: np.ndarray,
                graphs: list[tuple[int, int]]) -> dict[str, Any]:
    """postgres: per ``(store.hnsw_m, store.hnsw_ef_construction)``, the index built again with them (beside the
    one in use, which it replaces), its seconds, and :func:`ef_sweep` on it."""
    sweep: dict[str, Any] = {}
    for m, ef_construction in graphs:
        graph = config.model_copy(update={"store": config.store.model_copy(
            update={"hnsw_m": m, "hnsw_ef_construction": ef_construction})})
        store = open_store(graph, catalog, matrix.shape[1])
        started = time.perf_counter()
        try:
            store.build_ann_index()  # type: ignore[attr-defined]
        finally:
            store.close()
        sweep[f"m={m},ef_construction={ef_construction}"] = {"build_seconds": round(time.perf_counter() - started, 1),
                                                              **ef_sweep(graph, catalog, ids, matrix, queries)}
    return sweep


# -- SciFact ---------------------------------------------------------------------------------

def cached_embeddings(index: Path | None) -> tuple[str, list[tuple[str, bytes]]] | None:
    if index is None or not (index / "catalog.sqlite3").is_file():
        return None
    with sqlite3.connect(f"file:{index / 'catalog.sqlite3'}?mode=ro", uri=True) as db:
        rows = db.execute("SELECT model_id, content_hash, vector FROM embeddings").fetchall()
    if not rows:
        return None
    return rows[0][0], [(h, v) for m, h, v in rows if m == rows[0][0]]


def scifact(backend: str, data_dir: Path, url: str | None, dataset: Any, cache: tuple[str, list[tuple[str, bytes]]] | None,
            max_queries: int | None, graphs: list[tuple[int, int]] | None = None
            ) -> tuple[dict[str, Any], tuple[str, list[tuple[str, bytes]]] | None]:
    config = load_config(data_dir=data_dir, store=store_section(backend, url, **qdrant_collection(backend, "scifact")))
    with Ragstream(config) as rs:
        if cache is not None:
            model_id, rows = cache
            rs.catalog.cache.cache_vectors(model_id, ((h, np.frombuffer(v, dtype=np.float32)) for h, v in rows))
        result = evaluate_retrieval(rs, dataset, modes=MODES, max_queries=max_queries)
        chunks = all_chunks(rs)
        queries = [dataset.queries[q] for q in sorted(dataset.queries)][:max_queries]
        terms = Bm25Terms(config.store.bm25_k1, config.store.bm25_b, config.store.bm25_language)
        report: dict[str, Any] = {
            "ingest_seconds": round(result.ingest["seconds"], 1),
            "chunks": len(chunks),
            "ndcg@10": {mode: result.metrics[mode]["ndcg@10"] for mode in MODES},
            "query_ms": result.query_latency_ms,
            "bm25_top10_agreement_vs_exact": bm25_agreement(rs.store, ExactBm25(chunks, terms), queries),
            "store": dict(rs.store.info()),
        }
        embedder = rs.embedder()
        vectors = rs.catalog.cache.cached_vectors(embedder.model_id, [c.metadata.content_hash for c in chunks])
        if backend == "postgres":
            matrix = np.stack([vectors[c.metadata.content_hash] for c in chunks])
            query_vectors = embedder.embed_queries(queries)
            exact_recall, exact_ms = dense_recall(rs.store, [c.chunk_id for c in chunks], matrix, query_vectors)
            build_started = time.perf_counter()
            rs.store.build_ann_index()  # type: ignore[attr-defined]
            build = time.perf_counter() - build_started
            hnsw_recall, hnsw_ms = dense_recall(rs.store, [c.chunk_id for c in chunks], matrix, query_vectors)
            sweep = ef_sweep(config, rs.catalog, [c.chunk_id for c in chunks], matrix, query_vectors)
            report["dense_store_only"] = {"exact": {"recall@10": exact_recall, "ms": exact_ms},
                                          "hnsw": {"recall@10": hnsw_recall, "ms": hnsw_ms, "build_seconds": round(build, 1),
                                                   "ef_search": config.store.hnsw_ef_search},
                                          "hnsw_by_ef_search": sweep}
            if graphs:
                report["dense_store_only"]["hnsw_by_build"] = graph_sweep(config, rs.catalog, [c.chunk_id for c in chunks],
                                                                          matrix, query_vectors, graphs)
        primed = cache or (embedder.model_id, [(h, v.astype(np.float32).tobytes()) for h, v in vectors.items()])
    return report, primed


# -- synthetic ---------------------------------------------------------------------------------

def synthetic_corpus(count: int) -> tuple[list[Chunk], np.ndarray, list[str], np.ndarray]:
    rng = np.random.default_rng(SEED)
    syllables = ["ka", "lo", "mi", "ne", "ru", "sa", "ti", "vo", "ze", "pa", "qu", "de", "fo", "gi", "ba"]
    words = sorted({"".join(rng.choice(syllables, size=int(rng.integers(2, 5)))) for _ in range(SYNTHETIC_VOCABULARY * 2)})
    words = words[:SYNTHETIC_VOCABULARY]
    zipf = 1.0 / np.arange(1, len(words) + 1)
    zipf /= zipf.sum()
    centroids = rng.normal(size=(SYNTHETIC_CLUSTERS, SYNTHETIC_DIMENSIONS)).astype(np.float32)
    labels = rng.integers(0, SYNTHETIC_CLUSTERS, size=count)
    matrix = centroids[labels] + rng.normal(scale=0.6, size=(count, SYNTHETIC_DIMENSIONS)).astype(np.float32)
    matrix /= np.linalg.norm(matrix, axis=1, keepdims=True)
    lengths = rng.integers(40, 160, size=count)
    drawn = rng.choice(len(words), size=int(lengths.sum()), p=zipf)  # one draw: per-row draws redo the CDF
    ends = np.cumsum(lengths)
    chunks = []
    for row in range(count):
        text = " ".join(words[i] for i in drawn[ends[row] - lengths[row] : ends[row]])
        document_id = f"syn{row // 10}"
        metadata = ChunkMetadata(document_id=document_id, source=document_id, title=document_id, chunk_index=row % 10,
                                 word_count=len(text.split()), has_code=False, has_equations=False, checksum="c",
                                 content_hash=f"s{row}", mime="text/plain", created_at="2026-01-01T00:00:00+00:00")
        chunks.append(Chunk(chunk_id=f"00000000-0000-0000-0000-{row:012d}", text=text, metadata=metadata))
    queries = [" ".join(rng.choice(words[50:5000], size=3)) for _ in range(SYNTHETIC_QUERIES)]
    probe = matrix[rng.integers(0, count, size=SYNTHETIC_QUERIES)] + rng.normal(scale=0.3, size=(SYNTHETIC_QUERIES, SYNTHETIC_DIMENSIONS))
    probe = (probe / np.linalg.norm(probe, axis=1, keepdims=True)).astype(np.float32)
    return chunks, matrix, queries, probe


def disk_bytes(path: Path) -> int:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file())


Corpus = tuple[list[Chunk], np.ndarray, list[str], np.ndarray]


def synthetic(backend: str, data_dir: Path, url: str | None, corpus: Corpus) -> dict[str, Any]:
    chunks, matrix, queries, probe = corpus
    config = load_config(data_dir=data_dir, store=store_section(backend, url, **qdrant_collection(backend, "synthetic")))
    catalog, store = open_backend(config, lambda catalog: SYNTHETIC_DIMENSIONS)
    try:
        started = time.perf_counter()
        for start in range(0, len(chunks), WRITE_BATCH):
            store.upsert(chunks[start : start + WRITE_BATCH], matrix[start : start + WRITE_BATCH], 1)
        store.flush()
        written = time.perf_counter() - started
        started = time.perf_counter()
        store.maybe_optimize()
        optimized = time.perf_counter() - started
        recall, dense_ms = dense_recall(store, [c.chunk_id for c in chunks], matrix, probe)
        sweep = ef_sweep(config, catalog, [c.chunk_id for c in chunks], matrix, probe) if backend == "postgres" else None
        some_documents = {"document_id": ["syn1", "syn5000", "syn9000"]}
        _, bm25_ms = timed([partial(store.search_bm25, q, 10, None, ALL) for q in queries])
        _, filtered_ms = timed([partial(store.search_dense, q, 10, some_documents, ALL) for q in probe])
        info = dict(store.info())
    finally:
        store.close()
        catalog.close()
    size = info.get("disk_bytes") or disk_bytes(data_dir / "qdrant")
    return {"chunks": len(chunks), "write_seconds": round(written, 1), "optimize_seconds": round(optimized, 1),
            "dense_top10_ms": dense_ms, "dense_recall@10_vs_exact": recall, "dense_by_ef_search": sweep, "bm25_top10_ms": bm25_ms,
            "dense_filtered_top10_ms": filtered_ms, "disk_mb": round(size / 2**20, 1), "store": info}


def bm25_only(backend: str, data_dir: Path, url: str | None, dataset: Any, max_queries: int | None,
              settings: dict[str, str] | None = None) -> dict[str, Any]:
    """BM25 alone, light enough to run beside other work: every corpus document is one chunk (title and
    abstract) with a placeholder dense vector; top-10 agreement with exact BM25, NDCG@10 against the
    judgements, and BM25 p50/p95/p99 (``settings``: store settings for the run)."""
    config = load_config(data_dir=data_dir, store=store_section(backend, url, **(settings or {})))
    catalog, store = open_backend(config, lambda catalog: BM25_ONLY_DIMENSIONS)
    try:
        chunks = []
        for row, doc in enumerate(dataset.documents()):
            text = doc.pages[0].text
            metadata = ChunkMetadata(document_id=doc.document_id, source=doc.source, title=doc.title, chunk_index=0,
                                     word_count=len(text.split()), has_code=False, has_equations=False, checksum="c",
                                     content_hash=f"d{row}", mime="text/plain", created_at="2026-01-01T00:00:00+00:00")
            chunks.append(Chunk(chunk_id=f"00000000-0000-0000-0000-{row:012d}", text=text, metadata=metadata))
        vectors = np.ones((len(chunks), BM25_ONLY_DIMENSIONS), dtype=np.float32)
        started = time.perf_counter()
        for start in range(0, len(chunks), WRITE_BATCH):
            store.upsert(chunks[start : start + WRITE_BATCH], vectors[start : start + WRITE_BATCH], 1)
        store.flush()
        store.maybe_optimize()
        written = time.perf_counter() - started
        queries = [dataset.queries[q] for q in sorted(dataset.queries)][:max_queries]
        terms = Bm25Terms(config.store.bm25_k1, config.store.bm25_b, config.store.bm25_language)
        agreement = bm25_agreement(store, ExactBm25(chunks, terms), queries)
        results, timing = timed([partial(store.search_bm25, q, 10, None, ALL) for q in queries])
    finally:
        store.close()
        catalog.close()
    query_ids = sorted(dataset.queries)[:max_queries]
    run = {qid: {chunk.metadata.document_id.split(":", 1)[1]: float(len(hits) - rank) for rank, (chunk, _) in enumerate(hits)}
           or {"__none__": 0.0} for qid, hits in zip(query_ids, results, strict=True)}
    ndcg = evaluate(Qrels({qid: dataset.qrels[qid] for qid in query_ids}), Run(run), "ndcg@10")
    return {"chunks": len(chunks), "write_seconds": round(written, 1), "bm25_top10_agreement_vs_exact": agreement,
            "ndcg@10": round(float(ndcg), 4), "bm25_top10_ms": timing, "store_settings": settings or {}}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dataset", type=Path, default=DEFAULT_DATASET)
    parser.add_argument("--split", default="train")
    parser.add_argument("--source-index", type=Path, default=None, help="An index whose embedding cache primes both backends.")
    parser.add_argument("--max-queries", type=int, default=None)
    parser.add_argument("--synthetic", type=int, default=100_000, help="Synthetic chunks (0: skip).")
    parser.add_argument("--backends", default=",".join(BACKENDS))
    parser.add_argument("--qdrant-url", default=os.environ.get("RAGSTREAM_TEST_QDRANT_URL"),
                        help="Qdrant server for the qdrant backend; default: qdrant-client's local mode in a temp folder "
                        "(pure Python and exact: it measures the client path, not a server; its synthetic run is skipped).")
    parser.add_argument("--skip-scifact", action="store_true", help="Only the synthetic part.")
    parser.add_argument("--bm25-only", action="store_true",
                        help="Only BM25 on SciFact, one chunk per document, no embedding model (light).")
    parser.add_argument("--store", action="append", default=[], metavar="KEY=VALUE",
                        help="With --bm25-only: a store setting for the run (repeatable), e.g. --store bm25_max_candidates=260.")
    parser.add_argument("--pg-graphs", type=lambda text: [tuple(int(v) for v in pair.split(":")) for pair in text.split(",")
                                                          if pair], default=[], metavar="M:EF_CONSTRUCTION,...",
                        help="postgres, SciFact: also build the HNSW index with each of these store.hnsw_m : "
                        "store.hnsw_ef_construction pairs, timing each build and sweeping ef_search on it.")
    parser.add_argument("--output", type=Path, default=Path(__file__).with_name("results") / "backends.json")
    args = parser.parse_args()
    settings = dict(item.split("=", 1) for item in args.store)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # killed: still stop the bundled PostgreSQL
    if not (args.dataset / "corpus.jsonl").exists():
        sys.exit(f"dataset not found: {args.dataset}")
    backends = args.backends.split(",")
    dataset = load_beir(args.dataset, args.split)
    report: dict[str, Any] = {"benchmark": "backends", "dataset": f"{dataset.name}/{args.split}",
                              "queries": min(len(dataset.queries), args.max_queries or len(dataset.queries)),
                              "load_average_start": os.getloadavg(), "machine": f"{platform.machine()}, {os.cpu_count()} cores",
                              "scifact": {}, "synthetic": {}}
    with tempfile.TemporaryDirectory(prefix="ragstream-bench-backends-") as scratch:
        root = Path(scratch)
        pg = server.start(root / "pg") if "postgres" in backends else None
        try:
            cache = cached_embeddings(args.source_index)
            report["embedding_cache"] = f"primed from {args.source_index}" if cache else "cold for the first backend"
            if args.bm25_only:
                for backend in backends:
                    url = new_database(pg.url, "bm25") if backend == "postgres" and pg else None
                    report.setdefault("bm25_only", {})[backend] = bm25_only(backend, root / f"bm25-{backend}", url, dataset,
                                                                             args.max_queries, settings)
                args.skip_scifact, args.synthetic = True, 0
            for backend in [] if args.skip_scifact else backends:
                url = backend_url(backend, pg, args.qdrant_url, root, "scifact")
                report["scifact"][backend], cache = scifact(backend, root / f"scifact-{backend}", url, dataset, cache,
                                                            args.max_queries, args.pg_graphs)
                print(json.dumps({backend: report["scifact"][backend]}), file=sys.stderr, flush=True)
            if args.synthetic:
                corpus = synthetic_corpus(args.synthetic)
                for backend in backends:
                    if backend == "qdrant" and not args.qdrant_url:
                        report["synthetic"][backend] = {"skipped": "qdrant-client local mode (no --qdrant-url): an exact "
                                                        "pure-Python search is not a server's"}
                        continue
                    url = backend_url(backend, pg, args.qdrant_url, root, "synthetic")
                    report["synthetic"][backend] = synthetic(backend, root / f"synthetic-{backend}", url, corpus)
                    print(json.dumps({backend: report["synthetic"][backend]}), file=sys.stderr, flush=True)
        finally:
            if pg is not None:
                server.stop(root / "pg")
    report["load_average_end"] = os.getloadavg()
    text = json.dumps(report, indent=2)
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(text + "\n")
    print(text)


if __name__ == "__main__":
    main()
