"""The catalog's embedding cache (``EmbeddingCache``) on every catalog backend (the ``catalog`` fixture:
SQLite and PostgreSQL): vectors by model and content hash, exact float32 round trips."""

from __future__ import annotations

import numpy as np

from ragstream.store.catalog_base import Catalog


def test_vectors_are_cached_by_model_and_content_hash(catalog: Catalog):
    cache = catalog.cache
    assert not cache.read_only
    vectors = {"h1": np.arange(4, dtype=np.float32), "h2": np.ones(4, dtype=np.float32)}
    cache.cache_vectors("m", vectors.items())
    cached = cache.cached_vectors("m", ["h1", "h2", "h3", "h1"])
    assert set(cached) == {"h1", "h2"} and np.array_equal(cached["h1"], vectors["h1"])
    assert cached["h1"].dtype == np.float32
    assert cache.cached_vectors("other", ["h1"]) == {} and cache.cached_vectors("m", []) == {}
    cache.cache_vectors("m", [("h1", np.full(4, 0.5, dtype=np.float64))])  # replaced, stored as float32
    assert np.array_equal(cache.cached_vectors("m", ["h1"])["h1"], np.full(4, 0.5, dtype=np.float32))
    cache.cache_vectors("m", [])


def test_many_hashes_in_one_lookup(catalog: Catalog):
    cache = catalog.cache
    cache.cache_vectors("m", [(f"h{i}", np.full(2, i, dtype=np.float32)) for i in range(1200)])
    cached = cache.cached_vectors("m", [f"h{i}" for i in range(0, 1300)])
    assert len(cached) == 1200 and all(cached[f"h{i}"][0] == i for i in range(1200))
