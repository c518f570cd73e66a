"""The store/catalog contract, on every backend (``backend`` fixture: qdrant_edge, postgres, qdrant on
qdrant-client's local mode, and qdrant on a real server when ``RAGSTREAM_TEST_QDRANT_URL`` is set):
a search returns exactly the points a snapshot sees, filters mean the same everywhere, and an
interrupted write recovers on reopen. The catalog's roles have their own suites: ``test_catalog_*.py``
(docs/consistency.md, docs/backends.md)."""

from __future__ import annotations

from typing import Any, NoReturn

import numpy as np
import pytest
from crash_steps import CRASH_POINTS, install_crash
from hash_embedder import HashEmbedder

from ragstream.models import Chunk, ChunkMetadata
from ragstream.store.base import Snapshot, VectorStore

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
    assert store.info()["points"] == 2
    store.maybe_optimize()


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
