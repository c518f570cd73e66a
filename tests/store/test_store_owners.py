"""The store contract for owners: the visibility filter ``owner in [user, shared]`` is an ordinary
exact-match filter in every search mode, and owners round-trip through the payload (shared as None);
on every backend (the ``backend`` fixture of the contract suite). The catalog's side (lists, pages,
finds and conversations per user) is in ``test_catalog_documents.py`` and ``test_catalog_conversations.py``."""

from __future__ import annotations

import numpy as np
from support.hash_embedder import HashEmbedder

from ragstream.models import Chunk, ChunkMetadata
from ragstream.store.base import Snapshot, visible_to

TEXT = "connection pool timeouts for the client"
OWNERS = {"a": "alice", "b": "bob", "s": None}
EVERYTHING = Snapshot(sequence=1, max_generation=10, uncommitted=frozenset())


def _chunk(document_id: str, generation: int) -> Chunk:
    metadata = ChunkMetadata(document_id=document_id, source=document_id, title=document_id, chunk_index=0,
                             word_count=6, has_code=False, has_equations=False, checksum="c", content_hash="h",
                             mime="text/plain", created_at="2026-01-01T00:00:00+00:00", owner=OWNERS[document_id])
    return Chunk(chunk_id=f"00000000-0000-0000-0000-{generation:012d}", text=f"{TEXT} {document_id}", metadata=metadata)


def test_searches_see_the_users_and_the_shared_points(opened, hash_embedder: HashEmbedder):
    _, store = opened
    vector = hash_embedder.embed_queries([TEXT])[0]
    for generation, document_id in enumerate(OWNERS, start=1):
        store.upsert([_chunk(document_id, generation)], np.array([vector]), generation)
    cases = {None: {"a", "b", "s"}, "alice": {"a", "s"}, "bob": {"b", "s"}, "carol": {"s"}}
    for user, visible in cases.items():
        filters = visible_to(None, user)
        for hits in (store.search_dense(vector, 10, filters, EVERYTHING), store.search_bm25(TEXT, 10, filters, EVERYTHING)):
            assert {chunk.metadata.document_id for chunk, _ in hits} == visible
            assert all(chunk.metadata.owner == OWNERS[chunk.metadata.document_id] for chunk, _ in hits)
    narrowed = visible_to({"document_id": "a"}, "bob")
    assert store.search_dense(vector, 10, narrowed, EVERYTHING) == []
    assert [c.metadata.owner for c in store.chunks_of("s", 3)] == [None]
