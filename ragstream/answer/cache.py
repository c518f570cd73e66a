"""A TTL cache of retrieve() results, cleared on any ingest, delete, reindex or recovery."""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Hashable

from ragstream import metrics
from ragstream.answer.models import RAGContext
from ragstream.config import RetrievalCacheConfig


class RetrievalCache:
    """(query, context_key, limits) -> RAGContext for ``ttl_seconds``; counts hits and misses.

    :meth:`invalidate` is wired to the ingestor's ``on_change`` hook. The facade's keys carry the
    catalog's commit sequence of the request's snapshot, so a result is never served to a request
    that sees another committed state, even one changed by another process.
    """

    def __init__(self, config: RetrievalCacheConfig, clock: Callable[[], float] = time.monotonic) -> None:
        self._config = config
        self._clock = clock
        self._entries: OrderedDict[Hashable, tuple[float, RAGContext]] = OrderedDict()
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0
        self.invalidations = 0

    def get_or_compute(self, key: Hashable, compute: Callable[[], RAGContext]) -> tuple[RAGContext, bool]:
        """The cached value of ``key`` (and True), or ``compute()`` stored and returned (and False)."""
        now = self._clock()
        with self._lock:
            entry = self._entries.get(key)
            if entry is not None and now - entry[0] < self._config.ttl_seconds:
                self.hits += 1
                metrics.record_cache_lookup("retrieval", hit=True)
                return entry[1], True
            self.misses += 1
            metrics.record_cache_lookup("retrieval", hit=False)
            generation = self.invalidations
        value = compute()
        with self._lock:
            if generation == self.invalidations:  # not cleared while computing
                self._entries[key] = (now, value)
                self._entries.move_to_end(key)
                while len(self._entries) > self._config.max_entries:
                    self._entries.popitem(last=False)
        return value, False

    def invalidate(self) -> None:
        """Forget every cached result (the index changed)."""
        with self._lock:
            self._entries.clear()
            self.invalidations += 1

    def stats(self) -> dict[str, int]:
        """hits, misses, invalidations and current size."""
        with self._lock:
            return {"hits": self.hits, "misses": self.misses, "invalidations": self.invalidations,
                    "size": len(self._entries)}
