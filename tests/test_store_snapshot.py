"""The store contract for snapshots: a search returns exactly the points a snapshot sees, and the
catalog derives the snapshot from committed state (docs/consistency.md)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from hash_embedder import HashEmbedder

from ragstream.config import StoreConfig
from ragstream.models import Chunk, ChunkMetadata, LoadedDocument, Page
from ragstream.store.base import Snapshot
from ragstream.store.catalog import Catalog, DocumentVersion
from ragstream.store.qdrant_edge import QdrantEdgeStore

TEXT = "connection pool timeouts for the client"


def _chunk(document_id: str, generation: int) -> Chunk:
    metadata = ChunkMetadata(document_id=document_id, source=document_id, title=document_id, chunk_index=0,
                             word_count=6, has_code=False, has_equations=False, checksum="c", content_hash="h",
                             mime="text/plain", created_at="2026-01-01T00:00:00+00:00")
    return Chunk(chunk_id=f"00000000-0000-0000-0000-{generation:012d}", text=f"{TEXT} {document_id}", metadata=metadata)


def _generations(hits: list[tuple[Chunk, float]]) -> set[int]:
    return {int(chunk.chunk_id.rsplit("-", 1)[1]) for chunk, _ in hits}


def test_searches_return_exactly_what_the_snapshot_sees(tmp_path: Path, hash_embedder: HashEmbedder):
    store = QdrantEdgeStore(tmp_path / "qdrant", hash_embedder.dimensions, StoreConfig())
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
    store.close()


def _version(document_id: str, generation: int) -> DocumentVersion:
    doc = LoadedDocument(document_id=document_id, source=document_id, title=document_id, mime="text/plain",
                         checksum="c", size_bytes=1, pages=(Page(text="x"),), metadata={})
    return DocumentVersion(doc, generation, 1, "f", "2026-01-01T00:00:00+00:00")


def test_catalog_snapshot_follows_intents_and_switches(tmp_path: Path):
    catalog = Catalog(tmp_path / "catalog.sqlite3")
    assert catalog.snapshot() == Snapshot(sequence=0, max_generation=0, uncommitted=frozenset())

    [first], intents = catalog.begin_versions([("a", None)])
    assert catalog.snapshot() == Snapshot(sequence=0, max_generation=first, uncommitted=frozenset({first}))
    sequence = catalog.commit_documents([_version("a", first)])
    assert catalog.snapshot() == Snapshot(sequence=sequence, max_generation=first, uncommitted=frozenset())
    catalog.clear_intents(intents)

    [second], intents = catalog.begin_versions([("a", first)])
    assert catalog.snapshot().uncommitted == {second}
    sequence = catalog.commit_documents([_version("a", second)])
    assert catalog.snapshot() == Snapshot(sequence=sequence, max_generation=second, uncommitted=frozenset({first}))
    catalog.clear_intents(intents)
    assert catalog.snapshot().uncommitted == frozenset()

    [intent] = catalog.add_intents([("a", None, second)])
    sequence = catalog.remove_document("a")
    assert catalog.snapshot() == Snapshot(sequence=sequence, max_generation=second, uncommitted=frozenset({second}))
    catalog.clear_intents([intent])
    catalog.close()
