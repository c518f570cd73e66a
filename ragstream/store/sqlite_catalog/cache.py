"""The SQLite catalog's embedding cache: passage vectors by model and chunk-content hash."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np

from ragstream.store.sqlite_catalog.connection import SqliteRole

_HASHES_PER_QUERY = 500
"""Content hashes looked up per statement (under SQLite's oldest limit of 999 host parameters)."""


class SqliteEmbeddingCache(SqliteRole):
    """The :class:`~ragstream.store.catalog_base.EmbeddingCache` in SQLite."""

    @property
    def read_only(self) -> bool:
        """The catalog was opened for reading only (a full disk): nothing can be cached."""
        return self._connection.read_only

    def cached_vectors(self, model_id: str, content_hashes: Sequence[str]) -> dict[str, np.ndarray]:
        """Cached vectors for the given chunk-content hashes."""
        found: dict[str, np.ndarray] = {}
        unique = list(dict.fromkeys(content_hashes))
        with self._connection.lock:
            for start in range(0, len(unique), _HASHES_PER_QUERY):
                batch = unique[start : start + _HASHES_PER_QUERY]
                marks = ",".join("?" * len(batch))
                for content_hash, blob in self._connection.db.execute(
                    f"SELECT content_hash, vector FROM embeddings WHERE model_id = ? AND content_hash IN ({marks})",
                    (model_id, *batch),
                ):
                    found[content_hash] = np.frombuffer(blob, dtype=np.float32)
        return found

    def cache_vectors(self, model_id: str, items: Iterable[tuple[str, np.ndarray]]) -> None:
        """Store vectors by chunk-content hash."""
        rows = [(model_id, content_hash, np.asarray(vector, dtype=np.float32).tobytes()) for content_hash, vector in items]
        with self._connection.transaction() as db:
            db.executemany("INSERT OR REPLACE INTO embeddings VALUES (?, ?, ?)", rows)
