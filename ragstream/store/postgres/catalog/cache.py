"""The PostgreSQL catalog's embedding cache: passage vectors by model and chunk-content hash."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np

from ragstream.store.postgres.catalog.connection import PostgresRole


class PostgresEmbeddingCache(PostgresRole):
    """The :class:`~ragstream.store.catalog_base.EmbeddingCache` in PostgreSQL."""

    @property
    def read_only(self) -> bool:
        """Never: the database's disk is the server's."""
        return self._connection.read_only

    def cached_vectors(self, model_id: str, content_hashes: Sequence[str]) -> dict[str, np.ndarray]:
        """Cached vectors for the given chunk-content hashes."""
        unique = list(dict.fromkeys(content_hashes))
        if not unique:
            return {}
        with self._db.read() as conn:
            rows = conn.execute("SELECT content_hash, vector FROM embeddings WHERE model_id = %s AND content_hash = ANY(%s)",
                                (model_id, unique)).fetchall()
        return {str(content_hash): np.frombuffer(blob, dtype=np.float32) for content_hash, blob in rows}

    def cache_vectors(self, model_id: str, items: Iterable[tuple[str, np.ndarray]]) -> None:
        """Store vectors by chunk-content hash."""
        # one row per hash, in key order: two processes caching overlapping batches lock rows in one order (no deadlock)
        unique = dict(items)
        rows = [(model_id, content_hash, np.asarray(unique[content_hash], dtype=np.float32).tobytes())
                for content_hash in sorted(unique)]
        if not rows:
            return
        with self._db.write() as conn, conn.cursor() as cursor:
            cursor.executemany("INSERT INTO embeddings VALUES (%s, %s, %s) ON CONFLICT (model_id, content_hash) "
                               "DO UPDATE SET vector = EXCLUDED.vector", rows)
