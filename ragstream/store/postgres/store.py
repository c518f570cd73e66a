"""The postgres vector store: chunks with a pgvector ``vector`` (cosine, HNSW) and BM25 ``sparsevec``
in the same database as the catalog.

Dense search orders by cosine distance; once the table holds ``store.optimize_min_points`` chunks
an HNSW index serves it, read with ``hnsw.ef_search = max(store.hnsw_ef_search, limit)`` and
pgvector's strict iterative scan, so a filtered query still returns ``limit`` rows when that many
match. BM25 (module :mod:`ragstream.store.postgres.bm25`): a chunk's score is the inner product of
its weights with the query's IDF vector; the chunks holding the query's rarest terms are scored
first (GIN index on ``terms``), and chunks sharing only commoner terms are scored only while they
could still reach the top (``store.bm25_first_pass_chunks``), so the ranking is exact, up to
``store.bm25_max_candidates`` scored chunks per query. Filters mean what they mean on the embedded
store: a metadata field equals the value (or contains it, for list fields), a list of values is any-of.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import psycopg
from pgvector import SparseVector
from psycopg.types.json import Jsonb

from ragstream.config import StoreConfig
from ragstream.errors import ConfigError
from ragstream.models import COLLECTIONS_FIELD, DEFAULT_COLLECTION_ID, Chunk
from ragstream.store.base import Filters, RankedId, Snapshot
from ragstream.store.payload import filter_value, from_payload, payload_key, to_payload
from ragstream.store.postgres.bm25 import (
    TERM_SPACE,
    Bm25Terms,
    TermCounts,
    first_pass,
    query_weights,
    rarest_first,
    terms_needed,
)
from ragstream.store.postgres.connection import Database

POINTS = "bm25_points"
TOTAL_LENGTH = "bm25_total_length"
HNSW_INDEX = "chunks_embedding_hnsw"
_EF_SEARCH_MAX = 1000  # pgvector's upper bound for hnsw.ef_search
_REWEIGH_BATCH = 1000

SCHEMA = """
-- embedding: STORAGE MAIN keeps the vector in the row (not TOASTed out beside text and payload), so an
-- exact scan reads one page per few rows instead of chasing a TOAST pointer per row (8x faster).
CREATE TABLE IF NOT EXISTS chunks (
    chunk_id TEXT PRIMARY KEY,
    document_id TEXT NOT NULL,
    generation BIGINT NOT NULL,
    chunk_index INTEGER NOT NULL,
    text TEXT NOT NULL,
    payload JSONB NOT NULL,
    embedding vector({dimensions}) NOT NULL,
    bm25 sparsevec({term_space}) NOT NULL,
    terms INTEGER[] NOT NULL,
    length INTEGER NOT NULL,
    bm25_avgdl DOUBLE PRECISION NOT NULL
);
ALTER TABLE chunks ALTER COLUMN embedding SET STORAGE MAIN, ALTER COLUMN bm25 SET STORAGE MAIN;
CREATE INDEX IF NOT EXISTS chunks_version ON chunks(document_id, generation);
CREATE INDEX IF NOT EXISTS chunks_generation ON chunks(generation);
CREATE INDEX IF NOT EXISTS chunks_payload ON chunks USING GIN (payload jsonb_path_ops);
CREATE INDEX IF NOT EXISTS chunks_terms ON chunks USING GIN (terms);
CREATE TABLE IF NOT EXISTS bm25_terms (
    term INTEGER PRIMARY KEY,
    df BIGINT NOT NULL
);
"""
_COLLECTIONS_MARK = "chunk_collections"
"""Set once the chunks of a database from before collections were put in the default collection."""
_HNSW_STATE = ("SELECT i.indisvalid, c.reloptions FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid "
               "WHERE c.relname = %s AND c.relnamespace = current_schema()::regnamespace")
"""Whether the HNSW index is built (true), being built or left unfinished by a killed build (false), or absent
(no row); and its build options (``['m=32', 'ef_construction=128']``)."""
_HNSW_NEXT = f"{HNSW_INDEX}_next"
"""The index a rebuild with other graph settings builds beside the one in use, renamed to ``HNSW_INDEX`` once built."""
_HNSW_BUILDER = "ragstream.hnsw_build"
"""The advisory lock a process holds while it builds the HNSW index: one builder among all processes."""
_COLUMNS = "chunk_id, document_id, generation, chunk_index, text, payload, embedding, bm25, terms, length, bm25_avgdl"
_BUMP = ("INSERT INTO counters(name, value) VALUES (%s, %s), (%s, %s) "
         "ON CONFLICT (name) DO UPDATE SET value = counters.value + EXCLUDED.value RETURNING name, value")


class PostgresStore:
    """:class:`~ragstream.store.base.VectorStore` over the ``chunks`` table of ``db``."""

    read_only = False
    """A database server's disk is not this machine's: never opened read-only here."""

    def reopen_writable(self, min_free_bytes: int) -> None:
        """Nothing to do: never opened read-only."""

    def __init__(self, db: Database, dimensions: int, config: StoreConfig, *, owns_db: bool = False) -> None:
        self._db = db
        self._config = config
        self._owns_db = owns_db
        self._terms = Bm25Terms(config.bm25_k1, config.bm25_b, config.bm25_language)
        with db.write() as conn:
            conn.execute("SELECT pg_advisory_xact_lock(hashtext('ragstream.chunks'))")
            conn.execute(SCHEMA.format(dimensions=int(dimensions), term_space=TERM_SPACE))
            if conn.execute("SELECT 1 FROM counters WHERE name = %s", (_COLLECTIONS_MARK,)).fetchone() is None:
                # chunks from before collections are in the default one, as the catalog's migration puts their documents
                conn.execute("UPDATE chunks SET payload = payload || %s WHERE NOT payload ? %s",
                             (Jsonb({COLLECTIONS_FIELD: [DEFAULT_COLLECTION_ID]}), COLLECTIONS_FIELD))
                conn.execute("INSERT INTO counters (name, value) VALUES (%s, 1)", (_COLLECTIONS_MARK,))
            row = conn.execute("SELECT atttypmod FROM pg_attribute WHERE attrelid = 'chunks'::regclass "
                               "AND attname = 'embedding'").fetchone()
        if row is not None and int(row[0]) != dimensions:
            raise ConfigError(f"the postgres index holds {row[0]}-dimensional vectors, the embedder gives {dimensions}; "
                              "use another database (store.url) or the embedding model it was built with")

    # -- writes ------------------------------------------------------------------------------

    def upsert(self, chunks: Sequence[Chunk], vectors: np.ndarray, generation: int) -> None:
        if not chunks:
            return
        counts = [self._terms.counts(chunk.text) for chunk in chunks]
        with self._db.write() as conn:
            replaced = conn.execute("DELETE FROM chunks WHERE chunk_id = ANY(%s) RETURNING terms, length",
                                    ([chunk.chunk_id for chunk in chunks],)).fetchall()
            delta: Counter[int] = Counter(term for count in counts for term in count.tf)
            delta.subtract(term for terms, _ in replaced for term in terms)
            points, total = self._bump(conn, len(chunks) - len(replaced),
                                       sum(c.length for c in counts) - sum(int(length) for _, length in replaced))
            avgdl = total / points if points else 1.0
            rows = [
                (chunk.chunk_id, chunk.metadata.document_id, generation, chunk.metadata.chunk_index, chunk.text,
                 Jsonb(_payload(chunk, generation)), np.asarray(vector, dtype=np.float32),
                 SparseVector(self._terms.weights(count, avgdl), TERM_SPACE), sorted(count.tf), count.length, avgdl)
                for chunk, vector, count in zip(chunks, vectors, counts, strict=True)
            ]
            with conn.cursor() as cursor:
                cursor.executemany(f"INSERT INTO chunks ({_COLUMNS}) VALUES ({', '.join(['%s'] * 11)})", rows)
            _apply_frequencies(conn, delta)

    def delete_generation(self, document_id: str, generation: int) -> None:
        with self._db.write() as conn:
            removed = conn.execute("DELETE FROM chunks WHERE document_id = %s AND generation = %s RETURNING terms, length",
                                   (document_id, generation)).fetchall()
            if not removed:
                return
            self._bump(conn, -len(removed), -sum(int(length) for _, length in removed))
            delta: Counter[int] = Counter()
            delta.subtract(term for terms, _ in removed for term in terms)
            _apply_frequencies(conn, delta)

    def set_collections(self, document_id: str, collections: Sequence[str]) -> None:
        with self._db.write() as conn:
            conn.execute("UPDATE chunks SET payload = payload || %s WHERE document_id = %s",
                         (Jsonb({COLLECTIONS_FIELD: list(collections)}), document_id))

    @staticmethod
    def _bump(conn: psycopg.Connection[Any], points: int, length: int) -> tuple[int, int]:
        """Add to the chunk count and total length (locking them, always before term rows); the new values."""
        values = dict(conn.execute(_BUMP, (POINTS, points, TOTAL_LENGTH, length)).fetchall())
        return int(values[POINTS]), int(values[TOTAL_LENGTH])

    def flush(self) -> None:
        """Nothing to do: every write is a committed (durable) transaction."""

    def maybe_optimize(self) -> bool:
        """Build the HNSW index once the table is big enough, and reweigh BM25 after the average
        chunk length drifted; whether anything was done."""
        with self._db.read() as conn:
            points = _scalar(conn, "SELECT count(*) FROM chunks")
            state = conn.execute(_HNSW_STATE, (HNSW_INDEX,)).fetchone()
        built = False
        if points >= self._config.optimize_min_points and not self._current(state):
            built = self.build_ann_index()
        return self.reweigh() > 0 or built

    def _current(self, state: tuple[Any, ...] | None) -> bool:
        """Whether ``state`` (a row of ``_HNSW_STATE``) is a built index with the configured graph settings."""
        if not (state and state[0]):
            return False
        options = dict(option.split("=", 1) for option in state[1] or [])
        return options.get("m") == str(self._config.hnsw_m) and \
            options.get("ef_construction") == str(self._config.hnsw_ef_construction)

    def build_ann_index(self) -> bool:
        """Create the HNSW index on the dense vectors (concurrently: writers are not blocked); whether this call
        built it. One process builds at a time (others return at once); an unfinished index left by a build that
        was killed or cancelled (PostgreSQL keeps it, invalid, never used by queries) is dropped and built again.
        An index built with other ``store.hnsw_m`` / ``hnsw_ef_construction`` is rebuilt beside itself: searches
        keep using it until the new one is built and takes its name."""
        with self._db.pool.connection() as conn:  # autocommit: CONCURRENTLY cannot run in a transaction
            if not conn.execute("SELECT pg_try_advisory_lock(hashtext(%s))", (_HNSW_BUILDER,)).fetchone()[0]:  # type: ignore[index]
                return False
            try:
                state = conn.execute(_HNSW_STATE, (HNSW_INDEX,)).fetchone()
                following = conn.execute(_HNSW_STATE, (_HNSW_NEXT,)).fetchone()
                if state is None and self._current(following):  # a rebuild killed between its drop and its rename
                    conn.execute(f"ALTER INDEX {_HNSW_NEXT} RENAME TO {HNSW_INDEX}")
                    return True
                if self._current(state):
                    return False
                if following:  # left by a rebuild that was killed or built other settings
                    conn.execute(f"DROP INDEX CONCURRENTLY IF EXISTS {_HNSW_NEXT}")
                if state and not state[0]:
                    conn.execute(f"DROP INDEX CONCURRENTLY IF EXISTS {HNSW_INDEX}")
                replacing = bool(state and state[0])
                conn.execute(f"SET maintenance_work_mem = '{int(self._config.hnsw_build_memory_mb)}MB'")
                conn.execute(f"CREATE INDEX CONCURRENTLY {_HNSW_NEXT if replacing else HNSW_INDEX} ON chunks USING "
                             f"hnsw (embedding vector_cosine_ops) WITH (m = {int(self._config.hnsw_m)}, "
                             f"ef_construction = {int(self._config.hnsw_ef_construction)})")
                if replacing:
                    conn.execute(f"DROP INDEX CONCURRENTLY {HNSW_INDEX}")
                    conn.execute(f"ALTER INDEX {_HNSW_NEXT} RENAME TO {HNSW_INDEX}")
                return True
            finally:
                conn.execute("RESET maintenance_work_mem")
                conn.execute("SELECT pg_advisory_unlock(hashtext(%s))", (_HNSW_BUILDER,))

    def reweigh(self) -> int:
        """Recompute the BM25 weights of chunks weighed with an average length more than
        ``store.bm25_reweigh_drift`` away from the current one; how many were."""
        done = 0
        while True:
            with self._db.read() as conn:
                points, total = self._totals(conn)
                if points == 0:
                    return done
                avgdl = total / points
                stale = conn.execute("SELECT chunk_id, text FROM chunks WHERE abs(bm25_avgdl - %s) > %s LIMIT %s",
                                     (avgdl, self._config.bm25_reweigh_drift * avgdl, _REWEIGH_BATCH)).fetchall()
            if not stale:
                return done
            rows = [(SparseVector(self._terms.weights(self._terms.counts(text), avgdl), TERM_SPACE), avgdl, chunk_id)
                    for chunk_id, text in stale]
            with self._db.write() as conn, conn.cursor() as cursor:
                cursor.executemany("UPDATE chunks SET bm25 = %s, bm25_avgdl = %s WHERE chunk_id = %s", rows)
            done += len(rows)

    # -- reads -------------------------------------------------------------------------------

    def search_dense(self, vector: np.ndarray, limit: int, filters: Filters | None,
                     snapshot: Snapshot) -> list[tuple[Chunk, float]]:
        rows = self._nearest("chunk_id, text, payload", vector, limit, filters, snapshot)
        return [(_chunk(row), float(row[3])) for row in rows]

    def rank_dense(self, vector: np.ndarray, limit: int, filters: Filters | None,
                   snapshot: Snapshot) -> list[RankedId]:
        rows = self._nearest("chunk_id, document_id, chunk_index", vector, limit, filters, snapshot)
        return [RankedId(row[0], float(row[3]), row[1], row[2]) for row in rows]

    def _nearest(self, columns: str, vector: np.ndarray, limit: int, filters: Filters | None,
                 snapshot: Snapshot) -> list[tuple[Any, ...]]:
        """``columns`` (three of them) and the cosine similarity of the ``limit`` nearest visible chunks."""
        where, params = _where(filters, snapshot)
        query = np.asarray(vector, dtype=np.float32)
        with self._db.read() as conn:
            conn.execute("SELECT set_config('hnsw.ef_search', %s, true), set_config('hnsw.iterative_scan', 'strict_order', true)",
                         (str(min(max(self._config.hnsw_ef_search, limit), _EF_SEARCH_MAX)),))
            # the distance is computed once per scanned row (the sort key), and again only for the rows returned
            return conn.execute(f"SELECT {columns}, 1 - (embedding <=> %s) FROM (SELECT {columns}, "
                                f"embedding FROM chunks {where} ORDER BY embedding <=> %s LIMIT %s) AS nearest "
                                "ORDER BY embedding <=> %s", (query, *params, query, limit, query)).fetchall()

    def search_bm25(self, text: str, limit: int, filters: Filters | None,
                    snapshot: Snapshot) -> list[tuple[Chunk, float]]:
        return [(_chunk(row), float(row[3])) for row in self._best_bm25("chunk_id, text, payload", text, limit, filters,
                                                                        snapshot)]

    def rank_bm25(self, text: str, limit: int, filters: Filters | None, snapshot: Snapshot) -> list[RankedId]:
        rows = self._best_bm25("chunk_id, document_id, chunk_index", text, limit, filters, snapshot)
        return [RankedId(row[0], float(row[3]), row[1], row[2]) for row in rows]

    def fetch(self, chunk_ids: Sequence[str]) -> dict[str, Chunk]:
        if not chunk_ids:
            return {}
        with self._db.read() as conn:
            rows = conn.execute("SELECT chunk_id, text, payload FROM chunks WHERE chunk_id = ANY(%s)",
                                (list(chunk_ids),)).fetchall()
        return {row[0]: _chunk(row) for row in rows}

    def _best_bm25(self, columns: str, text: str, limit: int, filters: Filters | None,
                   snapshot: Snapshot) -> list[tuple[Any, ...]]:
        """``columns`` (three of them) and the BM25 score of the ``limit`` best visible chunks."""
        terms = self._terms.query_terms(text)
        if not terms:
            return []
        with self._db.read() as conn:
            points, _ = self._totals(conn)
            frequencies = dict(conn.execute("SELECT term, df FROM bm25_terms WHERE term = ANY(%s)", (terms,)).fetchall())
            weights = query_weights(terms, points, frequencies)
            if not weights:
                return []
            query = SparseVector(weights, TERM_SPACE)
            order = rarest_first(weights, frequencies)
            most = self._config.bm25_max_candidates
            # the terms whose chunks stay within the cap (at least one; all of them in a corpus no larger)
            allowed = len(order) if points <= most else first_pass(order, frequencies, most)
            taken = min(first_pass(order, frequencies, self._config.bm25_first_pass_chunks), allowed)
            while True:  # the chunks holding the rarest terms, then more terms while others could still enter the top
                where, params = _where(filters, snapshot, "terms && %s", [order[:taken]])
                if frequencies[order[0]] > most:  # every term is that common: rank among ``most`` of its chunks
                    source, params = f"(SELECT {columns}, bm25 FROM chunks {where} LIMIT %s) AS capped", [*params, most]
                else:
                    source = f"chunks {where}"
                rows = conn.execute(f"SELECT {columns}, -(bm25 <#> %s) AS score FROM {source} "
                                    "ORDER BY score DESC LIMIT %s", (query, *params, limit)).fetchall()
                threshold = float(rows[-1][3]) if rows and len(rows) == limit else 0.0
                needed = min(terms_needed(order, weights, self._config.bm25_k1 + 1.0, threshold), allowed)
                if needed <= taken:
                    return rows
                taken = needed

    @staticmethod
    def _totals(conn: psycopg.Connection[Any]) -> tuple[int, int]:
        values = dict(conn.execute("SELECT name, value FROM counters WHERE name = ANY(%s)", ([POINTS, TOTAL_LENGTH],)).fetchall())
        return int(values.get(POINTS, 0)), int(values.get(TOTAL_LENGTH, 0))

    def count(self, filters: Filters | None = None) -> int:
        where, params = _where(filters, None)
        with self._db.read() as conn:
            return _scalar(conn, f"SELECT count(*) FROM chunks {where}", params)

    def chunks_of(self, document_id: str, generation: int) -> list[Chunk]:
        with self._db.read() as conn:
            rows = conn.execute("SELECT chunk_id, text, payload FROM chunks WHERE document_id = %s AND generation = %s "
                                "ORDER BY chunk_index", (document_id, generation)).fetchall()
        return [_chunk(row) for row in rows]

    def points_of(self, document_id: str, generation: int) -> list[tuple[Chunk, np.ndarray]]:
        with self._db.read() as conn:
            rows = conn.execute("SELECT chunk_id, text, payload, embedding FROM chunks WHERE document_id = %s "
                                "AND generation = %s ORDER BY chunk_index", (document_id, generation)).fetchall()
        return [(_chunk(row), np.asarray(row[3].to_numpy() if hasattr(row[3], "to_numpy") else row[3], dtype=np.float32))
                for row in rows]

    def info(self) -> Mapping[str, Any]:
        with self._db.read() as conn:
            points = _scalar(conn, "SELECT count(*) FROM chunks")
            state = conn.execute(_HNSW_STATE, (HNSW_INDEX,)).fetchone()
            indexed = bool(state and state[0])
            size = _scalar(conn, "SELECT pg_total_relation_size('chunks') + pg_total_relation_size('bm25_terms')")
        return {"backend": "postgres", "points": points, "hnsw_index": indexed,
                "hnsw_options": list(state[1] or []) if indexed and state else [],
                "hnsw_ef_search": self._config.hnsw_ef_search, "disk_bytes": size}

    def close(self) -> None:
        if self._owns_db:
            self._db.close()


def _payload(chunk: Chunk, generation: int) -> dict[str, Any]:
    payload = to_payload(chunk, generation)
    del payload["text"]  # in its own column
    return payload


def _chunk(row: Sequence[Any]) -> Chunk:
    payload = row[2] if isinstance(row[2], dict) else json.loads(row[2])
    return from_payload(str(row[0]), {**payload, "text": row[1]})


def _nest(path: str, value: Any) -> dict[str, Any]:
    """``{"a": {"b": value}}`` for ``a.b``."""
    nested: Any = value
    for part in reversed(path.split(".")):
        nested = {part: nested}
    return dict(nested)


def _where(filters: Filters | None, snapshot: Snapshot | None, *extra: Any) -> tuple[str, list[Any]]:
    """The WHERE clause of ``filters`` and ``snapshot`` (its visible generations), and its parameters.

    ``extra`` is one more (clause, parameters) pair to AND in.
    """
    clauses: list[str] = []
    params: list[Any] = []
    if extra:
        clauses.append(extra[0])
        params.extend(extra[1])
    for key, raw in (filters or {}).items():
        value = filter_value(raw)
        values = value if isinstance(value, list) else [value]
        if not values:
            clauses.append("FALSE")
            continue
        path = payload_key(key)
        alternatives = []
        for item in values:  # the field equals the value, or is a list holding it
            alternatives.append("payload @> %s OR payload @> %s")
            params.extend([Jsonb(_nest(path, item)), Jsonb(_nest(path, [item]))])
        clauses.append(f"({' OR '.join(alternatives)})")
    if snapshot is not None:
        clauses.append("generation <= %s")
        params.append(snapshot.max_generation)
        if snapshot.uncommitted:
            clauses.append("NOT (generation = ANY(%s))")
            params.append(sorted(snapshot.uncommitted))
    return ("WHERE " + " AND ".join(clauses) if clauses else ""), params


def _apply_frequencies(conn: psycopg.Connection[Any], delta: Counter[int]) -> None:
    """Add ``delta`` to the document frequencies (in term order, so concurrent writers never deadlock)."""
    changed = sorted((term, change) for term, change in delta.items() if change)
    if not changed:
        return
    terms = [term for term, _ in changed]
    conn.execute("INSERT INTO bm25_terms(term, df) SELECT * FROM unnest(%s::integer[], %s::bigint[]) ORDER BY 1 "
                 "ON CONFLICT (term) DO UPDATE SET df = bm25_terms.df + EXCLUDED.df",
                 (terms, [change for _, change in changed]))
    if any(change < 0 for _, change in changed):
        conn.execute("DELETE FROM bm25_terms WHERE term = ANY(%s) AND df <= 0", (terms,))


def _scalar(conn: psycopg.Connection[Any], query: str, params: Sequence[Any] = ()) -> int:
    row = conn.execute(query, params).fetchone()
    return int(row[0]) if row else 0


__all__ = ["PostgresStore", "TermCounts"]
