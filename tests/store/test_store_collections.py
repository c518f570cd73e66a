"""The store contract for collections: a chunk's collection ids round-trip through its payload, "in one of these
collections" is a match-any filter inside every search mode (dense and BM25), a membership change rewrites the
payloads of every point of a document, and a small collection inside a larger index still fills its top-k;
on every backend (the ``backend`` fixture of the contract suite). The catalog's side is in
``test_catalog_collections.py``."""

from __future__ import annotations

import uuid

import numpy as np
from support.hash_embedder import HashEmbedder

from ragstream.models import Chunk, ChunkMetadata
from ragstream.store.base import Snapshot, visible_to

TEXT = "connection pool timeouts for the client"
EVERYTHING = Snapshot(sequence=1, max_generation=10_000, uncommitted=frozenset())


def _chunk(document_id: str, generation: int, collections: tuple[str, ...], index: int = 0, text: str = TEXT) -> Chunk:
    metadata = ChunkMetadata(document_id=document_id, source=document_id, title=document_id, chunk_index=index,
                             word_count=6, has_code=False, has_equations=False, checksum="c", content_hash="h",
                             mime="text/plain", created_at="2026-01-01T00:00:00+00:00", collections=collections)
    chunk_id = str(uuid.uuid5(uuid.NAMESPACE_URL, f"{document_id}/{generation}/{index}"))
    return Chunk(chunk_id=chunk_id, text=f"{text} {document_id}", metadata=metadata)


def _documents(hits: list[tuple[Chunk, float]]) -> set[str]:
    return {chunk.metadata.document_id for chunk, _ in hits}


def test_searches_see_only_the_scoped_collections(opened, hash_embedder: HashEmbedder):
    _, store = opened
    vector = hash_embedder.embed_queries([TEXT])[0]
    members = {"a": ("hr",), "b": ("minutes",), "c": ("hr", "minutes")}
    for generation, (document_id, collections) in enumerate(members.items(), start=1):
        store.upsert([_chunk(document_id, generation, collections)], np.array([vector]), generation)
    cases = {("hr",): {"a", "c"}, ("minutes",): {"b", "c"}, ("hr", "minutes"): {"a", "b", "c"}, ("other",): set()}
    for scope, visible in cases.items():
        filters = visible_to(None, None, scope)
        assert _documents(store.search_dense(vector, 10, filters, EVERYTHING)) == visible
        assert _documents(store.search_bm25(TEXT, 10, filters, EVERYTHING)) == visible
        assert {r.document_id for r in store.rank_bm25(TEXT, 10, filters, EVERYTHING)} == visible
    assert _documents(store.search_dense(vector, 10, visible_to({"collections": "minutes"}, None, ["hr"]), EVERYTHING)) == {
        "a", "c"}  # the scope replaces a caller's own collections filter
    assert store.chunks_of("c", 3)[0].metadata.collections == ("hr", "minutes")


def test_a_membership_change_rewrites_every_point_of_the_document(opened, hash_embedder: HashEmbedder):
    _, store = opened
    vector = hash_embedder.embed_queries([TEXT])[0]
    store.upsert([_chunk("a", 1, ("hr",), index) for index in range(3)], np.array([vector] * 3), 1)
    store.upsert([_chunk("a", 2, ("hr",), index) for index in range(3)], np.array([vector] * 3), 2)  # a newer version
    store.set_collections("a", ["minutes", "hr"])
    store.flush()
    minutes = visible_to(None, None, ["minutes"])
    assert len(store.search_dense(vector, 10, minutes, EVERYTHING)) == 6
    store.set_collections("a", ["minutes"])
    store.flush()
    assert store.search_bm25(TEXT, 10, visible_to(None, None, ["hr"]), EVERYTHING) == []
    assert [chunk.metadata.collections for chunk in store.chunks_of("a", 2)] == [("minutes",)] * 3
    assert [chunk.metadata.collections for chunk, _ in store.points_of("a", 1)] == [("minutes",)] * 3


def test_a_small_collection_in_a_large_index_fills_its_top_k(opened, hash_embedder: HashEmbedder):
    _, store = opened
    texts = [f"{TEXT} variant {n} of the topic" for n in range(400)]
    vectors = hash_embedder.embed_documents(texts)
    chunks = [_chunk(f"d{n:03d}", 1, ("small",) if n % 40 == 0 else ("big",), text=text) for n, text in enumerate(texts)]
    for start in range(0, len(chunks), 100):
        store.upsert(chunks[start:start + 100], vectors[start:start + 100], 1)
    store.flush()
    store.maybe_optimize()
    query = hash_embedder.embed_queries([TEXT])[0]
    small = visible_to(None, None, ["small"])
    for hits in (store.search_dense(query, 10, small, EVERYTHING), store.search_bm25(TEXT, 10, small, EVERYTHING)):
        assert len(hits) == 10 and _documents(hits) == {f"d{n:03d}" for n in range(0, 400, 40)}


def test_points_from_before_collections_open_in_the_default_collection(tmp_path, postgres_url: str,
                                                                       hash_embedder: HashEmbedder):
    """PostgreSQL (the embedded store's upgrade is in tests/test_collections.py): chunks without ``collections``
    join the default collection once, when the store opens."""
    from ragstream import load_config
    from ragstream.models import DEFAULT_COLLECTION_ID
    from ragstream.store.factory import open_backend

    config = load_config(data_dir=tmp_path / "index", store={"backend": "postgres", "url": postgres_url})
    catalog, store = open_backend(config, lambda catalog: hash_embedder.dimensions)
    vector = hash_embedder.embed_queries([TEXT])[0]
    store.upsert([_chunk("a", 1, ("hr",))], np.array([vector]), 1)
    with catalog.connection.db.write() as conn:  # type: ignore[attr-defined]  # as a store before collections wrote it
        conn.execute("UPDATE chunks SET payload = payload - 'collections'")
        conn.execute("DELETE FROM counters WHERE name = 'chunk_collections'")
    assert store.chunks_of("a", 1)[0].metadata.collections == ()
    store.close()
    catalog.close()
    catalog, store = open_backend(config, lambda catalog: hash_embedder.dimensions)
    try:
        assert store.chunks_of("a", 1)[0].metadata.collections == (DEFAULT_COLLECTION_ID,)
        assert len(store.search_dense(vector, 10, visible_to(None, None, [DEFAULT_COLLECTION_ID]), EVERYTHING)) == 1
    finally:
        store.close()
        catalog.close()
