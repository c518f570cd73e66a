"""The SQLite catalog: document registry, stored document text, write intents and embedding cache.

The catalog is the source of truth for which *generation* (version) of each document is live.
Vector-store points of any other generation are invisible to readers (:meth:`Catalog.snapshot`) and
removed once no reader needs them, or on recovery. docs/consistency.md tells the whole protocol.
"""

from __future__ import annotations

import builtins
import json
import logging
import sqlite3
import threading
import time
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np

from ragstream.errors import InsufficientStorageError
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
from ragstream.store.disk import ensure_free_space

__all__ = ["COMMIT_SEQUENCE", "GENERATION_COUNTER", "Catalog", "DocumentPage", "DocumentVersion"]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS documents (
    document_id TEXT PRIMARY KEY,
    source TEXT NOT NULL,
    title TEXT NOT NULL,
    mime TEXT NOT NULL,
    checksum TEXT NOT NULL,
    generation INTEGER NOT NULL,
    chunk_count INTEGER NOT NULL,
    fingerprint TEXT NOT NULL,
    ingested_at TEXT NOT NULL,
    metadata TEXT NOT NULL,
    size_bytes INTEGER NOT NULL,
    pages TEXT NOT NULL,
    owner TEXT,
    first_ingested_at TEXT,
    root TEXT
);
CREATE INDEX IF NOT EXISTS documents_checksum ON documents(checksum);
CREATE INDEX IF NOT EXISTS documents_generation ON documents(generation);
CREATE INDEX IF NOT EXISTS documents_by_title ON documents(lower(title));
CREATE INDEX IF NOT EXISTS documents_by_source ON documents(lower(source));
CREATE INDEX IF NOT EXISTS documents_by_chunks ON documents(chunk_count);
CREATE INDEX IF NOT EXISTS documents_by_update ON documents(ingested_at);
CREATE TABLE IF NOT EXISTS write_intents (
    intent_id INTEGER PRIMARY KEY AUTOINCREMENT,
    document_id TEXT NOT NULL,
    new_generation INTEGER,
    old_generation INTEGER
);
CREATE TABLE IF NOT EXISTS embeddings (
    model_id TEXT NOT NULL,
    content_hash TEXT NOT NULL,
    vector BLOB NOT NULL,
    PRIMARY KEY (model_id, content_hash)
);
CREATE TABLE IF NOT EXISTS counters (
    name TEXT PRIMARY KEY,
    value INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS conversation_turns (
    message_id TEXT PRIMARY KEY,
    conversation_id TEXT NOT NULL,
    seq INTEGER NOT NULL,
    user_text TEXT NOT NULL,
    assistant_text TEXT NOT NULL,
    created_at TEXT NOT NULL,
    incomplete INTEGER NOT NULL DEFAULT 0,
    owner TEXT NOT NULL DEFAULT ''
);
CREATE INDEX IF NOT EXISTS conversation_turns_by_conversation ON conversation_turns(conversation_id, seq);
CREATE TABLE IF NOT EXISTS jobs (
    job_id TEXT PRIMARY KEY,
    kind TEXT NOT NULL,
    state TEXT NOT NULL,
    payload TEXT NOT NULL,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    worker TEXT,
    lease_until REAL,
    attempts INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX IF NOT EXISTS jobs_by_state ON jobs(state);
CREATE TABLE IF NOT EXISTS sync_roots (
    root TEXT PRIMARY KEY,
    last_sync_at TEXT,
    last_summary TEXT NOT NULL DEFAULT '{}',
    watched_until REAL
);
"""
_INDEXES = """
CREATE INDEX IF NOT EXISTS documents_owner ON documents(owner);
CREATE INDEX IF NOT EXISTS documents_root ON documents(root);
CREATE INDEX IF NOT EXISTS conversation_turns_by_owner ON conversation_turns(owner, conversation_id, seq);
"""
"""Indexes on columns that :func:`_migrate` may have to add first."""
NO_OWNER = ""
"""``conversation_turns.owner`` of conversations held for no user (the Python API and CLI)."""
SQLITE_FULL = 13
SQLITE_READONLY = 8
SQLITE_IOERR = 10
PRIMARY_CODE_MASK = 0xFF  # extended result codes keep the primary code in the low byte

_UNCOMMITTED = """
SELECT g FROM (SELECT new_generation AS g FROM write_intents UNION SELECT old_generation FROM write_intents)
WHERE g IS NOT NULL AND NOT EXISTS (SELECT 1 FROM documents WHERE documents.generation = g)
"""

logger = logging.getLogger("ragstream.store")
_RECORD_COLUMNS = ("document_id, source, title, mime, checksum, generation, chunk_count, fingerprint, ingested_at, "
                   "metadata, owner, first_ingested_at, root")
_INSERT_COLUMNS = ("document_id, source, title, mime, checksum, generation, chunk_count, fingerprint, ingested_at, "
                   "metadata, owner, size_bytes, pages, first_ingested_at, root")
# A new version keeps the time its document was first ingested, and its root unless it names one.
_INSERT_DOCUMENT = (f"INSERT OR REPLACE INTO documents ({_INSERT_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, "
                    "COALESCE(?, (SELECT first_ingested_at FROM documents WHERE document_id = ?), ?), "
                    "COALESCE(?, (SELECT root FROM documents WHERE document_id = ?)))")
_ROOT_COLUMNS = "root, (SELECT COUNT(*) FROM documents WHERE documents.root = sync_roots.root), last_sync_at, " \
                "last_summary, watched_until"


class Catalog:
    """The SQLite :class:`~ragstream.store.catalog_base.CatalogBackend`: thread-safe access to the
    catalog database at ``path`` (the embedded default)."""

    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self._path = path
        self.read_only = False
        """True when the catalog could only be opened read-only (e.g. a full disk): reads work, writes raise
        InsufficientStorageError."""
        try:
            self._db = _open_writable(path)
        except sqlite3.OperationalError as error:
            if not path.is_file():
                raise InsufficientStorageError(f"cannot create the catalog (is the disk full?): {error}") from error
            self._db = _open_read_only(path, error)
            self.read_only = True
            logger.warning("catalog opened read-only (%s): searches work, writes fail until there is room", error)
        self._lock = threading.RLock()
        self._read_depth = 0

    def reopen_writable(self, min_free_bytes: int) -> None:
        """Opened read-only (a full disk): open the database for writing now, between two transactions, once
        ``min_free_bytes`` stay free; InsufficientStorageError while they would not, or SQLite still cannot."""
        with self._lock:
            if not self.read_only:
                return
            ensure_free_space([self._path.parent], 0, min_free_bytes)
            try:
                writable = _open_writable(self._path)
            except sqlite3.OperationalError as error:
                raise InsufficientStorageError(f"the catalog still cannot be opened for writing: {error}") from error
            old, self._db = self._db, writable
            self.read_only = False
            old.close()
            logger.warning("catalog open for writing again: the disk has room")

    def close(self) -> None:
        """Close the database."""
        with self._lock:
            self._db.close()

    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """One atomic, durable transaction."""
        with self._lock, _disk_full_as_error():
            self._db.execute("BEGIN IMMEDIATE")
            try:
                yield self._db
            except BaseException:
                if self._db.in_transaction:
                    self._db.execute("ROLLBACK")
                raise
            self._db.execute("COMMIT")

    @contextmanager
    def read_transaction(self) -> Iterator[None]:
        """One read transaction: every catalog read inside it sees the same committed state (nests)."""
        with self._lock:
            outermost = self._read_depth == 0
            if outermost:
                self._db.execute("BEGIN")
            self._read_depth += 1
            try:
                yield
            finally:
                self._read_depth -= 1
                if outermost:
                    self._db.execute("COMMIT")

    def open_reader(self) -> int | None:
        """None: one process holds a SQLite catalog, and :class:`~ragstream.store.snapshots.Snapshots` tracks its readers."""
        return None

    def close_reader(self, reader_id: int) -> None:
        """Nothing to do (no reader is registered here)."""

    def oldest_reader(self) -> float:
        """Infinity: no reader of another process."""
        return float("inf")

    def snapshot(self) -> Snapshot:
        """The committed state readers filter by (commit sequence, last generation, uncommitted ones)."""
        with self.read_transaction():
            sequence = self._counter(COMMIT_SEQUENCE)
            max_generation = self._counter(GENERATION_COUNTER)
            uncommitted = frozenset(int(row[0]) for row in self._db.execute(_UNCOMMITTED))
        return Snapshot(sequence=sequence, max_generation=max_generation, uncommitted=uncommitted)

    def _counter(self, name: str) -> int:
        row = self._db.execute("SELECT value FROM counters WHERE name = ?", (name,)).fetchone()
        return int(row[0]) if row else 0

    # -- generations and intents -------------------------------------------------------------

    def setting(self, name: str) -> int | None:
        """A stored integer setting (e.g. the vector size the store was created with)."""
        with self._lock:
            row = self._db.execute("SELECT value FROM counters WHERE name = ?", (name,)).fetchone()
        return int(row[0]) if row else None

    def set_setting(self, name: str, value: int) -> None:
        """Store an integer setting."""
        with self.transaction() as db:
            db.execute("INSERT OR REPLACE INTO counters(name, value) VALUES (?, ?)", (name, value))

    def begin_versions(self, documents: Sequence[tuple[str, int | None]]) -> tuple[list[int], list[int]]:
        """New, never reused generations for (document_id, old_generation) pairs and their write
        intents, in one transaction: ``(generations, intent_ids)``.

        Allocating and recording together is what lets a snapshot exclude every generation being
        written: one allocated after it is above its ``max_generation``, one allocated before it is
        named by an intent it reads.
        """
        count = len(documents)
        with self.transaction() as db:
            db.execute(
                "INSERT INTO counters(name, value) VALUES(?, ?) ON CONFLICT(name) DO UPDATE SET value = value + ?",
                (GENERATION_COUNTER, count, count),
            )
            last = self._counter(GENERATION_COUNTER)
            generations = list(range(last - count + 1, last + 1))
            intents = [self._add_intent(db, document_id, generation, old)
                       for (document_id, old), generation in zip(documents, generations, strict=True)]
        return generations, intents

    def add_intents(self, intents: Sequence[tuple[str, int | None, int | None]]) -> list[int]:
        """Record, before touching the vector store, which generations operations may leave behind.

        Each intent is (document_id, new_generation, old_generation).
        """
        with self.transaction() as db:
            return [self._add_intent(db, *intent) for intent in intents]

    @staticmethod
    def _add_intent(db: sqlite3.Connection, document_id: str, new: int | None, old: int | None) -> int:
        row = db.execute("INSERT INTO write_intents(document_id, new_generation, old_generation) VALUES (?, ?, ?)",
                         (document_id, new, old))
        return int(row.lastrowid or 0)

    def clear_intents(self, intent_ids: Sequence[int]) -> None:
        """Forget intents once the vector store matches the catalog."""
        with self.transaction() as db:
            db.executemany("DELETE FROM write_intents WHERE intent_id = ?", [(i,) for i in intent_ids])

    def intents(self) -> list[tuple[int, str, int | None, int | None]]:
        """Unfinished intents: (intent_id, document_id, new_generation, old_generation)."""
        with self._lock:
            return list(self._db.execute("SELECT intent_id, document_id, new_generation, old_generation FROM write_intents"))

    # -- documents ---------------------------------------------------------------------------

    def commit_documents(self, versions: Sequence[DocumentVersion], removed: Sequence[str] = ()) -> int:
        """Make each version live and drop the documents ``removed``, all in one transaction (the atomic
        switch of an upsert, or of a rename). Returns the commit sequence of the switch.
        """
        rows = [
            (
                v.doc.document_id, v.doc.source, v.doc.title, v.doc.mime, v.doc.checksum, v.generation, v.chunk_count,
                v.fingerprint, v.ingested_at, json.dumps(v.doc.metadata, sort_keys=True), v.doc.owner,
                v.doc.size_bytes, json.dumps([page.model_dump() for page in v.doc.pages]), v.first_ingested_at,
                v.doc.document_id, v.ingested_at, v.doc.root, v.doc.document_id,
            )
            for v in versions
        ]
        with self.transaction() as db:
            db.executemany(_INSERT_DOCUMENT, rows)
            db.executemany("DELETE FROM documents WHERE document_id = ?", [(document_id,) for document_id in removed])
            return self._next_sequence(db)

    def remove_document(self, document_id: str) -> int:
        """Drop a document from the registry (its points become invisible at once); the commit sequence."""
        with self.transaction() as db:
            db.execute("DELETE FROM documents WHERE document_id = ?", (document_id,))
            return self._next_sequence(db)

    def _next_sequence(self, db: sqlite3.Connection) -> int:
        db.execute("INSERT INTO counters(name, value) VALUES(?, 1) ON CONFLICT(name) DO UPDATE SET value = value + 1",
                   (COMMIT_SEQUENCE,))
        return self._counter(COMMIT_SEQUENCE)

    def get(self, document_id: str, user: str | None = None) -> DocumentRecord | None:
        """The live record of a document, or None (also when ``user`` is given and may not see it)."""
        visible, params = _visible_to(user)
        with self._lock:
            row = self._db.execute(f"SELECT {_RECORD_COLUMNS} FROM documents WHERE document_id = ? AND {visible}",
                                   (document_id, *params)).fetchone()
        return _record(row) if row else None

    def find_by_checksum(self, checksum: str, user: str | None = None) -> list[DocumentRecord]:
        """Documents whose source file had this sha256 (with ``user``: among those it may see)."""
        visible, params = _visible_to(user)
        with self._lock:
            rows = self._db.execute(f"SELECT {_RECORD_COLUMNS} FROM documents WHERE checksum = ? AND {visible} "
                                    "ORDER BY source", (checksum, *params)).fetchall()
        return [_record(row) for row in rows]

    def list(self, user: str | None = None) -> list[DocumentRecord]:
        """Every live document, by source; with ``user``, only that user's and the shared ones."""
        visible, params = _visible_to(user)
        with self._lock:
            rows = self._db.execute(f"SELECT {_RECORD_COLUMNS} FROM documents WHERE {visible} ORDER BY source",
                                    params).fetchall()
        return [_record(row) for row in rows]

    def page(self, offset: int, limit: int, query: str = "", sort: str = "source",
             descending: bool = False, *, user: str | None = None) -> DocumentPage:
        """Live documents ``user`` may see (every one without a user) whose title or source contains
        ``query`` (case-insensitive), sorted by ``sort`` (a key of :data:`SORT_COLUMNS`; ties by source),
        ``limit`` of them from ``offset``."""
        column = SORT_COLUMNS.get(sort, SORT_COLUMNS["source"])
        direction = "DESC" if descending else "ASC"
        visible, visible_params = _visible_to(user)
        where, params = f"WHERE {visible}", visible_params
        if query:
            pattern = "%" + query.casefold().replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
            where = f"{where} AND (lower(title) LIKE ? ESCAPE '\\' OR lower(source) LIKE ? ESCAPE '\\')"
            params = (*visible_params, pattern, pattern)
        with self.read_transaction():
            total = int(self._db.execute(f"SELECT COUNT(*) FROM documents {where}", params).fetchone()[0])
            rows = self._db.execute(
                f"SELECT {_RECORD_COLUMNS} FROM documents {where} ORDER BY {column} {direction}, source {direction} "
                "LIMIT ? OFFSET ?", (*params, limit, offset)).fetchall()
        return DocumentPage(records=[_record(row) for row in rows], total=total)

    def live_generations(self) -> dict[str, int]:
        """document_id -> live generation."""
        with self._lock:
            return dict(self._db.execute("SELECT document_id, generation FROM documents"))

    def stored_document(self, document_id: str) -> LoadedDocument | None:
        """The extracted text of a document as it was ingested (for reindexing without the file)."""
        with self._lock:
            row = self._db.execute(
                "SELECT document_id, source, title, mime, checksum, size_bytes, pages, metadata, owner, root FROM documents "
                "WHERE document_id = ?",
                (document_id,),
            ).fetchone()
        if row is None:
            return None
        pages = tuple(Page(**page) for page in json.loads(row[6]))
        return LoadedDocument(
            document_id=row[0], source=row[1], title=row[2], mime=row[3], checksum=row[4],
            size_bytes=row[5], pages=pages, metadata=json.loads(row[7]), owner=row[8], root=row[9],
        )

    # -- synced roots ------------------------------------------------------------------------

    def documents_in_root(self, root: str) -> builtins.list[DocumentRecord]:
        """Every live document that belongs to ``root``, by source."""
        with self._lock:
            rows = self._db.execute(f"SELECT {_RECORD_COLUMNS} FROM documents WHERE root = ? ORDER BY source",
                                    (root,)).fetchall()
        return [_record(row) for row in rows]

    def set_root(self, document_ids: Sequence[str], root: str) -> None:
        """Make live documents belong to ``root``."""
        with self.transaction() as db:
            db.executemany("UPDATE documents SET root = ? WHERE document_id = ?", [(root, i) for i in document_ids])

    def roots(self) -> builtins.list[RootRecord]:
        """Every registered root with its document count, last sync and watcher lease, by root."""
        with self._lock:
            rows = self._db.execute(f"SELECT {_ROOT_COLUMNS} FROM sync_roots ORDER BY root").fetchall()
        return [RootRecord(*row) for row in rows]

    def record_sync(self, root: str, synced_at: str, summary: str) -> None:
        """Register ``root`` (if new) and remember its last sync."""
        with self.transaction() as db:
            db.execute("INSERT INTO sync_roots (root, last_sync_at, last_summary) VALUES (?, ?, ?) ON CONFLICT(root) "
                       "DO UPDATE SET last_sync_at = excluded.last_sync_at, last_summary = excluded.last_summary",
                       (root, synced_at, summary))

    def watch_roots(self, roots: Sequence[str], until: float | None) -> None:
        """Set (or drop, with None) a watcher's lease on registered ``roots``."""
        with self.transaction() as db:
            db.executemany("UPDATE sync_roots SET watched_until = ? WHERE root = ?", [(until, root) for root in roots])

    def forget_root(self, root: str) -> None:
        """Unregister ``root``."""
        with self.transaction() as db:
            db.execute("DELETE FROM sync_roots WHERE root = ?", (root,))

    # -- embedding cache ---------------------------------------------------------------------

    def cached_vectors(self, model_id: str, content_hashes: Sequence[str]) -> dict[str, np.ndarray]:
        """Cached vectors for the given chunk-content hashes."""
        found: dict[str, np.ndarray] = {}
        unique = list(dict.fromkeys(content_hashes))
        step = 500
        with self._lock:
            for start in range(0, len(unique), step):
                batch = unique[start : start + step]
                marks = ",".join("?" * len(batch))
                for content_hash, blob in self._db.execute(
                    f"SELECT content_hash, vector FROM embeddings WHERE model_id = ? AND content_hash IN ({marks})",
                    (model_id, *batch),
                ):
                    found[content_hash] = np.frombuffer(blob, dtype=np.float32)
        return found

    def cache_vectors(self, model_id: str, items: Iterable[tuple[str, np.ndarray]]) -> None:
        """Store vectors by chunk-content hash."""
        rows = [(model_id, content_hash, np.asarray(vector, dtype=np.float32).tobytes()) for content_hash, vector in items]
        with self.transaction() as db:
            db.executemany("INSERT OR REPLACE INTO embeddings VALUES (?, ?, ?)", rows)

    # -- conversations -----------------------------------------------------------------------

    def add_turn(self, conversation_id: str, message_id: str, user_text: str, assistant_text: str,
                 created_at: str, keep: int, *, incomplete: bool = False, owner: str | None = None) -> None:
        """Append a (user, assistant) turn pair and keep only the conversation's last ``keep`` pairs.

        ``incomplete`` marks an answer cut short (the client left, or generation failed midway).
        Conversations are kept per ``owner``: the same id under two owners is two conversations.
        """
        key = (conversation_id, owner or NO_OWNER)
        with self.transaction() as db:
            db.execute(
                "INSERT INTO conversation_turns (message_id, conversation_id, owner, seq, user_text, assistant_text, "
                "created_at, incomplete) VALUES (?, ?, ?, (SELECT COALESCE(MAX(seq), 0) + 1 FROM conversation_turns "
                "WHERE conversation_id = ? AND owner = ?), ?, ?, ?, ?)",
                (message_id, *key, *key, user_text, assistant_text, created_at, int(incomplete)),
            )
            db.execute(
                "DELETE FROM conversation_turns WHERE conversation_id = ? AND owner = ? AND seq NOT IN "
                "(SELECT seq FROM conversation_turns WHERE conversation_id = ? AND owner = ? ORDER BY seq DESC LIMIT ?)",
                (*key, *key, max(keep, 0)),
            )

    def recent_turns(self, conversation_id: str, limit: int, owner: str | None = None) -> builtins.list[tuple[str, str]]:
        """The last ``limit`` (user, assistant) pairs of ``owner``'s conversation, oldest first."""
        with self._lock:
            rows = self._db.execute(
                "SELECT user_text, assistant_text FROM conversation_turns WHERE conversation_id = ? AND owner = ? "
                "ORDER BY seq DESC LIMIT ?",
                (conversation_id, owner or NO_OWNER, max(limit, 0)),
            ).fetchall()
        return [(user, assistant) for user, assistant in reversed(rows)]

    def conversation_turns(self, conversation_id: str, owner: str | None = None) -> builtins.list[dict[str, Any]]:
        """Every kept turn of ``owner``'s conversation, oldest first, with its message id and completeness."""
        with self._lock:
            rows = self._db.execute(
                "SELECT message_id, user_text, assistant_text, created_at, incomplete FROM conversation_turns "
                "WHERE conversation_id = ? AND owner = ? ORDER BY seq",
                (conversation_id, owner or NO_OWNER),
            ).fetchall()
        keys = ("message_id", "user", "assistant", "created_at", "incomplete")
        return [dict(zip(keys, (*row[:4], bool(row[4])), strict=True)) for row in rows]


    # -- copying to another catalog (ragstream migrate) ------------------------------------------

    def raise_generation(self, at_least: int) -> None:
        """Move the generation counter up to ``at_least`` (never down), so generations copied from
        another index under their own numbers are never allocated here again."""
        with self.transaction() as db:
            db.execute("INSERT INTO counters(name, value) VALUES(?, ?) "
                       "ON CONFLICT(name) DO UPDATE SET value = MAX(value, excluded.value)", (GENERATION_COUNTER, at_least))

    def embedding_rows(self, after: tuple[str, str] | None, limit: int) -> builtins.list[tuple[str, str, np.ndarray]]:
        """Up to ``limit`` embedding-cache entries (model_id, content_hash, vector) in key order, after ``after``."""
        model_id, content_hash = after or ("", "")
        with self._lock:
            rows = self._db.execute(
                "SELECT model_id, content_hash, vector FROM embeddings WHERE (model_id, content_hash) > (?, ?) "
                "ORDER BY model_id, content_hash LIMIT ?", (model_id, content_hash, limit)).fetchall()
        return [(row[0], row[1], np.frombuffer(row[2], dtype=np.float32)) for row in rows]

    def turn_rows(self, after: str | None, limit: int) -> builtins.list[TurnRow]:
        """Up to ``limit`` stored conversation turns in message-id order, after the message id ``after``."""
        with self._lock:
            rows = self._db.execute(
                "SELECT conversation_id, seq, message_id, user_text, assistant_text, created_at, incomplete, owner "
                "FROM conversation_turns WHERE message_id > ? ORDER BY message_id LIMIT ?",
                (after or "", limit)).fetchall()
        return [TurnRow(row[0], row[1], row[2], row[3], row[4], row[5], bool(row[6]), row[7]) for row in rows]

    def import_turns(self, rows: Sequence[TurnRow]) -> None:
        """Store conversation turns exactly as given (position and ids kept; an existing message is replaced)."""
        with self.transaction() as db:
            db.executemany(
                "INSERT OR REPLACE INTO conversation_turns (conversation_id, seq, message_id, user_text, assistant_text, "
                "created_at, incomplete, owner) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                [(*row[:6], int(row.incomplete), row.owner) for row in rows])

    # -- background jobs ---------------------------------------------------------------------

    def save_job(self, job_id: str, kind: str, state: str, payload: str, now: str) -> None:
        """Create or update a background job (``payload``: its progress and results as JSON text)."""
        with self.transaction() as db:
            db.execute(
                "INSERT INTO jobs (job_id, kind, state, payload, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?) "
                "ON CONFLICT(job_id) DO UPDATE SET state = excluded.state, payload = excluded.payload, "
                "updated_at = excluded.updated_at",
                (job_id, kind, state, payload, now, now),
            )

    def job(self, job_id: str) -> dict[str, str] | None:
        """A job's row (``JOB_COLUMNS``), or None."""
        with self._lock:
            row = self._db.execute(f"SELECT {', '.join(JOB_COLUMNS)} FROM jobs WHERE job_id = ?", (job_id,)).fetchone()
        return dict(zip(JOB_COLUMNS, row, strict=True)) if row else None

    def unfinished_jobs(self) -> builtins.list[dict[str, str]]:
        """Jobs still queued or running (after a restart: the ones it interrupted)."""
        marks = ", ".join("?" * len(UNFINISHED_JOB_STATES))
        with self._lock:
            rows = self._db.execute(f"SELECT {', '.join(JOB_COLUMNS)} FROM jobs WHERE state IN ({marks})",
                                    UNFINISHED_JOB_STATES).fetchall()
        return [dict(zip(JOB_COLUMNS, row, strict=True)) for row in rows]

    def claim_job(self, worker: str, lease_seconds: float, now: str) -> dict[str, Any] | None:
        """Take the oldest queued job, or a running one whose lease ran out, for ``worker``; its row or None."""
        with self.transaction() as db:  # BEGIN IMMEDIATE: one claimer at a time
            row = db.execute(
                f"SELECT {', '.join(CLAIMED_JOB_COLUMNS)} FROM jobs WHERE state = ? OR (state = ? AND "
                "(lease_until IS NULL OR lease_until < ?)) ORDER BY created_at, job_id LIMIT 1",
                (JOB_QUEUED, JOB_RUNNING, time.time())).fetchone()
            if row is None:
                return None
            claimed = dict(zip(CLAIMED_JOB_COLUMNS, row, strict=True))
            db.execute("UPDATE jobs SET state = ?, worker = ?, lease_until = ?, attempts = attempts + 1, updated_at = ? "
                       "WHERE job_id = ?", (JOB_RUNNING, worker, time.time() + lease_seconds, now, claimed["job_id"]))
        return claimed | {"state": JOB_RUNNING, "updated_at": now, "attempts": claimed["attempts"] + 1}

    def renew_job(self, job_id: str, worker: str, lease_seconds: float) -> bool:
        """Extend ``worker``'s lease on its running job; False when it is no longer ``worker``'s."""
        with self.transaction() as db:
            cursor = db.execute("UPDATE jobs SET lease_until = ? WHERE job_id = ? AND worker = ? AND state = ?",
                                (time.time() + lease_seconds, job_id, worker, JOB_RUNNING))
            return cursor.rowcount == 1

    def update_job(self, job_id: str, worker: str, state: str, payload: str, now: str, lease_seconds: float) -> bool:
        """Record progress or the end of ``worker``'s job; False (nothing written) when it is no longer ``worker``'s."""
        queued = state == JOB_QUEUED
        lease = time.time() + lease_seconds if state == JOB_RUNNING else None
        with self.transaction() as db:
            cursor = db.execute(
                "UPDATE jobs SET state = ?, payload = ?, updated_at = ?, lease_until = ?, "
                "worker = CASE WHEN ? THEN NULL ELSE worker END, attempts = attempts - ? "
                "WHERE job_id = ? AND worker = ? AND state = ?",
                (state, payload, now, lease, queued, int(queued), job_id, worker, JOB_RUNNING))
            return cursor.rowcount == 1


def _open_writable(path: Path) -> sqlite3.Connection:
    db = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
    try:
        db.execute("PRAGMA journal_mode=WAL")
        db.execute("PRAGMA synchronous=FULL")
        db.executescript(_SCHEMA)
        _migrate(db)
        db.executescript(_INDEXES)
    except sqlite3.OperationalError:
        db.close()
        raise
    return db


def _open_read_only(path: Path, cause: sqlite3.OperationalError) -> sqlite3.Connection:
    """The catalog for reading only: through SQLite's read-only mode, or, when even that needs room (the
    WAL index), as an immutable file, which is exact once no write-ahead log is left beside it."""
    wal = path.with_name(path.name + "-wal")
    modes = ["ro"] + (["ro&immutable=1"] if not wal.exists() or wal.stat().st_size == 0 else [])
    for mode in modes:
        try:
            db = sqlite3.connect(f"{path.resolve().as_uri()}?mode={mode}", uri=True, check_same_thread=False,
                                 isolation_level=None)
            db.execute("SELECT COUNT(*) FROM documents").fetchone()
            return db
        except sqlite3.OperationalError:
            continue
    raise InsufficientStorageError(f"cannot open the catalog, not even read-only: {cause}") from cause


@contextmanager
def _disk_full_as_error() -> Iterator[None]:
    """SQLite's "database or disk is full" (or a catalog opened read-only) as InsufficientStorageError;
    the transaction rolled back."""
    try:
        yield
    except sqlite3.OperationalError as error:
        if (getattr(error, "sqlite_errorcode", 0) or 0) & PRIMARY_CODE_MASK in (SQLITE_FULL, SQLITE_READONLY, SQLITE_IOERR):
            raise InsufficientStorageError(f"the catalog could not write (disk full or opened read-only); nothing "
                                           f"was changed: {error}") from error
        raise


def _migrate(db: sqlite3.Connection) -> None:
    """Bring catalogs written by earlier versions up to the current schema (documents written before
    owners existed are shared and belong to no synced root; conversations, held for no user)."""
    columns = {row[1] for row in db.execute("PRAGMA table_info(conversation_turns)")}
    if "incomplete" not in columns:
        db.execute("ALTER TABLE conversation_turns ADD COLUMN incomplete INTEGER NOT NULL DEFAULT 0")
    if "owner" not in columns:
        db.execute("ALTER TABLE conversation_turns ADD COLUMN owner TEXT NOT NULL DEFAULT ''")
    job_columns = {row[1] for row in db.execute("PRAGMA table_info(jobs)")}
    for column, kind in (("worker", "TEXT"), ("lease_until", "REAL"), ("attempts", "INTEGER NOT NULL DEFAULT 0")):
        if column not in job_columns:  # catalogs before the job queue (docs/backends.md)
            db.execute(f"ALTER TABLE jobs ADD COLUMN {column} {kind}")
    document_columns = {row[1] for row in db.execute("PRAGMA table_info(documents)")}
    if "owner" not in document_columns:
        db.execute("ALTER TABLE documents ADD COLUMN owner TEXT")
    if "first_ingested_at" not in document_columns:  # catalogs before it: the live version's time is the best known
        db.execute("ALTER TABLE documents ADD COLUMN first_ingested_at TEXT")
        db.execute("UPDATE documents SET first_ingested_at = ingested_at WHERE first_ingested_at IS NULL")
    if "root" not in document_columns:  # catalogs before sync: no document belongs to a synced root yet
        db.execute("ALTER TABLE documents ADD COLUMN root TEXT")


def _visible_to(user: str | None) -> tuple[str, tuple[str, ...]]:
    """The WHERE condition (and its parameters) of the documents ``user`` may see: theirs and the
    shared ones (owner NULL); every document when ``user`` is None."""
    if user is None:
        return "1 = 1", ()
    return "(owner IS NULL OR owner = ?)", (user,)


def _record(row: tuple) -> DocumentRecord:
    values = dict(zip(_RECORD_COLUMNS.split(", "), row, strict=True))
    values["metadata"] = json.loads(values["metadata"])
    values["first_ingested_at"] = values["first_ingested_at"] or values["ingested_at"]
    return DocumentRecord(**values)
