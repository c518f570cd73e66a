"""The ``qdrant`` store backend (a Qdrant server through qdrant-client): snapshots, filters, reads,
persistence, and BM25/dense scores identical to the embedded store's on the same points.

Runs on qdrant-client's local mode always and on a real server when ``RAGSTREAM_TEST_QDRANT_URL``
is set (``qdrant_backend.py``).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from hash_embedder import HashEmbedder
from index_fixtures import SAMPLES
from qdrant_backend import QdrantTarget

from ragstream import Ragstream, load_config
from ragstream.config import StoreConfig
from ragstream.errors import ConfigError, VectorDBUnavailableError
from ragstream.models import Chunk, ChunkMetadata, SearchHit
from ragstream.store.base import Snapshot
from ragstream.store.qdrant_edge import QdrantEdgeStore
from ragstream.store.qdrant_server import QdrantServerStore

TEXT = "connection pool timeouts for the client"
ALL = Snapshot(sequence=1, max_generation=10**9, uncommitted=frozenset())


def _config(target: QdrantTarget) -> StoreConfig:
    return StoreConfig(qdrant=target.settings())


@pytest.fixture
def store(qdrant: QdrantTarget, hash_embedder: HashEmbedder) -> Iterator[QdrantServerStore]:
    opened = QdrantServerStore(qdrant.url, hash_embedder.dimensions, _config(qdrant))
    yield opened
    opened.close()


def _chunk(document_id: str, generation: int, index: int = 0, text: str = TEXT, **metadata) -> Chunk:
    fields = {"section": "", "header_path": "", "page": None, "has_code": False, "extra": {}, **metadata}
    meta = ChunkMetadata(document_id=document_id, source=document_id, title=document_id, chunk_index=index,
                         word_count=len(text.split()), has_equations=False, checksum="c", content_hash=f"h{index}",
                         mime="text/plain", created_at="2026-01-01T00:00:00+00:00", **fields)
    return Chunk(chunk_id=f"00000000-0000-0000-{index:04d}-{generation:012d}", text=f"{text} {document_id}", metadata=meta)


def same_ranking(ours: list[tuple[str, float]], theirs: list[tuple[str, float]], rtol: float = 1e-5,
                 atol: float = 1e-6) -> None:
    """Assert two rankings of (id, score) are the same up to the order of tied scores: equal scores
    position by position and, in each group of tied scores but the last (which a limit may cut),
    the same ids. ``atol`` covers float32 noise on tiny scores (the IDF of a term in nearly every
    chunk is ln(1 + x) for a small x, which Qdrant Edge and qdrant-client compute differently)."""
    assert len(ours) == len(theirs)
    assert np.allclose([score for _, score in ours], [score for _, score in theirs], rtol=rtol, atol=atol), \
        " ".join(f"{a:.6g}/{b:.6g}" for (_, a), (_, b) in zip(ours, theirs, strict=True))
    groups: list[list[int]] = []
    for position, (_, score) in enumerate(ours):
        if groups and np.isclose(score, ours[groups[-1][0]][1], rtol=rtol, atol=atol):
            groups[-1].append(position)
        else:
            groups.append([position])
    for group in groups[:-1]:
        assert {ours[i][0] for i in group} == {theirs[i][0] for i in group}


def _ranking(hits: list[SearchHit]) -> list[tuple[str, float]]:
    """A search result as (document#chunk_index, score): the same chunk in two indexes has the same key."""
    return [(f"{hit.chunk.metadata.document_id}#{hit.chunk.metadata.chunk_index}", hit.score) for hit in hits]


def _generations(hits: list[tuple[Chunk, float]]) -> set[int]:
    return {int(chunk.chunk_id.rsplit("-", 1)[1]) for chunk, _ in hits}


def test_searches_return_exactly_what_the_snapshot_sees(store: QdrantServerStore, hash_embedder: HashEmbedder):
    vector = hash_embedder.embed_queries([TEXT])[0]
    for generation, document_id in [(1, "a"), (2, "b"), (3, "a"), (4, "b")]:
        store.upsert([_chunk(document_id, generation)], np.array([vector]), generation)
    store.flush()
    cases = {
        Snapshot(sequence=5, max_generation=3, uncommitted=frozenset({1})): {2, 3},
        Snapshot(sequence=4, max_generation=4, uncommitted=frozenset({3, 4})): {1, 2},
        Snapshot(sequence=9, max_generation=4, uncommitted=frozenset()): {1, 2, 3, 4},
    }
    for snapshot, visible in cases.items():
        assert _generations(store.search_dense(vector, 10, None, snapshot)) == visible
        assert _generations(store.search_bm25(TEXT, 10, None, snapshot)) == visible
        assert _generations(store.search_dense(vector, 10, {"document_id": "a"}, snapshot)) == visible & {1, 3}


def test_filters_counts_chunks_and_vectors(store: QdrantServerStore, hash_embedder: HashEmbedder):
    chunks = [
        _chunk("a", 1, 0, "plain prose about pools"),
        _chunk("a", 1, 1, "code sample for pools", has_code=True, page=2, header_path="Intro > Pools", section="Pools"),
        _chunk("b", 2, 0, "pools in another team's document", extra={"team": "infra", "year": 2024}),
    ]
    vectors = hash_embedder.embed_documents([chunk.text for chunk in chunks])
    store.upsert(chunks[:2], vectors[:2], 1)
    store.upsert(chunks[2:], vectors[2:], 2)
    query = hash_embedder.embed_queries(["pools"])[0]

    def ids(filters) -> set[str]:
        return {chunk.chunk_id for chunk, _ in store.search_dense(query, 10, filters, ALL)}

    assert ids({"has_code": True}) == {chunks[1].chunk_id}
    assert ids({"has_code": False}) == {chunks[0].chunk_id, chunks[2].chunk_id}
    assert ids({"page": 2, "chapter": "Intro"}) == {chunks[1].chunk_id}
    assert ids({"document_id": ["a", "b"]}) == {chunk.chunk_id for chunk in chunks}
    assert ids({"team": "infra"}) == ids({"year": 2024}) == {chunks[2].chunk_id}
    assert {chunk.chunk_id for chunk, _ in store.search_bm25("pools", 10, {"team": "infra"}, ALL)} == {chunks[2].chunk_id}
    assert store.search_bm25("the of and", 10, None, ALL) == []  # stopwords only: no query terms

    assert store.count() == 3 and store.count({"document_id": "a"}) == 2 and store.count({"has_code": True}) == 1
    assert store.chunks_of("a", 1) == chunks[:2]
    points = store.points_of("a", 1)
    assert [chunk for chunk, _ in points] == chunks[:2]
    for (_, stored), given in zip(points, vectors[:2], strict=True):
        assert np.allclose(stored, given / np.linalg.norm(given), atol=1e-6)
    assert store.chunks_of("a", 2) == [] and store.points_of("b", 1) == []

    store.delete_generation("a", 1)
    assert store.count() == 1 and store.chunks_of("a", 1) == []
    assert store.info()["points"] == 1 and store.info()["backend"] == "qdrant"


def test_bm25_and_dense_scores_equal_the_embedded_store(store: QdrantServerStore, hash_embedder: HashEmbedder,
                                                        tmp_path: Path):
    """Same points in both stores: the same hits in the same order with the same scores."""
    texts = [path.read_text(encoding="utf-8") for path in sorted(SAMPLES.glob("*.md"))]
    paragraphs = [paragraph for text in texts for paragraph in text.split("\n\n") if len(paragraph.split()) > 5]
    chunks = [_chunk(f"doc{i % 7}", 1, i, paragraph) for i, paragraph in enumerate(paragraphs)]
    vectors = hash_embedder.embed_documents([chunk.text for chunk in chunks])
    edge = QdrantEdgeStore(tmp_path / "edge", hash_embedder.dimensions, StoreConfig())
    for target in (edge, store):
        target.upsert(chunks, vectors, 1)
    assert len(chunks) > 50
    for query in ["How do I configure a timeout?", "AsyncClient streaming responses", "proxy authentication",
                  "raise for status exception", "connection pool limits"]:
        for search in ("search_bm25", "search_dense"):
            if search == "search_bm25":
                ours, theirs = store.search_bm25(query, 20, None, ALL), edge.search_bm25(query, 20, None, ALL)
            else:
                vector = hash_embedder.embed_queries([query])[0]
                ours, theirs = store.search_dense(vector, 20, None, ALL), edge.search_dense(vector, 20, None, ALL)
            assert theirs
            same_ranking([(chunk.chunk_id, score) for chunk, score in ours], [(chunk.chunk_id, score) for chunk, score in theirs])
    edge.close()


def test_reopening_keeps_points_and_checks_the_collection(tmp_path: Path, hash_embedder: HashEmbedder):
    path = str(tmp_path / "local")
    store = QdrantServerStore(path, hash_embedder.dimensions, StoreConfig())
    store.upsert([_chunk("a", 1)], hash_embedder.embed_documents([TEXT]), 1)
    with pytest.raises(VectorDBUnavailableError, match="open in another ragstream process"):
        QdrantServerStore(path, hash_embedder.dimensions, StoreConfig())
    store.close()
    store = QdrantServerStore(path, hash_embedder.dimensions, StoreConfig())
    assert store.count() == 1 and store.chunks_of("a", 1)[0].text.startswith(TEXT)
    store.close()
    with pytest.raises(ConfigError, match="holds 256-dimensional vectors"):
        QdrantServerStore(path, 8, StoreConfig())
    QdrantServerStore(path, hash_embedder.dimensions, StoreConfig()).close()  # the refused open released the folder


def test_unreachable_server_is_a_clear_unavailable_error(hash_embedder: HashEmbedder):
    # Port 9 (discard) on loopback: nothing listens, the connection is refused at once.
    config = StoreConfig(qdrant={"timeout_seconds": 2})
    with pytest.raises(VectorDBUnavailableError, match=re.escape("cannot open Qdrant collection 'ragstream' at http://127.0.0.1:9")):
        QdrantServerStore("http://127.0.0.1:9", hash_embedder.dimensions, config)


def test_sample_corpus_ranks_like_the_embedded_store(qdrant: QdrantTarget, hash_embedder: HashEmbedder,
                                                     tmp_path: Path):
    """A whole index on the qdrant backend returns the embedded index's top results in every mode."""
    edge = Ragstream(load_config(data_dir=tmp_path / "edge", reranker={"backend": "none"}), embedder=hash_embedder)
    server = Ragstream(load_config(data_dir=tmp_path / "server", reranker={"backend": "none"}, **qdrant.overrides()),
                       embedder=hash_embedder)
    for rs in (edge, server):
        assert rs.ingest([SAMPLES]).documents_failed == 0
    assert server.stats()["backend"] == "qdrant" and server.stats()["points"] == edge.stats()["points"]
    for query in ["How do I configure a timeout for requests?", "AsyncClient streaming responses",
                  "what exceptions can httpx raise", "federal register rule"]:
        for mode in ("bm25", "dense", "hybrid"):
            ours = server.search(query, mode=mode, top_k=10).hits
            theirs = edge.search(query, mode=mode, top_k=10).hits
            assert len(theirs) == 10
            same_ranking(_ranking(ours), _ranking(theirs))
    edge.close()
    server.close()


def test_real_corpus_on_the_real_model_ranks_like_the_embedded_store(qdrant: QdrantTarget, embedder,
                                                                     shared_data: Path, tmp_path: Path):
    """The httpx documentation (real Markdown) on the packaged model: the qdrant backend returns the
    embedded store's top 10 in bm25, dense and hybrid mode."""
    corpus = shared_data / "markdown_docs"
    edge = Ragstream(load_config(data_dir=tmp_path / "edge", reranker={"backend": "none"}), embedder=embedder)
    server = Ragstream(load_config(data_dir=tmp_path / "server", reranker={"backend": "none"}, **qdrant.overrides()),
                       embedder=embedder)
    for rs in (edge, server):
        assert rs.ingest([corpus]).documents_processed > 10
    for query in ["How do I set a timeout on a request?", "stream a large response body", "HTTP/2 support",
                  "client certificates for TLS", "retry failed connections", "event hooks for logging requests"]:
        for mode in ("bm25", "dense", "hybrid"):
            ours = server.search(query, mode=mode, top_k=10).hits
            theirs = edge.search(query, mode=mode, top_k=10).hits
            assert len(theirs) == 10
            same_ranking(_ranking(ours), _ranking(theirs))
    edge.close()
    server.close()


def test_a_server_of_an_unsupported_version_is_named_in_a_warning(caplog: pytest.LogCaptureFixture):
    from importlib.metadata import version

    from ragstream.store.qdrant_server import _check_version

    major, minor = (int(part) for part in version("qdrant-client").split(".")[:2])
    _check_version(f"v{major}.{minor + 1}.0", "http://qdrant:6333")
    _check_version(f"{major}.{minor - 1}.4", "http://qdrant:6333")
    assert not caplog.records
    _check_version(f"{major}.{minor + 3}.0", "http://qdrant:6333")
    assert "the Qdrant server at http://qdrant:6333 runs" in caplog.text


def test_catalog_in_postgres(qdrant: QdrantTarget, hash_embedder: HashEmbedder, tmp_path: Path, postgres_url: str):
    """store.qdrant.catalog_url: the chunks in Qdrant, the catalog in PostgreSQL (what several workers share)."""
    from ragstream.store.postgres.catalog import PostgresCatalogConnection

    store = qdrant.overrides()["store"]
    store["qdrant"]["catalog_url"] = postgres_url
    rs = Ragstream(load_config(data_dir=tmp_path / "index", reranker={"backend": "none"}, store=store), embedder=hash_embedder)
    assert isinstance(rs.catalog.connection, PostgresCatalogConnection) and rs.stats()["backend"] == "qdrant"
    assert rs.ingest([SAMPLES]).documents_failed == 0
    assert not (tmp_path / "index" / "catalog.sqlite3").exists()
    hits = rs.search("How do I configure a timeout for requests?", top_k=3).hits
    assert any("timeouts" in hit.chunk.metadata.source for hit in hits)
    record = rs.documents()[0]
    rs.delete(record.document_id)
    assert rs.store.count({"document_id": record.document_id}) == 0
    rs.close()
