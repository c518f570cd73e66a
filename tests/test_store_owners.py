"""The store and catalog contract for owners: the visibility filter ``owner in [user, shared]`` is an
ordinary exact-match filter in every search mode, owners round-trip through the payload (shared
as None), and the catalog lists, finds and keeps conversations per user."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from hash_embedder import HashEmbedder

from ragstream.config import StoreConfig
from ragstream.models import Chunk, ChunkMetadata, LoadedDocument, Page
from ragstream.store.base import Snapshot, visible_to
from ragstream.store.catalog import Catalog, DocumentVersion
from ragstream.store.qdrant_edge import QdrantEdgeStore

TEXT = "connection pool timeouts for the client"
OWNERS = {"a": "alice", "b": "bob", "s": None}
EVERYTHING = Snapshot(sequence=1, max_generation=10, uncommitted=frozenset())


def _chunk(document_id: str, generation: int) -> Chunk:
    metadata = ChunkMetadata(document_id=document_id, source=document_id, title=document_id, chunk_index=0,
                             word_count=6, has_code=False, has_equations=False, checksum="c", content_hash="h",
                             mime="text/plain", created_at="2026-01-01T00:00:00+00:00", owner=OWNERS[document_id])
    return Chunk(chunk_id=f"00000000-0000-0000-0000-{generation:012d}", text=f"{TEXT} {document_id}", metadata=metadata)


def test_searches_see_the_users_and_the_shared_points(tmp_path: Path, hash_embedder: HashEmbedder):
    store = QdrantEdgeStore(tmp_path / "qdrant", hash_embedder.dimensions, StoreConfig())
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
    store.close()


def _version(document_id: str, generation: int) -> DocumentVersion:
    doc = LoadedDocument(document_id=document_id, source=document_id, title=document_id, mime="text/plain",
                         checksum="same", size_bytes=1, pages=(Page(text="x"),), metadata={}, owner=OWNERS[document_id])
    return DocumentVersion(doc, generation, 1, "f", "2026-01-01T00:00:00+00:00")


def test_catalog_lists_finds_and_converses_per_user(tmp_path: Path):
    catalog = Catalog(tmp_path / "catalog.sqlite3")
    catalog.commit_documents([_version(document_id, g) for g, document_id in enumerate(OWNERS, start=1)])
    assert {r.document_id for r in catalog.list()} == {"a", "b", "s"}
    assert {r.document_id for r in catalog.list("alice")} == {"a", "s"}
    assert {r.document_id for r in catalog.find_by_checksum("same", "bob")} == {"b", "s"}
    assert catalog.get("a", "bob") is None and catalog.get("a", "alice") is not None
    assert catalog.get("a").owner == "alice" and catalog.get("s").owner is None
    assert catalog.stored_document("b").owner == "bob"

    catalog.add_turn("c", "m1", "q-alice", "a-alice", "t", 10, owner="alice")
    catalog.add_turn("c", "m2", "q-bob", "a-bob", "t", 10, owner="bob")
    catalog.add_turn("c", "m3", "q-none", "a-none", "t", 10)
    assert catalog.recent_turns("c", 10, "alice") == [("q-alice", "a-alice")]
    assert [turn["user"] for turn in catalog.conversation_turns("c", "bob")] == ["q-bob"]
    assert [turn["user"] for turn in catalog.conversation_turns("c")] == ["q-none"]
    catalog.close()
