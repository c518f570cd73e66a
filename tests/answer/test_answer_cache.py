"""The retrieval cache: hits within the TTL, invalidation on ingest, delete and reindex."""

from __future__ import annotations

from support.answer_fixtures import MARKDOWN_SAMPLES

from ragstream.answer.cache import RetrievalCache
from ragstream.config import RetrievalCacheConfig

QUESTION = "How do I set a timeout on a request?"


def test_same_query_and_key_is_served_from_cache(make_index):
    rs = make_index()
    rs.ingest(MARKDOWN_SAMPLES)
    first = rs.retrieve(QUESTION, "chan:user")
    before = rs.retrieval_cache.stats()
    second = rs.retrieve(QUESTION, "chan:user")
    after = rs.retrieval_cache.stats()
    assert second.context_id == first.context_id
    assert after["hits"] == before["hits"] + 1 and after["misses"] == before["misses"]
    other_key = rs.retrieve(QUESTION, "chan:other")
    assert other_key.context_id != first.context_id
    assert rs.retrieval_cache.stats()["misses"] == after["misses"] + 1


def test_ingest_delete_and_reindex_invalidate(make_index):
    rs = make_index()
    report = rs.ingest(MARKDOWN_SAMPLES[:2])
    cached = rs.retrieve(QUESTION, "k").context_id
    rs.ingest(MARKDOWN_SAMPLES[2:])
    after_ingest = rs.retrieve(QUESTION, "k").context_id
    assert after_ingest != cached
    rs.delete(report.document_ids[0])
    after_delete = rs.retrieve(QUESTION, "k").context_id
    assert after_delete != after_ingest
    rs.reindex()
    assert rs.retrieve(QUESTION, "k").context_id != after_delete
    assert rs.retrieval_cache.stats()["hits"] == 0


def test_ttl_expiry():
    now = [0.0]
    cache = RetrievalCache(RetrievalCacheConfig(ttl_seconds=300), clock=lambda: now[0])
    values = iter(["first", "second"])
    assert cache.get_or_compute("k", lambda: next(values)) == ("first", False)
    now[0] = 299.0
    assert cache.get_or_compute("k", lambda: next(values)) == ("first", True)
    now[0] = 300.0
    assert cache.get_or_compute("k", lambda: next(values)) == ("second", False)
    assert cache.stats() == {"hits": 1, "misses": 2, "invalidations": 0, "size": 1}


def test_max_entries_evicts_oldest():
    cache = RetrievalCache(RetrievalCacheConfig(max_entries=2))
    for key in ("a", "b", "c"):
        cache.get_or_compute(key, lambda key=key: key)
    assert cache.get_or_compute("a", lambda: "again") == ("again", False)
    assert cache.get_or_compute("c", lambda: "never") == ("c", True)
