"""The PostgreSQL catalog: the SQLite catalog's tables and protocol in a database every worker shares.

Snapshots are read in one REPEATABLE READ transaction, so every process derives the same
:class:`~ragstream.store.base.Snapshot` from committed state; a version switch is one
transaction. New tables or columns go into ``SCHEMA`` with ``IF NOT EXISTS`` (the schema is
applied on every open, under an advisory lock).
"""

from __future__ import annotations

import builtins
import contextlib
import json
import secrets
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import numpy as np
import psycopg

from ragstream.config import StoreConfig
from ragstream.errors import VectorDBUnavailableError
from ragstream.models import DocumentRecord, LoadedDocument, Page
from ragstream.store.base import Snapshot
from ragstream.store.catalog_base import (
    CLAIMED_JOB_COLUMNS,
    COMMIT_SEQUENCE,
    GENERATION_COUNTER,
    JOB_COLUMNS,
    JOB_QUEUED,
    JOB_RUNNING,
    SORT_COLUMNS,
    UNFINISHED_JOB_STATES,
    DocumentPage,
    DocumentVersion,
    RootRecord,
    TurnRow,
)
from ragstream.store.postgres.connection import Database

SCHEMA = """
CREATE TABLE IF NOT EXISTS documents (
    document_id TEXT PRIMARY KEY,
    source TEXT NOT NULL,
    title TEXT NOT NULL,
    mime TEXT NOT NULL,
    checksum TEXT NOT NULL,
    generation BIGINT NOT NULL,
    chunk_count INTEGER NOT NULL,
    fingerprint TEXT NOT NULL,
    ingested_at TEXT NOT NULL,
    metadata TEXT NOT NULL,
    size_bytes BIGINT NOT NULL,
    pages TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS documents_checksum ON documents(checksum);
CREATE INDEX IF NOT EXISTS documents_generation ON documents(generation);
CREATE TABLE IF NOT EXISTS write_intents (
    intent_id BIGSERIAL PRIMARY KEY,
    document_id TEXT NOT NULL,
    new_generation BIGINT,
    old_generation BIGINT
);
ALTER TABLE write_intents ADD COLUMN IF NOT EXISTS owner BIGINT;
CREATE TABLE IF NOT EXISTS embeddings (
    model_id TEXT NOT NULL,
    content_hash TEXT NOT NULL,
    vector BYTEA NOT NULL,
    PRIMARY KEY (model_id, content_hash)
);
CREATE TABLE IF NOT EXISTS counters (
    name TEXT PRIMARY KEY,
    value BIGINT NOT NULL
);
CREATE TABLE IF NOT EXISTS conversation_turns (
    message_id TEXT PRIMARY KEY,
    conversation_id TEXT NOT NULL,
    seq INTEGER NOT NULL,
    user_text TEXT NOT NULL,
    assistant_text TEXT NOT NULL,
    created_at TEXT NOT NULL,
    incomplete BOOLEAN NOT NULL DEFAULT FALSE
);
CREATE INDEX IF NOT EXISTS conversation_turns_by_conversation ON conversation_turns(conversation_id, seq);
ALTER TABLE documents ADD COLUMN IF NOT EXISTS owner TEXT;
ALTER TABLE documents ADD COLUMN IF NOT EXISTS first_ingested_at TEXT;
CREATE INDEX IF NOT EXISTS documents_owner ON documents(owner);
CREATE INDEX IF NOT EXISTS documents_by_title ON documents(lower(title));
CREATE INDEX IF NOT EXISTS documents_by_source ON documents(lower(source));
CREATE INDEX IF NOT EXISTS documents_by_chunks ON documents(chunk_count);
CREATE INDEX IF NOT EXISTS documents_by_ingest ON documents(first_ingested_at);
CREATE INDEX IF NOT EXISTS documents_by_update ON documents(ingested_at);
ALTER TABLE conversation_turns ADD COLUMN IF NOT EXISTS owner TEXT NOT NULL DEFAULT '';
CREATE INDEX IF NOT EXISTS conversation_turns_by_owner ON conversation_turns(owner, conversation_id, seq);
CREATE TABLE IF NOT EXISTS jobs (
    job_id TEXT PRIMARY KEY,
    kind TEXT NOT NULL,
    state TEXT NOT NULL,
    payload TEXT NOT NULL,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS jobs_by_state ON jobs(state);
ALTER TABLE jobs ADD COLUMN IF NOT EXISTS worker TEXT;
ALTER TABLE jobs ADD COLUMN IF NOT EXISTS lease_until DOUBLE PRECISION;
ALTER TABLE jobs ADD COLUMN IF NOT EXISTS attempts INTEGER NOT NULL DEFAULT 0;
CREATE INDEX IF NOT EXISTS jobs_queue ON jobs(created_at) WHERE state IN ('queued', 'running');
ALTER TABLE documents ADD COLUMN IF NOT EXISTS root TEXT;
CREATE INDEX IF NOT EXISTS documents_root ON documents(root);
CREATE TABLE IF NOT EXISTS sync_roots (
    root TEXT PRIMARY KEY,
    last_sync_at TEXT,
    last_summary TEXT NOT NULL DEFAULT '{}',
    watched_until DOUBLE PRECISION
);
CREATE UNLOGGED TABLE IF NOT EXISTS reader_leases (
    reader_id BIGSERIAL PRIMARY KEY,
    sequence BIGINT NOT NULL,
    expires_at DOUBLE PRECISION NOT NULL
);
"""
_CLOCK = "extract(epoch FROM clock_timestamp())"
# The oldest job that is queued or whose worker's lease ran out, locked for this transaction; a job another
# worker is taking at the same moment is skipped (SKIP LOCKED), so no job is taken twice.
_CLAIM = f"""
WITH next AS (
    SELECT job_id FROM jobs
    WHERE state = %(queued)s OR (state = %(running)s AND (lease_until IS NULL OR lease_until < {_CLOCK}))
    ORDER BY created_at, job_id LIMIT 1 FOR UPDATE SKIP LOCKED)
UPDATE jobs SET state = %(running)s, worker = %(worker)s, lease_until = {_CLOCK} + %(lease)s,
    attempts = jobs.attempts + 1, updated_at = %(now)s
FROM next WHERE jobs.job_id = next.job_id
RETURNING {", ".join(f"jobs.{column}" for column in CLAIMED_JOB_COLUMNS)}
"""

_UNCOMMITTED = """
SELECT g FROM (SELECT new_generation AS g FROM write_intents UNION SELECT old_generation FROM write_intents) AS named
WHERE g IS NOT NULL AND NOT EXISTS (SELECT 1 FROM documents WHERE documents.generation = g)
"""
# This writer's intents and those of writers that are gone: their advisory lock (held by a live
# catalog for its whole life) is free.
_ORPHANED = """
SELECT intent_id, document_id, new_generation, old_generation FROM write_intents w
WHERE owner IS NULL OR owner = %s OR NOT EXISTS (
    SELECT 1 FROM pg_locks l WHERE l.locktype = 'advisory' AND l.granted AND l.objsubid = 1
    AND ((l.classid::bigint << 32) | l.objid::bigint) = w.owner)
ORDER BY intent_id
"""
_RECORD_COLUMNS = ("document_id, source, title, mime, checksum, generation, chunk_count, fingerprint, ingested_at, metadata, "
                   "owner, first_ingested_at, root")
_INSERT_COLUMNS = ("document_id, source, title, mime, checksum, generation, chunk_count, fingerprint, ingested_at, metadata, "
                   "owner, size_bytes, pages, first_ingested_at, root")
# A new version keeps the time its document was first ingested (unless the version names one: a copy), and
# its root unless it names one.
_UPSERT_DOCUMENT = (
    f"INSERT INTO documents ({_INSERT_COLUMNS}) VALUES ({', '.join(['%s'] * 15)}) ON CONFLICT (document_id) DO UPDATE SET "
    + ", ".join(f"{c} = EXCLUDED.{c}" for c in _INSERT_COLUMNS.split(", ")[1:-2])
    + ", first_ingested_at = COALESCE(%s, documents.first_ingested_at, EXCLUDED.first_ingested_at)"
    + ", root = COALESCE(EXCLUDED.root, documents.root)"
)
_ROOT_COLUMNS = ("root, (SELECT COUNT(*) FROM documents WHERE documents.root = sync_roots.root), last_sync_at, last_summary, "
                 "watched_until")
NO_OWNER = ""
"""``conversation_turns.owner`` of conversations held for no user (the Python API and CLI)."""
_OWNER_KEYS = 2**62  # random advisory-lock keys; a collision needs two live writers drawing the same one
_BUMP = ("INSERT INTO counters(name, value) VALUES (%s, %s) "
         "ON CONFLICT (name) DO UPDATE SET value = counters.value + EXCLUDED.value RETURNING value")


class PostgresCatalog:
    """:class:`~ragstream.store.catalog_base.CatalogBackend` in the PostgreSQL database at ``store.url``."""

    read_only = False
    """A database server's disk is not this machine's: never opened read-only here."""

    def reopen_writable(self, min_free_bytes: int) -> None:
        """Nothing to do: never opened read-only."""

    def __init__(self, config: StoreConfig) -> None:
        self.db = Database(config, SCHEMA)
        self._reader_lease_seconds = config.reader_lease_seconds
        # Several processes share the database: each writer marks its intents with an owner key whose
        # advisory lock it holds on a connection of its own while it lives, so recovery on another
        # process replays only the intents of writers that died (their lock is free), never a write in flight.
        self.owner = secrets.randbelow(_OWNER_KEYS) + 1
        try:
            self._owner_conn = psycopg.connect(config.url or "", autocommit=True,
                                               connect_timeout=int(config.connect_timeout_seconds))
            self._owner_conn.execute("SELECT pg_advisory_lock(%s)", (self.owner,))
        except psycopg.Error as error:
            self.db.close()
            raise VectorDBUnavailableError(f"PostgreSQL is unavailable: {error}") from error

    def close(self) -> None:
        with contextlib.suppress(psycopg.Error):  # what is left of our intents is recovery's now
            self._owner_conn.execute("SELECT pg_advisory_unlock(%s)", (self.owner,))  # at once, not when the server
        self._owner_conn.close()                                                       # notices the closed socket
        self.db.close()

    @contextmanager
    def read_transaction(self) -> Iterator[None]:
        with self.db.read():
            yield

    def open_reader(self) -> int | None:
        """Every process deletes replaced versions only once no registered reader may read them (a reader of
        another process included); the row is unlogged: a crash loses it, with the readers it protected."""
        with self.db.write() as conn:
            return _one(conn, "INSERT INTO reader_leases (sequence, expires_at) VALUES (COALESCE((SELECT value FROM "
                        f"counters WHERE name = %s), 0), {_CLOCK} + %s) RETURNING reader_id",
                        (COMMIT_SEQUENCE, self._reader_lease_seconds))

    def close_reader(self, reader_id: int) -> None:
        with self.db.write() as conn:
            conn.execute("DELETE FROM reader_leases WHERE reader_id = %s", (reader_id,))

    def oldest_reader(self) -> float:
        with self.db.write() as conn:
            conn.execute(f"DELETE FROM reader_leases WHERE expires_at < {_CLOCK}")  # readers that died or ran over
            row = conn.execute("SELECT MIN(sequence) FROM reader_leases").fetchone()
        return float("inf") if row is None or row[0] is None else float(row[0])

    def snapshot(self) -> Snapshot:
        with self.db.read() as conn:
            counters = dict(conn.execute("SELECT name, value FROM counters WHERE name = ANY(%s)",
                                         ([COMMIT_SEQUENCE, GENERATION_COUNTER],)).fetchall())
            uncommitted = frozenset(int(row[0]) for row in conn.execute(_UNCOMMITTED))
        return Snapshot(sequence=int(counters.get(COMMIT_SEQUENCE, 0)),
                        max_generation=int(counters.get(GENERATION_COUNTER, 0)), uncommitted=uncommitted)

    # -- settings, generations and intents ---------------------------------------------------

    def setting(self, name: str) -> int | None:
        with self.db.read() as conn:
            row = conn.execute("SELECT value FROM counters WHERE name = %s", (name,)).fetchone()
        return int(row[0]) if row else None

    def set_setting(self, name: str, value: int) -> None:
        with self.db.write() as conn:
            conn.execute("INSERT INTO counters(name, value) VALUES (%s, %s) "
                         "ON CONFLICT (name) DO UPDATE SET value = EXCLUDED.value", (name, value))

    def begin_versions(self, documents: Sequence[tuple[str, int | None]]) -> tuple[list[int], list[int]]:
        count = len(documents)
        with self.db.write() as conn:
            last = _one(conn, _BUMP, (GENERATION_COUNTER, count))
            generations = list(range(last - count + 1, last + 1))
            intents = [_add_intent(conn, self.owner, document_id, generation, old)
                       for (document_id, old), generation in zip(documents, generations, strict=True)]
        return generations, intents

    def add_intents(self, intents: Sequence[tuple[str, int | None, int | None]]) -> list[int]:
        with self.db.write() as conn:
            return [_add_intent(conn, self.owner, *intent) for intent in intents]

    def clear_intents(self, intent_ids: Sequence[int]) -> None:
        with self.db.write() as conn:
            conn.execute("DELETE FROM write_intents WHERE intent_id = ANY(%s)", (list(intent_ids),))

    def intents(self) -> builtins.list[tuple[int, str, int | None, int | None]]:
        """Unfinished intents of this catalog and of writers no longer running (what recovery may
        replay); never those of another live process, whose write may be in flight."""
        with self.db.read() as conn:
            rows = conn.execute(_ORPHANED, (self.owner,)).fetchall()
        return [(int(a), str(b), c, d) for a, b, c, d in rows]

    # -- documents ---------------------------------------------------------------------------

    def commit_documents(self, versions: Sequence[DocumentVersion], removed: Sequence[str] = ()) -> int:
        rows = [
            (
                v.doc.document_id, v.doc.source, v.doc.title, v.doc.mime, v.doc.checksum, v.generation, v.chunk_count,
                v.fingerprint, v.ingested_at, json.dumps(v.doc.metadata, sort_keys=True), v.doc.owner, v.doc.size_bytes,
                json.dumps([page.model_dump() for page in v.doc.pages]), v.first_ingested_at or v.ingested_at,
                v.doc.root, v.first_ingested_at,
            )
            for v in versions
        ]
        with self.db.write() as conn:
            with conn.cursor() as cursor:
                cursor.executemany(_UPSERT_DOCUMENT, rows)
            if removed:
                conn.execute("DELETE FROM documents WHERE document_id = ANY(%s)", (list(removed),))
            return _one(conn, _BUMP, (COMMIT_SEQUENCE, 1))

    def remove_document(self, document_id: str) -> int:
        with self.db.write() as conn:
            conn.execute("DELETE FROM documents WHERE document_id = %s", (document_id,))
            return _one(conn, _BUMP, (COMMIT_SEQUENCE, 1))

    def get(self, document_id: str, user: str | None = None) -> DocumentRecord | None:
        visible, params = _visible_to(user)
        with self.db.read() as conn:
            row = conn.execute(f"SELECT {_RECORD_COLUMNS} FROM documents WHERE document_id = %s AND {visible}",
                               (document_id, *params)).fetchone()
        return _record(row) if row else None

    def find_by_checksum(self, checksum: str, user: str | None = None) -> builtins.list[DocumentRecord]:
        visible, params = _visible_to(user)
        with self.db.read() as conn:
            rows = conn.execute(f"SELECT {_RECORD_COLUMNS} FROM documents WHERE checksum = %s AND {visible} "
                                "ORDER BY source", (checksum, *params)).fetchall()
        return [_record(row) for row in rows]

    def list(self, user: str | None = None) -> builtins.list[DocumentRecord]:
        visible, params = _visible_to(user)
        with self.db.read() as conn:
            rows = conn.execute(f"SELECT {_RECORD_COLUMNS} FROM documents WHERE {visible} ORDER BY source",
                                params).fetchall()
        return [_record(row) for row in rows]

    def page(self, offset: int, limit: int, query: str = "", sort: str = "source",
             descending: bool = False, *, user: str | None = None) -> DocumentPage:
        column = SORT_COLUMNS.get(sort, SORT_COLUMNS["source"])
        direction = "DESC" if descending else "ASC"
        visible, params = _visible_to(user)
        where = f"WHERE {visible}"
        if query:
            pattern = "%" + query.casefold().replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
            where = f"{where} AND (lower(title) LIKE %s OR lower(source) LIKE %s)"
            params = (*params, pattern, pattern)
        with self.db.read() as conn:
            total = _one(conn, f"SELECT COUNT(*) FROM documents {where}", params)
            rows = conn.execute(f"SELECT {_RECORD_COLUMNS} FROM documents {where} ORDER BY {column} {direction} "
                                f"NULLS LAST, source {direction} LIMIT %s OFFSET %s", (*params, limit, offset)).fetchall()
        return DocumentPage(records=[_record(row) for row in rows], total=total)

    def live_generations(self) -> dict[str, int]:
        with self.db.read() as conn:
            return {str(d): int(g) for d, g in conn.execute("SELECT document_id, generation FROM documents")}

    def stored_document(self, document_id: str) -> LoadedDocument | None:
        with self.db.read() as conn:
            row = conn.execute(
                "SELECT document_id, source, title, mime, checksum, size_bytes, pages, metadata, owner, root FROM documents "
                "WHERE document_id = %s", (document_id,),
            ).fetchone()
        if row is None:
            return None
        pages = tuple(Page(**page) for page in json.loads(row[6]))
        return LoadedDocument(document_id=row[0], source=row[1], title=row[2], mime=row[3], checksum=row[4],
                              size_bytes=row[5], pages=pages, metadata=json.loads(row[7]), owner=row[8], root=row[9])

    # -- synced roots ------------------------------------------------------------------------

    def documents_in_root(self, root: str) -> builtins.list[DocumentRecord]:
        with self.db.read() as conn:
            rows = conn.execute(f"SELECT {_RECORD_COLUMNS} FROM documents WHERE root = %s ORDER BY source",
                                (root,)).fetchall()
        return [_record(row) for row in rows]

    def set_root(self, document_ids: Sequence[str], root: str) -> None:
        with self.db.write() as conn:
            conn.execute("UPDATE documents SET root = %s WHERE document_id = ANY(%s)", (root, list(document_ids)))

    def roots(self) -> builtins.list[RootRecord]:
        with self.db.read() as conn:
            rows = conn.execute(f"SELECT {_ROOT_COLUMNS} FROM sync_roots ORDER BY root").fetchall()
        return [RootRecord(str(r[0]), int(r[1]), r[2], str(r[3]), None if r[4] is None else float(r[4])) for r in rows]

    def record_sync(self, root: str, synced_at: str, summary: str) -> None:
        with self.db.write() as conn:
            conn.execute("INSERT INTO sync_roots (root, last_sync_at, last_summary) VALUES (%s, %s, %s) ON CONFLICT (root) "
                         "DO UPDATE SET last_sync_at = EXCLUDED.last_sync_at, last_summary = EXCLUDED.last_summary",
                         (root, synced_at, summary))

    def watch_roots(self, roots: Sequence[str], until: float | None) -> None:
        with self.db.write() as conn:
            conn.execute("UPDATE sync_roots SET watched_until = %s WHERE root = ANY(%s)", (until, list(roots)))

    def forget_root(self, root: str) -> None:
        with self.db.write() as conn:
            conn.execute("DELETE FROM sync_roots WHERE root = %s", (root,))

    # -- embedding cache ---------------------------------------------------------------------

    def cached_vectors(self, model_id: str, content_hashes: Sequence[str]) -> dict[str, np.ndarray]:
        unique = builtins.list(dict.fromkeys(content_hashes))
        if not unique:
            return {}
        with self.db.read() as conn:
            rows = conn.execute("SELECT content_hash, vector FROM embeddings WHERE model_id = %s AND content_hash = ANY(%s)",
                                (model_id, unique)).fetchall()
        return {str(content_hash): np.frombuffer(blob, dtype=np.float32) for content_hash, blob in rows}

    def cache_vectors(self, model_id: str, items: Iterable[tuple[str, np.ndarray]]) -> None:
        rows = [(model_id, content_hash, np.asarray(vector, dtype=np.float32).tobytes()) for content_hash, vector in items]
        if not rows:
            return
        with self.db.write() as conn, conn.cursor() as cursor:
            cursor.executemany("INSERT INTO embeddings VALUES (%s, %s, %s) ON CONFLICT (model_id, content_hash) "
                               "DO UPDATE SET vector = EXCLUDED.vector", rows)

    # -- conversations -----------------------------------------------------------------------

    def add_turn(self, conversation_id: str, message_id: str, user_text: str, assistant_text: str,
                 created_at: str, keep: int, *, incomplete: bool = False, owner: str | None = None) -> None:
        key = (conversation_id, owner or NO_OWNER)
        with self.db.write() as conn:
            conn.execute(
                "INSERT INTO conversation_turns (message_id, conversation_id, owner, seq, user_text, assistant_text, "
                "created_at, incomplete) VALUES (%s, %s, %s, (SELECT COALESCE(MAX(seq), 0) + 1 FROM conversation_turns "
                "WHERE conversation_id = %s AND owner = %s), %s, %s, %s, %s)",
                (message_id, *key, *key, user_text, assistant_text, created_at, incomplete),
            )
            conn.execute(
                "DELETE FROM conversation_turns WHERE conversation_id = %s AND owner = %s AND seq NOT IN "
                "(SELECT seq FROM conversation_turns WHERE conversation_id = %s AND owner = %s ORDER BY seq DESC LIMIT %s)",
                (*key, *key, max(keep, 0)),
            )

    def recent_turns(self, conversation_id: str, limit: int, owner: str | None = None) -> builtins.list[tuple[str, str]]:
        with self.db.read() as conn:
            rows = conn.execute("SELECT user_text, assistant_text FROM conversation_turns WHERE conversation_id = %s "
                                "AND owner = %s ORDER BY seq DESC LIMIT %s",
                                (conversation_id, owner or NO_OWNER, max(limit, 0))).fetchall()
        return [(user, assistant) for user, assistant in reversed(rows)]

    def conversation_turns(self, conversation_id: str, owner: str | None = None) -> builtins.list[dict[str, Any]]:
        with self.db.read() as conn:
            rows = conn.execute("SELECT message_id, user_text, assistant_text, created_at, incomplete FROM conversation_turns "
                                "WHERE conversation_id = %s AND owner = %s ORDER BY seq",
                                (conversation_id, owner or NO_OWNER)).fetchall()
        keys = ("message_id", "user", "assistant", "created_at", "incomplete")
        return [dict(zip(keys, (*row[:4], bool(row[4])), strict=True)) for row in rows]


    # -- copying to another catalog (ragstream migrate) ------------------------------------------

    def raise_generation(self, at_least: int) -> None:
        with self.db.write() as conn:
            conn.execute("INSERT INTO counters(name, value) VALUES (%s, %s) "
                         "ON CONFLICT (name) DO UPDATE SET value = GREATEST(counters.value, EXCLUDED.value)",
                         (GENERATION_COUNTER, at_least))

    def embedding_rows(self, after: tuple[str, str] | None, limit: int) -> builtins.list[tuple[str, str, np.ndarray]]:
        model_id, content_hash = after or ("", "")
        with self.db.read() as conn:
            rows = conn.execute("SELECT model_id, content_hash, vector FROM embeddings WHERE (model_id, content_hash) > "
                                "(%s, %s) ORDER BY model_id, content_hash LIMIT %s",
                                (model_id, content_hash, limit)).fetchall()
        return [(str(row[0]), str(row[1]), np.frombuffer(row[2], dtype=np.float32)) for row in rows]

    def turn_rows(self, after: str | None, limit: int) -> builtins.list[TurnRow]:
        with self.db.read() as conn:
            rows = conn.execute(
                "SELECT conversation_id, seq, message_id, user_text, assistant_text, created_at, incomplete, owner "
                "FROM conversation_turns WHERE message_id COLLATE \"C\" > %s ORDER BY message_id COLLATE \"C\" LIMIT %s",
                (after or "", limit)).fetchall()
        return [TurnRow(row[0], int(row[1]), row[2], row[3], row[4], row[5], bool(row[6]), row[7]) for row in rows]

    def import_turns(self, rows: Sequence[TurnRow]) -> None:
        if not rows:
            return
        with self.db.write() as conn, conn.cursor() as cursor:
            cursor.executemany(
                "INSERT INTO conversation_turns (conversation_id, seq, message_id, user_text, assistant_text, created_at, "
                "incomplete, owner) VALUES (%s, %s, %s, %s, %s, %s, %s, %s) ON CONFLICT (message_id) DO UPDATE SET "
                "conversation_id = EXCLUDED.conversation_id, seq = EXCLUDED.seq, user_text = EXCLUDED.user_text, "
                "assistant_text = EXCLUDED.assistant_text, created_at = EXCLUDED.created_at, "
                "incomplete = EXCLUDED.incomplete, owner = EXCLUDED.owner", [tuple(row) for row in rows])


    # -- background jobs ---------------------------------------------------------------------

    def save_job(self, job_id: str, kind: str, state: str, payload: str, now: str) -> None:
        with self.db.write() as conn:
            conn.execute(
                "INSERT INTO jobs (job_id, kind, state, payload, created_at, updated_at) VALUES (%s, %s, %s, %s, %s, %s) "
                "ON CONFLICT (job_id) DO UPDATE SET state = EXCLUDED.state, payload = EXCLUDED.payload, "
                "updated_at = EXCLUDED.updated_at", (job_id, kind, state, payload, now, now))

    def job(self, job_id: str) -> dict[str, str] | None:
        with self.db.read() as conn:
            row = conn.execute(f"SELECT {', '.join(JOB_COLUMNS)} FROM jobs WHERE job_id = %s", (job_id,)).fetchone()
        return dict(zip(JOB_COLUMNS, row, strict=True)) if row else None

    def unfinished_jobs(self) -> builtins.list[dict[str, str]]:
        with self.db.read() as conn:
            rows = conn.execute(f"SELECT {', '.join(JOB_COLUMNS)} FROM jobs WHERE state = ANY(%s) ORDER BY created_at",
                                (builtins.list(UNFINISHED_JOB_STATES),)).fetchall()
        return [dict(zip(JOB_COLUMNS, row, strict=True)) for row in rows]

    def claim_job(self, worker: str, lease_seconds: float, now: str) -> dict[str, Any] | None:
        with self.db.write() as conn:
            row = conn.execute(_CLAIM, {"queued": JOB_QUEUED, "running": JOB_RUNNING, "worker": worker,
                                        "lease": lease_seconds, "now": now}).fetchone()
        return dict(zip(CLAIMED_JOB_COLUMNS, row, strict=True)) if row else None

    def renew_job(self, job_id: str, worker: str, lease_seconds: float) -> bool:
        with self.db.write() as conn:
            cursor = conn.execute(f"UPDATE jobs SET lease_until = {_CLOCK} + %s WHERE job_id = %s AND worker = %s "
                                  "AND state = %s", (lease_seconds, job_id, worker, JOB_RUNNING))
            return cursor.rowcount == 1

    def update_job(self, job_id: str, worker: str, state: str, payload: str, now: str, lease_seconds: float) -> bool:
        held = state == JOB_RUNNING
        with self.db.write() as conn:
            cursor = conn.execute(
                f"UPDATE jobs SET state = %s, payload = %s, updated_at = %s, "
                f"lease_until = CASE WHEN %s THEN {_CLOCK} + %s END, worker = CASE WHEN %s THEN NULL ELSE worker END, "
                "attempts = attempts - CASE WHEN %s THEN 1 ELSE 0 END "
                "WHERE job_id = %s AND worker = %s AND state = %s",
                (state, payload, now, held, lease_seconds, state == JOB_QUEUED, state == JOB_QUEUED, job_id, worker,
                 JOB_RUNNING))
            return cursor.rowcount == 1


def _one(conn: psycopg.Connection[Any], query: str, params: tuple[Any, ...]) -> int:
    row = conn.execute(query, params).fetchone()
    assert row is not None
    return int(row[0])


def _add_intent(conn: psycopg.Connection[Any], owner: int, document_id: str, new: int | None, old: int | None) -> int:
    return _one(conn, "INSERT INTO write_intents(document_id, new_generation, old_generation, owner) "
                "VALUES (%s, %s, %s, %s) RETURNING intent_id", (document_id, new, old, owner))


def _visible_to(user: str | None) -> tuple[str, tuple[str, ...]]:
    """The WHERE condition (and its parameters) of the documents ``user`` may see: theirs and the
    shared ones (owner NULL); every document when ``user`` is None."""
    if user is None:
        return "TRUE", ()
    return "(owner IS NULL OR owner = %s)", (user,)


def _record(row: tuple[Any, ...]) -> DocumentRecord:
    values = dict(zip(_RECORD_COLUMNS.split(", "), row, strict=True))
    values["metadata"] = json.loads(values["metadata"])
    values["first_ingested_at"] = values["first_ingested_at"] or values["ingested_at"]
    return DocumentRecord(**values)
