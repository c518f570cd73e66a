"""Dense, BM25 and hybrid search with filters, thresholds, top_k and the BM25 fallback.

The index embeds with the hash embedder (fast tier); only the score calibration of the real model
is checked on it (``slow``).
"""

from __future__ import annotations

import pytest
from support.index_fixtures import SAMPLES

from ragstream import Ragstream, load_config
from ragstream.errors import InvalidQueryError


@pytest.fixture(scope="module")
def sample_index(tmp_path_factory, hash_embedder):
    data_dir = tmp_path_factory.mktemp("index")
    rs = Ragstream(load_config(data_dir=data_dir), embedder=hash_embedder)
    report = rs.ingest([SAMPLES])
    assert report.documents_failed == 0
    yield rs
    rs.close()


@pytest.mark.parametrize("mode", ["hybrid", "dense", "bm25"])
def test_each_mode_finds_the_timeouts_page(sample_index, mode):
    result = sample_index.search("How do I configure a timeout for requests?", mode=mode, top_k=5)
    assert result.mode == mode and result.fallback_reason is None
    assert [hit.rank for hit in result.hits] == [1, 2, 3, 4, 5]
    scores = [hit.score for hit in result.hits]
    assert scores == sorted(scores, reverse=True)
    assert any("timeouts" in hit.chunk.metadata.source for hit in result.hits[:3])
    top = result.hits[0].chunk
    assert top.text and top.metadata.document_id and top.metadata.checksum and top.metadata.created_at
    assert {"total"} <= set(result.latencies_ms)


def test_hybrid_reports_both_component_scores_and_latencies(sample_index):
    result = sample_index.search("AsyncClient streaming responses", mode="hybrid")
    assert {"embed", "dense", "bm25", "fusion", "total"} <= set(result.latencies_ms)
    assert any(hit.dense_score is not None and hit.bm25_score is not None for hit in result.hits)


def test_alpha_fusion_scores_are_normalised(make_fast_index):
    rs = make_fast_index(retrieval={"fusion": "alpha", "alpha": 0.7})
    rs.ingest([SAMPLES / "httpx-timeouts.md", SAMPLES / "httpx-async.md"])
    result = rs.search("pool timeout", mode="hybrid")
    assert result.hits and all(0.0 <= hit.score <= 1.0 for hit in result.hits)


def test_dbsf_normalisation_is_configurable_and_changes_the_fused_scores(make_fast_index):
    from ragstream.config import RetrievalConfig
    from ragstream.retrieval.searcher import Searcher

    rs = make_fast_index()
    rs.ingest([SAMPLES / "httpx-timeouts.md", SAMPLES / "httpx-async.md"])
    scores = {}
    for how in ("min_max", "dbsf"):
        searcher = Searcher(rs.store, rs.embedder, RetrievalConfig(normalisation=how), rs.snapshots,
                            rs.config.limits.max_query_chars)
        result = searcher.search("pool timeout", mode="hybrid")
        assert result.hits and all(0.0 <= hit.score <= 1.0 for hit in result.hits)
        scores[how] = [hit.score for hit in result.hits]
    assert scores["min_max"] != scores["dbsf"]


def test_top_k_and_threshold(sample_index):
    assert len(sample_index.search("request", top_k=3).hits) == 3
    query = "How do I configure a timeout?"
    scores = [hit.score for hit in sample_index.search(query, mode="dense").hits]
    cut = scores[2]
    strict = sample_index.search(query, mode="dense", score_threshold=cut)
    assert strict.hits and all(hit.score >= cut for hit in strict.hits)
    assert [hit.score for hit in strict.hits] == [score for score in scores if score >= cut]
    assert sample_index.search("recipe for pasta carbonara", mode="dense", score_threshold=0.6).hits == []


@pytest.mark.slow
def test_real_model_score_calibration(make_index):
    """all-MiniLM-L6-v2 cosines: an on-topic question reaches 0.5, an off-topic one stays under 0.6."""
    rs = make_index()
    rs.ingest([SAMPLES])
    strict = rs.search("How do I configure a timeout?", mode="dense", score_threshold=0.5)
    assert strict.hits and all(hit.score >= 0.5 for hit in strict.hits)
    assert rs.search("recipe for pasta carbonara", mode="dense", score_threshold=0.6).hits == []


@pytest.mark.parametrize("flag", ["has_code", "has_equations"])
def test_boolean_flag_filters(sample_index, flag):
    on = sample_index.search("client request example", top_k=20, filters={flag: True}).hits
    off = sample_index.search("client request example", top_k=20, filters={flag: False}).hits
    assert all(getattr(hit.chunk.metadata, flag) for hit in on)
    assert all(not getattr(hit.chunk.metadata, flag) for hit in off)
    if flag == "has_code":
        assert on, "the httpx docs have code examples"


def test_metadata_filters(sample_index):
    pdf = next(r for r in sample_index.documents() if r.mime == "application/pdf")
    hits = sample_index.search("airworthiness directive", top_k=10, filters={"document_id": pdf.document_id}).hits
    assert hits and all(hit.chunk.metadata.document_id == pdf.document_id for hit in hits)
    assert all(hit.chunk.metadata.page is not None for hit in hits)
    page_two = sample_index.search("airworthiness", filters={"document_id": pdf.document_id, "page": 2}).hits
    assert page_two and all(hit.chunk.metadata.page == 2 for hit in page_two)

    source = next(r.source for r in sample_index.documents() if r.source.endswith("httpx-async.md"))
    assert all(h.chunk.metadata.source == source for h in sample_index.search("client", filters={"source": source}).hits)

    section_hit = sample_index.search("timeout", filters={"source": next(
        r.source for r in sample_index.documents() if r.source.endswith("httpx-timeouts.md"))}).hits[0]
    section = section_hit.chunk.metadata.section
    chapter = section_hit.chunk.metadata.header_path.split(" > ")[0]
    assert all(h.chunk.metadata.section == section for h in sample_index.search("timeout", filters={"section": section}).hits)
    assert all(h.chunk.metadata.header_path.startswith(chapter) for h in sample_index.search("timeout", filters={"chapter": chapter}).hits)


def test_invalid_queries_raise(sample_index):
    with pytest.raises(InvalidQueryError):
        sample_index.search("   ")
    with pytest.raises(InvalidQueryError):
        sample_index.search("x" * 2001)


@pytest.mark.parametrize("broken_embedding", [
    # No endpoint configured: the embedder cannot even be built (fails at once, no model involved).
    pytest.param({"provider": "openai", "base_url": None}, id="openai-without-url"),
    # The real loader on a missing model directory (imports torch and sentence-transformers).
    pytest.param({"model": "no-such-model-dir"}, id="missing-local-model", marks=pytest.mark.slow),
])
def test_bm25_fallback_when_the_embedder_is_unavailable(tmp_path, hash_embedder, broken_embedding):
    data_dir = tmp_path / "index"
    with Ragstream(load_config(data_dir=data_dir), embedder=hash_embedder) as rs:
        rs.ingest([SAMPLES / "httpx-timeouts.md"])
    if "model" in broken_embedding:
        broken_embedding = {"model": str(tmp_path / broken_embedding["model"])}
    broken = load_config(data_dir=data_dir, embedding=broken_embedding)
    with Ragstream(broken) as rs:
        result = rs.search("timeout configuration")
    assert result.requested_mode == "hybrid" and result.mode == "bm25"
    assert "embedder unavailable" in result.fallback_reason
    assert result.hits
