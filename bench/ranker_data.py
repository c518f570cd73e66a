"""Shared by bench/train_ranker.py and bench/ranker_report.py: the question sets by name, their tune/report
halves, their indexes, and the cache of each question's ReRanker candidates (the learned ranker's inputs).

A set is named by a folder of ``bench/datasets`` (``httpx-docs``), ``scifact`` (``../shared/data/scifact``) or
a path to any BEIR folder. Halves: ``qrels/dev.tsv`` is the tune half and ``qrels/test.tsv`` the report half;
a set with only ``qrels/train.tsv`` (SciFact) is split by position in its sorted query ids: even positions tune,
odd positions report (the split docs/ranking.md uses throughout).
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ragstream import Ragstream, load_config
from ragstream.evaluation.beir import DOC_ID_KEY, BeirDataset, load_beir
from ragstream.models import Chunk
from ragstream.pipeline.query_pieces import normalized_query, search_body
from ragstream.pipeline.stages import RERANKER, RETRIEVAL
from ragstream.retrieval.ranker_features import Candidate, candidates_of

BENCH = Path(__file__).resolve().parent
SHARED = BENCH.parents[1] / "shared" / "data"
TUNE, REPORT = "tune", "report"
CUTOFF = 10


@dataclass(frozen=True)
class QuestionSet:
    """A named BEIR set and the query ids of its two halves."""

    name: str
    path: Path
    split: str
    """The qrels file holding every judged question (all, or train)."""
    halves: dict[str, list[str]]

    def dataset(self, half: str | None = None) -> BeirDataset:
        """The set's questions (only ``half``'s, when given) with their judgements."""
        full = load_beir(self.path, self.split)
        if half is None:
            return full
        keep = set(self.halves[half])
        return BeirDataset(name=full.name, corpus_path=full.corpus_path,
                           queries={q: t for q, t in full.queries.items() if q in keep},
                           qrels={q: r for q, r in full.qrels.items() if q in keep}, files_dir=full.files_dir)


def question_set(name: str) -> QuestionSet:
    """The set ``name`` (see the module's docstring)."""
    path = Path(name)
    if not path.is_dir():
        path = SHARED / name if (SHARED / name).is_dir() else BENCH / "datasets" / name
    qrels = path / "qrels"
    if (qrels / "dev.tsv").is_file() and (qrels / "test.tsv").is_file():
        halves = {TUNE: _ids(qrels / "dev.tsv"), REPORT: _ids(qrels / "test.tsv")}
        split = "all" if (qrels / "all.tsv").is_file() else "test"
        if split == "test":  # no all.tsv: a split holding both halves is needed to load either
            raise SystemExit(f"{path}: qrels/all.tsv (dev and test together) is missing")
        return QuestionSet(path.name, path, split, halves)
    ordered = _ids(qrels / "train.tsv")
    return QuestionSet(path.name, path, "train", {TUNE: ordered[0::2], REPORT: ordered[1::2]})


def _ids(qrels: Path) -> list[str]:
    return sorted({line.split("\t")[0] for line in qrels.read_text(encoding="utf-8").splitlines()[1:] if line.strip()})


def open_index(index_root: Path, qs: QuestionSet, **config: Any) -> Ragstream:
    """The set's index under ``index_root`` (built on first use; an unchanged corpus is skipped)."""
    rs = Ragstream(load_config(data_dir=index_root / qs.name, **config))
    rs.ingest_documents(qs.dataset().documents())
    return rs


def page_of(chunk: Chunk) -> str:
    """The corpus id of a chunk's page (what the qrels judge)."""
    return str(chunk.metadata.extra.get(DOC_ID_KEY, chunk.metadata.document_id))


def collect(rs: Ragstream, dataset: BeirDataset) -> dict[str, Any]:
    """Per question: the ReRanker stage's candidates as its learned path reads them (chunks, fused, retriever and
    cross-encoder scores), and the pages of the hybrid and blended orders. The pipeline runs with the blend."""
    rows: dict[str, Any] = {}
    head_size = rs.config.reranker.top_n
    for qid in sorted(dataset.queries):
        sp = rs.run_pipeline(dataset.queries[qid], until=RERANKER.name)
        view = sp.views_by_stage[RETRIEVAL.entry][: rs.config.pipeline.N2_RERANK_TOP_K]
        chunks = sp.chunks(view)
        rows[qid] = {
            "query": normalized_query(search_body(sp)),
            "chunks": [chunk.model_dump(mode="json") for chunk in chunks],
            "fused": sp.scores_by_stage[RETRIEVAL.entry][: len(view)],
            "retrievers": {cid: [s.dense, s.bm25] for cid, s in sp.retriever_scores.items() if cid in set(view)},
            "logits": [sp.rerank.cross_scores[cid] for cid in view[:head_size] if cid in sp.rerank.cross_scores],
            "head": head_size,
            "hybrid": pages([page_of(c) for c in sp.chunks(sp.views_by_stage[RETRIEVAL.entry])]),
            "blend": pages([page_of(c) for c in sp.chunks(sp.views_by_stage[RERANKER.entry])]),
        }
    return rows


def candidates(row: dict[str, Any]) -> list[Candidate]:
    """A cached question's candidates, built as the stage builds them."""
    chunks = [Chunk.model_validate(chunk) for chunk in row["chunks"]]
    retrievers = {cid: (pair[0], pair[1]) for cid, pair in row["retrievers"].items()}
    return candidates_of(chunks, row["fused"], retrievers, row["logits"])


def cached_rows(cache: Path, rs_factory: Any, qs: QuestionSet, half: str) -> dict[str, Any]:
    """The cached candidates of ``qs``'s ``half`` (collected once through ``rs_factory()`` and kept in ``cache``)."""
    path = cache / f"{qs.name}.{half}.json"
    if path.is_file():
        loaded: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
        return loaded
    with rs_factory() as rs:
        rows = collect(rs, qs.dataset(half))
    cache.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(rows), encoding="utf-8")
    return rows


def pages(ids: Sequence[str]) -> list[str]:
    """Page ids in order of first appearance."""
    return list(dict.fromkeys(ids))


def page_metrics(ranking: Sequence[str], relevant: dict[str, int]) -> dict[str, float]:
    """hit@1 (right page first), MRR and NDCG@10 (graded) of one page ranking."""
    gains = [relevant.get(page, 0) for page in ranking]
    dcg = sum((2**g - 1) / math.log2(i + 2) for i, g in enumerate(gains[:CUTOFF]))
    ideal = sorted(relevant.values(), reverse=True)[:CUTOFF]
    idcg = sum((2**g - 1) / math.log2(i + 2) for i, g in enumerate(ideal))
    first = next((i for i, g in enumerate(gains) if g > 0), None)
    return {"hit@1": float(bool(gains and gains[0] > 0)), "mrr": 1.0 / (first + 1) if first is not None else 0.0,
            "ndcg@10": dcg / idcg if idcg else 0.0}


def mean_metrics(rankings: dict[str, Sequence[str]], qrels: dict[str, dict[str, int]]) -> dict[str, float]:
    """:func:`page_metrics` averaged over the questions of ``rankings``."""
    totals = {"hit@1": 0.0, "mrr": 0.0, "ndcg@10": 0.0}
    for qid, ranking in rankings.items():
        for name, value in page_metrics(ranking, qrels[qid]).items():
            totals[name] += value
    return {name: round(value / max(1, len(rankings)), 4) for name, value in totals.items()}
