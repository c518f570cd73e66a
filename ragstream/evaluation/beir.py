"""Retrieval quality on a BEIR-format dataset (corpus.jsonl, queries.jsonl, qrels/<split>.tsv), scored with ranx.

A dataset may hold its documents as files instead (a ``files/`` folder, e.g. PDF manuals): they are read by
ragstream's own loaders, and its corpus ids are ``FILE#pN`` (the file's name, page N) or ``FILE`` (a file read
without pages), matched against each retrieved chunk's source file name and page.
"""

from __future__ import annotations

import csv
import hashlib
import json
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ranx import Qrels, Run, evaluate

from ragstream.api import Ragstream
from ragstream.config import RagstreamConfig, load_config
from ragstream.documents.loaders import load_file
from ragstream.documents.markdown_text import MARKDOWN_MIME, first_h1, split_front_matter
from ragstream.errors import EmbedderUnavailableError, UnsupportedFileTypeError
from ragstream.models import ChunkMetadata, LoadedDocument, Page, SearchMode
from ragstream.pipeline.stages import RERANKER

METRICS = ("ndcg@5", "ndcg@10", "precision@5", "recall@100", "mrr", "hit_rate@1")
"""hit_rate@1: the share of questions whose first document is relevant (the right page first)."""
MODES: tuple[SearchMode, ...] = ("bm25", "dense", "hybrid")
PIPELINE = "pipeline"
"""The answer path's ranking: the SuperPrompt's reranked view (Retrieval, then ReRanker), per document."""
RANKING_STAGE = "ReRanker"
RETRIEVAL_STAGE = "Retrieval"
DOC_ID_KEY = "beir_id"
PLAIN_MIME = "text/plain"
CORPUS_MIMES = (PLAIN_MIME, MARKDOWN_MIME)
"""The formats a corpus line's optional ``"mime"`` field may name."""
FILES_DIR = "files"
"""A dataset folder's ``files/``: documents ingested as files (their ids ``FILE#pN``), in place of corpus.jsonl."""
PAGE_MARK = "#p"


@dataclass
class BeirDataset:
    """A BEIR dataset split in memory."""

    name: str
    corpus_path: Path
    queries: dict[str, str]
    qrels: dict[str, dict[str, int]]
    files_dir: Path | None = None
    """Set when the dataset's documents are the files of this folder (see :func:`load_beir`)."""

    def documents(self, config: RagstreamConfig | None = None) -> Iterator[LoadedDocument]:
        """Corpus entries as documents, ids kept in metadata (see :func:`corpus_document`); or, for a dataset
        of files, each file read by ragstream's loaders under ``config`` (its name kept as the id)."""
        if self.files_dir is not None:
            yield from file_documents(self.files_dir, config or load_config())
            return
        with self.corpus_path.open(encoding="utf-8") as lines:
            for line in lines:
                yield corpus_document(self.name, json.loads(line))


def file_documents(folder: Path, config: RagstreamConfig) -> Iterator[LoadedDocument]:
    """Every file of ``folder`` (sorted, hidden ones aside) as loaded for ingestion, its name as the corpus id.
    A file that cannot be read raises its :class:`ragstream.errors.DocumentError`."""
    root = folder.resolve()
    for path in sorted(root.iterdir()):
        if path.is_file() and not path.name.startswith("."):
            yield load_file(path, config, metadata={DOC_ID_KEY: path.name}, root=str(root))


def chunk_corpus_id(meta: ChunkMetadata, *, paged: bool) -> str:
    """The corpus id a retrieved chunk counts for: its document's id, with ``#pN`` for a chunk of page N when
    the dataset's ids name pages (a dataset of files)."""
    doc_id = str(meta.extra.get(DOC_ID_KEY, meta.document_id))
    return f"{doc_id}{PAGE_MARK}{meta.page}" if paged and meta.page is not None else doc_id


def corpus_document(dataset: str, entry: dict[str, Any]) -> LoadedDocument:
    """One corpus line as a document.

    An optional ``"mime"`` field names the text's format: ``text/plain`` (the default, BEIR's own
    datasets) becomes title + text, chunked as plain text; ``text/markdown`` keeps the page as it is
    (headings, code fences), is chunked as Markdown with header paths, and takes its title from the
    entry or else its first ``#`` heading. Any other value raises :class:`UnsupportedFileTypeError`.
    """
    doc_id = str(entry["_id"])
    mime = entry.get("mime", PLAIN_MIME)
    title, text = entry.get("title", "").strip(), entry.get("text", "").strip()
    metadata: dict[str, Any] = {}
    if mime == MARKDOWN_MIME:
        body, metadata = split_front_matter(text)
        title = title or first_h1(body) or ""
    elif mime == PLAIN_MIME:
        body = f"{title}\n\n{text}" if title else text
    else:
        raise UnsupportedFileTypeError(
            f"{dataset} corpus entry {doc_id!r}: mime {mime!r} is not one of {', '.join(CORPUS_MIMES)}")
    return LoadedDocument(
        document_id=f"{dataset}:{doc_id}",
        source=f"beir://{dataset}/{doc_id}",
        title=title or doc_id,
        mime=mime,
        checksum=hashlib.sha256(body.encode()).hexdigest(),
        size_bytes=len(body.encode()),
        pages=(Page(number=None, text=body),),
        metadata={**metadata, DOC_ID_KEY: doc_id},
    )


def load_beir(directory: Path, split: str) -> BeirDataset:
    """Read a BEIR dataset; only queries judged in ``split`` are kept. A ``files/`` folder in ``directory``
    holds the documents in place of corpus.jsonl."""
    qrels: dict[str, dict[str, int]] = {}
    with (directory / "qrels" / f"{split}.tsv").open(encoding="utf-8") as handle:
        for row in csv.DictReader(handle, delimiter="\t"):
            qrels.setdefault(row["query-id"], {})[row["corpus-id"]] = int(row["score"])
    queries: dict[str, str] = {}
    with (directory / "queries.jsonl").open(encoding="utf-8") as lines:
        for line in lines:
            entry = json.loads(line)
            if entry["_id"] in qrels:
                queries[entry["_id"]] = entry["text"]
    files = directory / FILES_DIR
    return BeirDataset(name=directory.name, corpus_path=directory / "corpus.jsonl", queries=queries, qrels=qrels,
                       files_dir=files if files.is_dir() else None)


@dataclass
class EvalResult:
    """Metrics per mode plus timings."""

    metrics: dict[str, dict[str, float]]
    ingest: dict[str, float]
    query_latency_ms: dict[str, dict[str, float]] = field(default_factory=dict)
    queries: int = 0
    stage_latency_ms: dict[str, dict[str, float]] = field(default_factory=dict)
    """Pipeline mode: the ReRanker stage's own time per question."""


def evaluate_retrieval(
    rs: Ragstream, dataset: BeirDataset, *, modes: Sequence[str] = MODES, depth: int = 100, max_queries: int | None = None
) -> EvalResult:
    """Ingest the corpus (unchanged documents are skipped) and score every mode on the split."""
    report = rs.ingest_documents(dataset.documents(rs.config))
    paged = dataset.files_dir is not None
    ingest = {
        "seconds": report.duration_seconds,
        "model_seconds": report.embedding_seconds,
        "other_seconds": report.duration_seconds - report.embedding_seconds,
        "documents_processed": report.documents_processed,
        "documents_skipped": report.documents_skipped,
        "chunks": report.chunks_written,
    }
    query_ids = sorted(dataset.queries)[:max_queries] if max_queries else sorted(dataset.queries)
    texts = [dataset.queries[qid] for qid in query_ids]
    qrels = Qrels({qid: dataset.qrels[qid] for qid in query_ids})
    metrics: dict[str, dict[str, float]] = {}
    latency: dict[str, dict[str, float]] = {}
    stage_latency: dict[str, dict[str, float]] = {}
    for mode in modes:
        if mode != "bm25":  # every mode pays its query embeddings: latencies stay end to end
            _forget_queries(rs)
        run: dict[str, dict[str, float]] = {}
        timings: list[float] = []
        rerank_timings: list[float] = []
        for qid, text in zip(query_ids, texts, strict=True):
            if mode == PIPELINE:
                started = time.perf_counter()
                sp = rs.run_pipeline(text, until=RETRIEVAL_STAGE)
                retrieved = time.perf_counter()
                sp = rs.run_pipeline(sp, until=RANKING_STAGE)
                timings.append((time.perf_counter() - started) * 1000)
                rerank_timings.append((time.perf_counter() - retrieved) * 1000)
                run[qid] = _document_scores([chunk.metadata for chunk in sp.chunks(sp.views_by_stage[RERANKER.entry])],
                                           paged=paged)
            else:
                result = rs.search(text, mode=mode, top_k=depth)  # type: ignore[arg-type]  # end to end
                timings.append(result.latencies_ms["total"])
                run[qid] = _document_scores([hit.chunk.metadata for hit in result.hits], paged=paged)
        scores = evaluate(qrels, Run(run), list(METRICS))
        metrics[mode] = {name: round(float(scores[name]), 4) for name in METRICS}
        latency[mode] = _percentiles(timings)
        if rerank_timings:
            stage_latency[RANKING_STAGE] = _percentiles(rerank_timings)
    return EvalResult(metrics=metrics, ingest=ingest, query_latency_ms=latency, queries=len(query_ids),
                      stage_latency_ms=stage_latency)


def _forget_queries(rs: Ragstream) -> None:
    try:
        rs.embedder().forget_queries()
    except EmbedderUnavailableError:
        pass  # the search falls back to BM25 and says so


def _document_scores(ranked: Sequence[ChunkMetadata], *, paged: bool = False) -> dict[str, float]:
    """Ranked chunks -> corpus-document (or page) scores (best chunk wins); ranks are kept as strictly decreasing
    scores."""
    scores: dict[str, float] = {}
    for meta in ranked:
        doc_id = chunk_corpus_id(meta, paged=paged)
        if doc_id not in scores:
            scores[doc_id] = float(len(ranked) - len(scores))
    return scores or {"__none__": 0.0}


def _percentiles(values: list[float]) -> dict[str, float]:
    ordered = sorted(values)
    if not ordered:
        return {"p50": 0.0, "p95": 0.0, "p99": 0.0}
    return {
        "p50": round(ordered[len(ordered) // 2], 3),
        "p95": round(ordered[min(len(ordered) - 1, int(len(ordered) * 0.95))], 3),
        "p99": round(ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))], 3),
    }
