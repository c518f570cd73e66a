"""The SQLite catalog's tables, and the migration of catalogs written by earlier versions (applied on every
open for writing; a new table or column goes here)."""

from __future__ import annotations

import sqlite3

from ragstream.models import DEFAULT_COLLECTION_ID, name_key
from ragstream.store.collections_sql import MEMBERSHIP_TABLES, UNIQUE_KEY_INDEX
from ragstream.store.collections_sql import TABLE as COLLECTIONS_TABLE
from ragstream.store.documents_sql import INDEXES as DOCUMENT_INDEXES
from ragstream.store.feedback_sql import OPENS_MIGRATION
from ragstream.store.feedback_sql import TABLE as FEEDBACK_TABLE

DEFAULT_DESCRIPTION = "Every document that names no collection (and every document of an index made before collections)."
DEFAULT_COLLECTION = ("INSERT INTO collections (collection_id, name, name_key, description, access, created_at) "
                      "VALUES (?, ?, ?, ?, 'all', '')")

SCHEMA = """
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
@DOCUMENT_INDEXES@
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
SCHEMA = (SCHEMA.replace("@DOCUMENT_INDEXES@\n", DOCUMENT_INDEXES.lstrip()) + MEMBERSHIP_TABLES.lstrip() + FEEDBACK_TABLE
          + COLLECTIONS_TABLE.format(table="collections"))
INDEXES = f"""
CREATE INDEX IF NOT EXISTS documents_owner ON documents(owner);
CREATE INDEX IF NOT EXISTS documents_root ON documents(root);
CREATE INDEX IF NOT EXISTS conversation_turns_by_owner ON conversation_turns(owner, conversation_id, seq);
{UNIQUE_KEY_INDEX};
"""
"""Indexes on columns that :func:`migrate` may have to add first."""


def migrate(db: sqlite3.Connection) -> None:
    """Bring catalogs written by earlier versions up to the current schema (documents written before
    owners existed are shared and belong to no synced root; conversations, held for no user; an answer's
    citation opens counted before they were named, one open)."""
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
    if "name_key" not in {row[1] for row in db.execute("PRAGMA table_info(collections)")}:
        _key_collection_names(db)
    if db.execute("SELECT 1 FROM collections WHERE collection_id = ?", (DEFAULT_COLLECTION_ID,)).fetchone() is None:
        # catalogs before collections: every document is in the default collection (once; in one transaction)
        db.execute("BEGIN IMMEDIATE")
        db.execute(DEFAULT_COLLECTION, (DEFAULT_COLLECTION_ID, DEFAULT_COLLECTION_ID, name_key(DEFAULT_COLLECTION_ID),
                                        DEFAULT_DESCRIPTION))
        db.execute("INSERT OR IGNORE INTO collection_documents (collection_id, document_id) SELECT ?, document_id "
                   "FROM documents", (DEFAULT_COLLECTION_ID,))
        db.execute("COMMIT")
    if db.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'answer_citation_opens'").fetchone() is None:
        # catalogs before opens named their citation counted every open: each answer's become one (once; atomic)
        db.execute("BEGIN IMMEDIATE")
        for statement in OPENS_MIGRATION:
            db.execute(statement)
        db.execute("COMMIT")


_OLD_COLUMNS = "collection_id, name, description, instructions, owner, access, readers, editors, created_at"


def _key_collection_names(db: sqlite3.Connection) -> None:
    """Catalogs before name keys (names unique as written, ``UNIQUE(name)``): names become unique per owner by key.
    SQLite cannot drop a column's UNIQUE, so the table is rebuilt, in one transaction. Of two names of one owner
    with one key (``Specs`` and ``specs``), the later (by creation time, then id) gets ``~<collection_id>`` after
    its key and stays reachable by it (docs/collections.md); PostgreSQL's schema step does the same."""
    db.execute("BEGIN IMMEDIATE")
    try:
        if "name_key" in {row[1] for row in db.execute("PRAGMA table_info(collections)")}:  # another process did it
            db.execute("ROLLBACK")
            return
        db.execute(COLLECTIONS_TABLE.format(table="collections_keyed"))
        db.execute(f"INSERT INTO collections_keyed ({_OLD_COLUMNS}, name_key) SELECT {_OLD_COLUMNS}, collection_id "
                   "FROM collections")
        taken: set[tuple[str, str]] = set()
        keys = []
        for collection_id, name, owner in db.execute(
                "SELECT collection_id, name, owner FROM collections ORDER BY created_at, collection_id").fetchall():
            key = name_key(name)
            if (owner or "", key) in taken:
                key = f"{key}~{collection_id}"
            taken.add((owner or "", key))
            keys.append((key, collection_id))
        db.executemany("UPDATE collections_keyed SET name_key = ? WHERE collection_id = ?", keys)
        db.execute("DROP TABLE collections")
        db.execute("ALTER TABLE collections_keyed RENAME TO collections")
        db.execute("COMMIT")
    except BaseException:
        db.execute("ROLLBACK")
        raise
