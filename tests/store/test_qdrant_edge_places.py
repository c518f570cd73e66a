"""The embedded store's place cache: a hybrid ranking reads only ids and scores from Qdrant Edge and
takes each chunk's document and position from memory (``store.place_cache_entries``), bounded, and
the same with the cache off."""

from __future__ import annotations

from pathlib import Path

import pytest
from support.hash_embedder import HashEmbedder

from ragstream.config import StoreConfig
from ragstream.models import Chunk, ChunkMetadata
from ragstream.store.base import Snapshot
from ragstream.store.qdrant_edge import QdrantEdgeStore

ALL = Snapshot(sequence=1, max_generation=10, uncommitted=frozenset())


def _chunks() -> list[Chunk]:
    return [Chunk(chunk_id=f"00000000-0000-0000-0000-{i:012d}", text=f"pool timeout part {i} " + "word " * i,
                  metadata=ChunkMetadata(document_id=f"doc{i % 2}", source="s", title="t", chunk_index=i, word_count=4,
                                         has_code=False, has_equations=False, checksum="c", content_hash="h",
                                         mime="text/plain", created_at="2026-01-01T00:00:00+00:00"))
            for i in range(5)]


@pytest.mark.parametrize("entries", [0, 2, 1000])
def test_rankings_are_right_whatever_the_cache_holds(tmp_path: Path, hash_embedder: HashEmbedder, entries: int):
    store = QdrantEdgeStore(tmp_path / "edge", hash_embedder.dimensions, StoreConfig(place_cache_entries=entries))
    try:
        chunks = _chunks()
        store.upsert(chunks, hash_embedder.embed_documents([c.text for c in chunks]), 1)
        store.flush()
        expected = {c.chunk_id: (c.metadata.document_id, c.metadata.chunk_index) for c in chunks}
        vector = hash_embedder.embed_queries(["pool timeout"])[0]
        for _ in range(2):  # the second time from the cache (when it holds them)
            for ranked in (store.rank_dense(vector, 10, None, ALL), store.rank_bm25("pool timeout", 10, None, ALL)):
                assert len(ranked) == 5
                assert {hit.chunk_id: (hit.document_id, hit.chunk_index) for hit in ranked} == expected
            assert len(store._places) == min(entries, 5)  # bounded: the oldest places go first
    finally:
        store.close()
