"""The answers the faithfulness benchmark checks: the packaged Qwen's answers, cached to a file.

Used by ``bench/faithfulness.py generate``. For each corpus the documents are indexed (SciFact: the
documents judged relevant for the chosen claims plus ``distractors`` others; a documentation corpus:
all of it), the packaged Qwen2.5-Coder-0.5B answers each question through ``Ragstream.ask``, and one
JSON line per answer is appended to the cache: the question, the answer text, how it was made, its
attachments (text, title, relevance), its citations and confidence. A question already in the cache
is not asked again, so an interrupted run resumes.
"""

from __future__ import annotations

import json
import sys
import tempfile
import time
from itertools import islice
from pathlib import Path
from typing import Any

from answers import start_qwen

from ragstream import Ragstream, load_config
from ragstream.answer.retrieve_contract import to_document_chunk
from ragstream.evaluation.beir import DOC_ID_KEY, load_beir

BENCH = Path(__file__).resolve().parent
CORPORA: dict[str, tuple[Path, str, int]] = {
    "scifact": (BENCH.parents[1] / "shared" / "data" / "scifact", "train", 200),
    "httpx-docs": (BENCH / "datasets" / "httpx-docs", "all", 0),
    "fastapi-docs": (BENCH / "datasets" / "fastapi-docs", "all", 0),
}
"""corpus -> (BEIR folder, split, questions skipped): SciFact train claims 201 on were used by no
earlier tuning (bench/answers.py chose its settings on claims 1-100 and checked them on 101-200)."""
QWEN_MODEL = "qwen2.5-coder-0.5b"
GENERATION_SECONDS = 900.0
"""The deadline of one answer: on a shared 2-core machine the 0.5B model may take minutes, and an answer
that ran out of time would be the extractive stand-in, not the model's."""


def cached_keys(cache: Path) -> set[tuple[str, str]]:
    """(corpus, question id) of every answer already in the cache."""
    if not cache.exists():
        return set()
    return {(record["corpus"], record["qid"]) for record in read_cache(cache)}


def read_cache(cache: Path) -> list[dict[str, Any]]:
    """Every cached answer record."""
    with cache.open(encoding="utf-8") as lines:
        return [json.loads(line) for line in lines if line.strip()]


def generate(corpora: list[str], cache: Path, *, questions: int, distractors: int, n_ctx: int, n_threads: int) -> dict:
    """Ask the packaged Qwen ``questions`` questions of each corpus; append the answers to ``cache``."""
    done = cached_keys(cache)
    server, base_url = start_qwen(n_ctx, n_threads)
    report: dict[str, Any] = {}
    try:
        for corpus in corpora:
            report[corpus] = _generate_corpus(corpus, cache, done, questions, distractors, base_url, n_ctx)
    finally:
        server.terminate()
        server.wait()
    return report


def _generate_corpus(corpus: str, cache: Path, done: set[tuple[str, str]], questions: int, distractors: int,
                     base_url: str, n_ctx: int) -> dict[str, Any]:
    folder, split, skip = CORPORA[corpus]
    dataset = load_beir(folder, split)
    query_ids = sorted(dataset.queries)[skip : skip + questions]
    todo = [qid for qid in query_ids if (corpus, qid) not in done]
    if not todo:
        return {"asked": 0, "cached": len(query_ids)}
    relevant = {qid: sorted(doc for doc, score in dataset.qrels.get(qid, {}).items() if score > 0) for qid in query_ids}
    if corpus == "scifact":
        wanted = {doc for docs in relevant.values() for doc in docs}
        others = islice((d for d in dataset.documents() if d.metadata[DOC_ID_KEY] not in wanted), distractors)
        documents = [d for d in dataset.documents() if d.metadata[DOC_ID_KEY] in wanted] + list(others)
    else:
        documents = list(dataset.documents())
    llm = {"base_url": base_url, "model": QWEN_MODEL, "context_window": n_ctx, "timeout_seconds": GENERATION_SECONDS}
    seconds: list[float] = []
    with tempfile.TemporaryDirectory(prefix="ragstream-faithfulness-") as scratch:
        settings = load_config(data_dir=Path(scratch), llm=llm, answer={"deadline_seconds": GENERATION_SECONDS})
        with Ragstream(settings) as rs:
            rs.ingest_documents(documents)
            for index, qid in enumerate(todo, start=1):
                started = time.perf_counter()
                answer = rs.ask(dataset.queries[qid])
                seconds.append(time.perf_counter() - started)
                record = _record(corpus, qid, dataset.queries[qid], answer, relevant[qid], _attachments(rs, answer))
                with cache.open("a", encoding="utf-8") as out:
                    out.write(json.dumps(record, ensure_ascii=False) + "\n")
                print(f"{corpus} {index}/{len(todo)} {qid}: {record['mode']} {seconds[-1]:.1f}s", file=sys.stderr,
                      flush=True)
    return {"asked": len(todo), "documents_indexed": len(documents),
            "answer_seconds_mean": round(sum(seconds) / len(seconds), 1)}


def _attachments(rs: Ragstream, answer: Any) -> list[dict[str, Any]]:
    """The answer's attachments in prompt order, as DocumentChunk dicts (relevance: the cited one's, else the mean)."""
    ids = answer.metadata["context_chunk_ids"]
    found = rs.store.fetch(ids)
    scores = {c.chunk_id: c.score for c in answer.citations if c.matched and c.score is not None}
    return [to_document_chunk(found[chunk_id], scores.get(chunk_id, answer.metadata["avg_relevance"])).model_dump()
            for chunk_id in ids]


def _record(corpus: str, qid: str, question: str, answer: Any, relevant: list[str],
            chunks: list[dict[str, Any]]) -> dict[str, Any]:
    """One answer as the checker needs it: no index is needed to check it again."""
    meta = answer.metadata
    return {
        "corpus": corpus, "qid": qid, "question": question, "answer": answer.answer, "mode": meta["mode"],
        "degraded_reason": meta.get("degraded_reason"), "truncated": bool(meta.get("truncated")),
        "relevant": relevant, "attachments": chunks,
        "citations": [c.model_dump(include={"marker", "matched", "match_type", "number", "chunk_id", "document_id",
                                            "score"}) for c in answer.citations],
        "confidence": answer.confidence.model_dump(), "avg_relevance": meta["avg_relevance"],
        "generation_ms": meta["latencies_ms"].get("generation"),
    }
