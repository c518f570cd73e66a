"""The vector-store contract, on every backend (``backend`` fixture: qdrant_edge, postgres, qdrant on
qdrant-client's local mode, and qdrant on a real server when ``RAGSTREAM_TEST_QDRANT_URL`` is set):
a search returns exactly the points a snapshot sees, filters mean the same everywhere, rankings equal
the embedded store's, points survive a reopen, an unreachable server is a clear error, and an
interrupted write recovers on reopen; then what the qdrant backend adds (local mode, version check,
its catalog in PostgreSQL). The catalog's roles have their own suites: ``test_catalog_*.py``
(docs/consistency.md, docs/backends.md)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, NoReturn

import numpy as np
import pytest
from support.crash_steps import CRASH_POINTS, install_crash
from support.hash_embedder import HashEmbedder
from support.index_fixtures import SAMPLES
from support.qdrant_backend import QdrantTarget
from support.rankings import same_ranking

from ragstream import Ragstream, load_config
from ragstream.config import StoreConfig
from ragstream.errors import ConfigError, VectorDBUnavailableError
from ragstream.models import Chunk, ChunkMetadata, SearchHit
from ragstream.store.base import Snapshot, VectorStore
from ragstream.store.factory import open_backend
from ragstream.store.qdrant_edge import QdrantEdgeStore
from ragstream.store.qdrant_server import QdrantServerStore

TEXT = "connection pool timeouts for the client"
ALL = Snapshot(sequence=0, max_generation=1_000, uncommitted=frozenset())


def _chunk(document_id: str, generation: int, text: str | None = None, index: int = 0, **fields: Any) -> Chunk:
    metadata = ChunkMetadata(**{"document_id": document_id, "source": document_id, "title": document_id, "chunk_index": index,
                                "word_count": 6, "has_code": False, "has_equations": False, "checksum": "c",
                                "content_hash": "h", "mime": "text/plain", "created_at": "2026-01-01T00:00:00+00:00",
                                **fields})
    return Chunk(chunk_id=f"00000000-0000-0000-{index:04d}-{generation:012d}", text=text or f"{TEXT} {document_id}",
                 metadata=metadata)


def _generations(hits: list[tuple[Chunk, float]]) -> set[int]:
    return {int(chunk.chunk_id.rsplit("-", 1)[1]) for chunk, _ in hits}


def _write(store: VectorStore, embedder: HashEmbedder, chunks: list[Chunk], generation: int) -> None:
    store.upsert(chunks, embedder.embed_documents([chunk.text for chunk in chunks]), generation)
    store.flush()


def test_searches_return_exactly_what_the_snapshot_sees(opened, hash_embedder: HashEmbedder):
    _, store = opened
    vector = hash_embedder.embed_queries([TEXT])[0]
    for generation, document_id in [(1, "a"), (2, "b"), (3, "a"), (4, "b")]:
        store.upsert([_chunk(document_id, generation)], np.array([vector]), generation)
    store.flush()
    cases = {
        # a replaced (1), b live (2), a's new version (3) committed, b's new version (4) allocated later
        Snapshot(sequence=5, max_generation=3, uncommitted=frozenset({1})): {2, 3},
        # a and b both being rewritten: 3 and 4 not committed yet
        Snapshot(sequence=4, max_generation=4, uncommitted=frozenset({3, 4})): {1, 2},
        Snapshot(sequence=9, max_generation=4, uncommitted=frozenset()): {1, 2, 3, 4},
    }
    for snapshot, visible in cases.items():
        assert _generations(store.search_dense(vector, 10, None, snapshot)) == visible
        assert _generations(store.search_bm25(TEXT, 10, None, snapshot)) == visible
        assert _generations(store.search_dense(vector, 10, {"document_id": "a"}, snapshot)) == visible & {1, 3}
        assert {g for g in (1, 2, 3, 4) if snapshot.visible(g)} == visible


def test_filters_mean_the_same_on_every_backend(opened, hash_embedder: HashEmbedder):
    _, store = opened
    chunks = [
        _chunk("a", 1, index=0, section="Intro", has_code=True, extra={"team": "red", "tags": ["x", "y"], "year": 2024}),
        _chunk("a", 1, index=1, section="Usage", page=2, extra={"team": "blue", "tags": ["y"], "year": 2025}),
        _chunk("b", 2, index=0, section="Intro", header_path="Guide > Intro", extra={"team": "red", "year": 2025}),
    ]
    for generation in (1, 2):
        _write(store, hash_embedder, [c for c in chunks if int(c.chunk_id.rsplit("-", 1)[1]) == generation], generation)
    vector = hash_embedder.embed_queries([TEXT])[0]

    def found(filters: dict[str, Any]) -> set[tuple[str, int]]:
        dense = {(c.metadata.document_id, c.metadata.chunk_index) for c, _ in store.search_dense(vector, 10, filters, ALL)}
        bm25 = {(c.metadata.document_id, c.metadata.chunk_index) for c, _ in store.search_bm25(TEXT, 10, filters, ALL)}
        assert dense == bm25, filters
        assert store.count(filters) == len(dense), filters
        return dense

    assert found({"document_id": "a"}) == {("a", 0), ("a", 1)}
    assert found({"document_id": ["b", "zzz"]}) == {("b", 0)}  # a list is any-of
    assert found({"section": "Intro", "team": "red"}) == {("a", 0), ("b", 0)}  # user metadata under extra
    assert found({"has_code": True}) == {("a", 0)}
    assert found({"has_code": False}) == {("a", 1), ("b", 0)}
    assert found({"tags": "y"}) == {("a", 0), ("a", 1)}  # a list-valued field holds the value
    assert found({"tags": ["x", "nope"]}) == {("a", 0)}
    assert found({"year": 2025}) == {("a", 1), ("b", 0)}
    assert found({"year": "2025"}) == set()  # types are strict, as in Qdrant
    assert found({"page": 2}) == {("a", 1)}
    assert found({"chapter": "Guide"}) == {("b", 0)}
    assert found({"team": []}) == set()
    [(chunk, _)] = store.search_dense(vector, 10, {"has_code": True}, ALL)
    assert chunk == chunks[0]  # stored and read back whole


def test_rankings_are_the_searches_without_their_chunks(opened, hash_embedder: HashEmbedder):
    """rank_dense/rank_bm25 give the same ids, scores and order as the searches, with each chunk's place in
    its document, under the same snapshot and filters; fetch reads the chunks back whole."""
    _, store = opened
    chunks = [_chunk("a", 1, f"{TEXT} part {i} pool", index=i) for i in range(3)] + [_chunk("b", 2, "pool party")]
    for generation in (1, 2):
        _write(store, hash_embedder, [c for c in chunks if int(c.chunk_id.rsplit("-", 1)[1]) == generation], generation)
    vector = hash_embedder.embed_queries([TEXT])[0]
    only_first = Snapshot(sequence=1, max_generation=1, uncommitted=frozenset())
    for snapshot, filters in [(ALL, None), (ALL, {"document_id": "a"}), (only_first, None)]:
        for ranked, searched in [(store.rank_dense(vector, 10, filters, snapshot),
                                  store.search_dense(vector, 10, filters, snapshot)),
                                 (store.rank_bm25("pool party", 10, filters, snapshot),
                                  store.search_bm25("pool party", 10, filters, snapshot))]:
            assert [hit.chunk_id for hit in ranked] == [chunk.chunk_id for chunk, _ in searched]
            assert [hit.score for hit in ranked] == pytest.approx([score for _, score in searched])
            assert [(hit.document_id, hit.chunk_index) for hit in ranked] == \
                [(chunk.metadata.document_id, chunk.metadata.chunk_index) for chunk, _ in searched]
    assert {hit.document_id for hit in store.rank_bm25("pool", 10, None, only_first)} == {"a"}
    assert store.rank_bm25("the of a", 10, None, ALL) == []
    fetched = store.fetch([chunks[3].chunk_id, chunks[1].chunk_id, "00000000-0000-0000-0000-000000009999"])
    assert fetched == {chunks[3].chunk_id: chunks[3], chunks[1].chunk_id: chunks[1]}  # an id no longer stored is left out
    assert store.fetch([]) == {}


def test_bm25_ranks_rare_terms_higher_and_ignores_unknown_words(opened, hash_embedder: HashEmbedder):
    _, store = opened
    texts = ["the pool of connections", "a pool party in summer", "pool pool pool", "zebra crossing near the pool"]
    _write(store, hash_embedder, [_chunk(f"d{i}", i + 1, text) for i, text in enumerate(texts)], 1)
    hits = store.search_bm25("zebra pool", 10, None, ALL)
    assert hits[0][0].text == texts[3]  # the rare term decides
    assert len(hits) == 4 and all(score > 0 for _, score in hits)
    assert [score for _, score in hits] == sorted((score for _, score in hits), reverse=True)
    assert store.search_bm25("the of a", 10, None, ALL) == []  # stopwords only
    assert store.search_bm25("unseenword", 10, None, ALL) == []


def test_versions_are_deleted_whole_and_read_back_in_order(opened, hash_embedder: HashEmbedder):
    _, store = opened
    _write(store, hash_embedder, [_chunk("a", 1, f"part {i} of a", index=i) for i in (2, 0, 1)], 1)
    _write(store, hash_embedder, [_chunk("a", 2, f"part {i} of a, new", index=i) for i in (0, 1)], 2)
    assert [c.metadata.chunk_index for c in store.chunks_of("a", 1)] == [0, 1, 2]
    points = store.points_of("a", 1)  # what a migration copies: the chunks with their stored vectors
    assert [chunk for chunk, _ in points] == store.chunks_of("a", 1)
    for chunk, vector in points:
        given = hash_embedder.embed_documents([chunk.text])[0]
        assert np.allclose(vector / np.linalg.norm(vector), given / np.linalg.norm(given), atol=1e-6)
    assert store.count() == 5 and store.count({"document_id": "a"}) == 5
    store.delete_generation("a", 1)
    store.flush()
    assert store.chunks_of("a", 1) == [] and store.count() == 2
    assert {c.metadata.chunk_index for c, _ in store.search_bm25("part", 10, None, ALL)} == {0, 1}
    # writing a chunk id again replaces the point
    _write(store, hash_embedder, [_chunk("a", 2, "part 0 rewritten", index=0)], 2)
    assert store.count() == 2 and store.chunks_of("a", 2)[0].text == "part 0 rewritten"
    assert store.chunks_of("a", 9) == [] and store.points_of("b", 1) == []  # no such version
    assert store.info()["points"] == 2
    store.maybe_optimize()


def test_reopening_keeps_the_points(tmp_path, backend, hash_embedder: HashEmbedder):
    config = load_config(data_dir=tmp_path / "index", store=backend)
    catalog, store = open_backend(config, lambda catalog: hash_embedder.dimensions)
    _write(store, hash_embedder, [_chunk("a", 1, index=i) for i in range(3)], 1)
    assert store.info()["backend"] == config.store.backend
    store.close()
    catalog.close()
    catalog, store = open_backend(config, lambda catalog: hash_embedder.dimensions)
    try:
        assert store.count() == 3 and [c.metadata.chunk_index for c in store.chunks_of("a", 1)] == [0, 1, 2]
    finally:
        store.close()
        catalog.close()


# -- rankings equal the embedded store's ------------------------------------------------------

SAME_BM25 = ("qdrant_edge", "qdrant")
"""Backends whose BM25 is Qdrant's, scores and all; postgres computes the textbook formula instead
(tests/store/test_postgres_backend.py proves it), so its BM25 scores differ and only its dense ones are compared."""

def _ranking(hits: list[SearchHit]) -> list[tuple[str, float]]:
    """A search result as (document#chunk_index, score): the same chunk in two indexes has the same key."""
    return [(f"{hit.chunk.metadata.document_id}#{hit.chunk.metadata.chunk_index}", hit.score) for hit in hits]


def test_scores_equal_the_embedded_stores(opened, backend, hash_embedder: HashEmbedder, tmp_path):
    """Same points in this backend and in the embedded store: the same dense hits (and BM25 hits, on a Qdrant
    backend) in the same order with the same scores."""
    _, store = opened
    same_bm25 = backend["backend"] in SAME_BM25
    texts = [path.read_text(encoding="utf-8") for path in sorted(SAMPLES.glob("*.md"))]
    paragraphs = [paragraph for text in texts for paragraph in text.split("\n\n") if len(paragraph.split()) > 5]
    chunks = [_chunk(f"doc{i % 7}", 1, paragraph, index=i) for i, paragraph in enumerate(paragraphs)]
    assert len(chunks) > 50
    vectors = hash_embedder.embed_documents([chunk.text for chunk in chunks])
    edge = QdrantEdgeStore(tmp_path / "edge", hash_embedder.dimensions, StoreConfig())
    for target in (edge, store):
        target.upsert(chunks, vectors, 1)
        target.flush()
    try:
        for query in ["How do I configure a timeout?", "AsyncClient streaming responses", "proxy authentication",
                      "raise for status exception", "connection pool limits"]:
            vector = hash_embedder.embed_queries([query])[0]
            pairs = [(store.search_dense(vector, 20, None, ALL), edge.search_dense(vector, 20, None, ALL))]
            if same_bm25:
                pairs.append((store.search_bm25(query, 20, None, ALL), edge.search_bm25(query, 20, None, ALL)))
            for ours, theirs in pairs:
                assert theirs
                same_ranking([(chunk.chunk_id, score) for chunk, score in ours],
                             [(chunk.chunk_id, score) for chunk, score in theirs])
    finally:
        edge.close()


def _ranks_like_the_embedded_store(backend: dict[str, Any], embedder: Any, folder: Path, queries: list[str],
                                   tmp_path: Path) -> None:
    """Ingest ``folder`` into the embedded store and into ``backend``; each query's top 10 must be the same in
    bm25, dense and hybrid mode (dense only on a backend whose BM25 is not Qdrant's)."""
    if backend == {"backend": "qdrant_edge"}:
        pytest.skip("the embedded store is the reference")
    modes = ("bm25", "dense", "hybrid") if backend["backend"] in SAME_BM25 else ("dense",)
    edge = Ragstream(load_config(data_dir=tmp_path / "edge", reranker={"backend": "none"}), embedder=embedder)
    other = Ragstream(load_config(data_dir=tmp_path / "other", reranker={"backend": "none"}, store=backend),
                      embedder=embedder)
    try:
        for rs in (edge, other):
            report = rs.ingest([folder])
            assert report.documents_failed == 0 and report.documents_processed > 1
        assert other.stats()["points"] == edge.stats()["points"]
        for query in queries:
            for mode in modes:
                theirs = edge.search(query, mode=mode, top_k=10).hits
                assert len(theirs) == 10
                same_ranking(_ranking(other.search(query, mode=mode, top_k=10).hits), _ranking(theirs))
    finally:
        edge.close()
        other.close()


def test_sample_corpus_ranks_like_the_embedded_store(backend, hash_embedder: HashEmbedder, tmp_path):
    """A whole index of the bundled samples on this backend returns the embedded index's top results."""
    _ranks_like_the_embedded_store(backend, hash_embedder, SAMPLES, [
        "How do I configure a timeout for requests?", "AsyncClient streaming responses",
        "what exceptions can httpx raise", "federal register rule"], tmp_path)


def test_real_corpus_on_the_real_model_ranks_like_the_embedded_store(backend, embedder, shared_data: Path,
                                                                     tmp_path: Path):
    """The httpx documentation (real Markdown) on the packaged model: this backend returns the embedded
    store's top 10."""
    _ranks_like_the_embedded_store(backend, embedder, shared_data / "markdown_docs", [
        "How do I set a timeout on a request?", "stream a large response body", "HTTP/2 support",
        "client certificates for TLS", "retry failed connections", "event hooks for logging requests"], tmp_path)


# -- crash safety through the whole engine ---------------------------------------------------

class _CrashError(Exception):
    """Stands in for a SIGKILL between two write steps (tests/test_crash_safety.py kills for real)."""


def _crash(crash_point: str) -> NoReturn:
    raise _CrashError(crash_point)


@pytest.mark.parametrize("crash_point", CRASH_POINTS)
def test_interrupted_write_recovers_on_reopen(make_fast_index, backend, tmp_path, monkeypatch, crash_point):
    folder = tmp_path / "docs"
    folder.mkdir()

    def write(version: str) -> None:
        for doc in range(3):
            (folder / f"doc{doc}.txt").write_text("\n\n".join(
                f"Paragraph {p} of document {doc} in version {version}. " * 20 for p in range(6)))

    write("alpha")
    rs = make_fast_index(store=backend)
    rs.ingest([folder])
    write("beta")
    install_crash(type(rs.store), type(rs.catalog.documents), crash_point, _crash, monkeypatch.setattr)
    with pytest.raises(_CrashError):
        rs.ingest([folder])
    monkeypatch.undo()
    rs.close()

    reopened = make_fast_index(store=backend)  # recovery replays the intents
    assert reopened.catalog.versions.intents() == []
    total = 0
    for record in reopened.documents():
        chunks = reopened.document_chunks(record.document_id)
        assert len(chunks) == record.chunk_count
        assert len({tag for c in chunks for tag in ("alpha", "beta") if f"version {tag}" in c.text}) == 1
        total += record.chunk_count
    assert reopened.store.count() == total, "points of dead generations survived recovery"
    assert reopened.ingest([folder]).documents_failed == 0
    assert {c.text.split("version ")[1][:4] for r in reopened.documents() for c in reopened.document_chunks(r.document_id)} == {"beta"}


# -- unreachable servers -----------------------------------------------------------------------

@pytest.mark.parametrize(("store", "message"), [
    # port 1 and port 9 (discard) on loopback: nothing listens, the connection is refused at once
    ({"backend": "postgres", "url": "postgresql://postgres:x@127.0.0.1:1/ragstream", "connect_timeout_seconds": 2},
     "PostgreSQL database at 127.0.0.1:1"),
    ({"backend": "qdrant", "url": "http://127.0.0.1:9", "qdrant": {"timeout_seconds": 2}},
     "cannot open Qdrant collection 'ragstream' at http://127.0.0.1:9"),
])
def test_an_unreachable_server_is_a_clear_unavailable_error(tmp_path, store: dict[str, Any], message: str):
    with pytest.raises(VectorDBUnavailableError, match=re.escape(message)):
        open_backend(load_config(data_dir=tmp_path, store=store), lambda catalog: 8)


# -- what the qdrant backend adds ----------------------------------------------------------------

def test_qdrant_local_mode_is_one_process_and_checks_the_collection(tmp_path: Path, hash_embedder: HashEmbedder):
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


def test_a_qdrant_server_of_an_unsupported_version_is_named_in_a_warning(caplog: pytest.LogCaptureFixture):
    from importlib.metadata import version

    from ragstream.store.qdrant_server import _check_version

    major, minor = (int(part) for part in version("qdrant-client").split(".")[:2])
    _check_version(f"v{major}.{minor + 1}.0", "http://qdrant:6333")
    _check_version(f"{major}.{minor - 1}.4", "http://qdrant:6333")
    assert not caplog.records
    _check_version(f"{major}.{minor + 3}.0", "http://qdrant:6333")
    assert "the Qdrant server at http://qdrant:6333 runs" in caplog.text


def test_qdrant_with_its_catalog_in_postgres(qdrant: QdrantTarget, hash_embedder: HashEmbedder, tmp_path: Path,
                                             postgres_url: str):
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
