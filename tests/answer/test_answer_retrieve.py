"""The retrieve contract (docs/answers.md) on the real embedded store with the packaged httpx documents.

Relevance is the all-MiniLM-L6-v2 cosine clipped to 0..1; thresholds written for other embedding
models (0.6, an average of 0.8 for text-embedding-3-small) do not carry over, so the thresholds here
come from the config (``answer.min_relevance``). The contract's latency is measured by bench/answers.py.
"""

from __future__ import annotations

import hashlib
from datetime import date

import pytest
from support.answer_fixtures import MARKDOWN_SAMPLES, REQUIRED_KEYS, SEED_003_METADATA

from ragstream.errors import InvalidQueryError, VectorDBUnavailableError
from ragstream.models import LoadedDocument, Page

DOC_TYPES = {"core-rules", "faq", "team-rules", "ops", "killzone"}


@pytest.fixture
def index(make_index):
    rs = make_index(ingest={"required_metadata": REQUIRED_KEYS})
    report = rs.ingest(MARKDOWN_SAMPLES, metadata=SEED_003_METADATA)
    assert report.documents_failed == 0
    return rs


def test_high_relevance(index):
    ctx = index.retrieve("What exceptions does httpx raise?", "test:user1", max_chunks=1)
    assert ctx.meets_threshold
    assert ctx.avg_relevance >= 0.8
    assert ctx.document_chunks[0].metadata["section"] == "Exceptions"
    wide = index.retrieve("How do I set a timeout on a request?", "test:user1")
    assert wide.meets_threshold and 1 <= len(wide.document_chunks) <= index.config.answer.max_chunks
    assert wide.avg_relevance >= index.config.answer.min_relevance
    assert "timeout" in wide.document_chunks[0].metadata["section"].lower()


def test_low_relevance_returns_empty(index):
    ctx = index.retrieve("How do I cook pasta?", "test:user1")
    assert ctx.meets_threshold is False
    assert ctx.document_chunks == [] and ctx.relevance_scores == [] and ctx.total_chunks == 0
    assert ctx.avg_relevance < 0.6


def test_chunk_ordering_and_limits(index):
    ctx = index.retrieve("client timeouts and connection pool limits", "test:user1", max_chunks=4)
    scores = [chunk.relevance_score for chunk in ctx.document_chunks]
    assert len(scores) >= 2
    assert scores == sorted(scores, reverse=True)
    assert ctx.relevance_scores == scores
    assert len(ctx.document_chunks) <= 4
    assert all(0.0 <= score <= 1.0 for score in scores)
    strict = index.retrieve("client timeouts and connection pool limits", "test:user1", min_relevance=0.55)
    assert all(score >= 0.55 for score in strict.relevance_scores)


def test_metadata_completeness(index, tmp_path):
    ctx = index.retrieve("How do I stream a response?", "test:user1")
    assert ctx.document_chunks
    for chunk in ctx.document_chunks:
        assert chunk.metadata["source"] == SEED_003_METADATA["source"]
        assert chunk.metadata["doc_type"] in DOC_TYPES
        date.fromisoformat(chunk.metadata["last_update_date"])
        assert chunk.position_in_doc == chunk.metadata["chunk_index"]
    fresh = tmp_path / "new-rules.md"
    fresh.write_text("# Barricades\n\nAn operative behind a barricade is in cover.\n")
    report = index.ingest([fresh], metadata={"source": "HTTPX documentation"})
    assert report.documents_failed == 1 and report.documents_processed == 0
    assert report.failures[0].code == "invalid_document"
    assert "doc_type" in report.failures[0].message and "last_update_date" in report.failures[0].message


def _doc(text: str) -> LoadedDocument:
    return LoadedDocument(document_id="11111111-1111-1111-1111-111111111111", source="rules/movement.md",
                          title="Movement rules", mime="text/markdown", checksum=hashlib.sha256(text.encode()).hexdigest(),
                          size_bytes=len(text), pages=(Page(text=text),), metadata=SEED_003_METADATA)


def test_reingest_replaces_embeddings(index):
    old = _doc("# Movement\n\n## Movement Phase\n\nDuring the movement phase each operative may move up to six inches.")
    index.ingest_documents([old])
    before = index.retrieve("How far can an operative move during the movement phase?", "test:user1", max_chunks=1)
    assert before.document_chunks[0].document_id == old.document_id
    new = _doc("# Movement\n\n## Movement Phase\n\nDuring the movement phase each operative may dash up to three inches.")
    report = index.ingest_documents([new])
    assert (report.documents_processed, report.documents_failed) == (1, 0)
    chunks = index.document_chunks(old.document_id)
    assert chunks and all("three inches" in chunk.text for chunk in chunks)
    after = index.retrieve("How far can an operative move during the movement phase?", "test:user1", max_chunks=1)
    assert "three inches" in after.document_chunks[0].text
    assert after.context_id != before.context_id  # the re-ingest invalidated the cached result


def test_invalid_queries(index):
    with pytest.raises(InvalidQueryError):
        index.retrieve("   ", "test:user1")
    with pytest.raises(InvalidQueryError):
        index.retrieve("x" * (index.config.limits.max_query_chars + 1), "test:user1")


def test_a_store_failure_raises_vector_db_unavailable(make_index):
    """(A slow store and a hung one, both real: tests/store/test_edge_process_waits.py.)"""
    rs = make_index()
    rs.ingest(MARKDOWN_SAMPLES[:1])
    rs.store.close()  # a real failure: the engine's shard is gone
    with pytest.raises(VectorDBUnavailableError):
        rs.retrieve("timeouts again", "test:broken")
