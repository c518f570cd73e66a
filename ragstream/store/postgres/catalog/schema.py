"""The PostgreSQL catalog's tables: applied on every open, under an advisory lock. New tables or columns go
here with ``IF NOT EXISTS``, so databases from before them get them when they open."""

from __future__ import annotations

from ragstream.store.collections_sql import MEMBERSHIP_TABLES, UNIQUE_KEY_INDEX
from ragstream.store.collections_sql import TABLE as COLLECTIONS_TABLE
from ragstream.store.documents_sql import INDEXES as DOCUMENT_INDEXES
from ragstream.store.feedback_sql import OPENS_MIGRATION
from ragstream.store.feedback_sql import TABLE as FEEDBACK_TABLE

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
@DOCUMENT_INDEXES@
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
CREATE INDEX IF NOT EXISTS documents_by_ingest ON documents(first_ingested_at);
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
@COLLECTIONS_TABLE@
DO $$ BEGIN
    IF NOT EXISTS (SELECT 1 FROM information_schema.columns WHERE table_schema = current_schema()
                   AND table_name = 'collections' AND column_name = 'name_key') THEN
        -- databases before name keys (names unique as written): names become unique per owner by key. Their names
        -- are ASCII (the old rule), so lower() is their NFKC case fold; of two names of one owner with one key the
        -- later (by creation time, then id) gets ~<collection_id> after its key, as the SQLite catalog's migration does
        ALTER TABLE collections ADD COLUMN name_key TEXT;
        UPDATE collections c SET name_key = lower(c.name) || CASE WHEN k.n = 1 THEN '' ELSE '~' || c.collection_id END
            FROM (SELECT collection_id, row_number() OVER (PARTITION BY COALESCE(owner, ''), lower(name)
                                                           ORDER BY created_at COLLATE "C", collection_id COLLATE "C") AS n
                  FROM collections) k
            WHERE k.collection_id = c.collection_id;
        ALTER TABLE collections ALTER COLUMN name_key SET NOT NULL;
        ALTER TABLE collections DROP CONSTRAINT IF EXISTS collections_name_key;
    END IF;
END $$;
@UNIQUE_KEY_INDEX@;
@MEMBERSHIP_TABLES@
DO $$ BEGIN
    IF NOT EXISTS (SELECT 1 FROM collections WHERE collection_id = 'default') THEN
        -- databases from before collections: every document is in the default collection (once)
        INSERT INTO collections (collection_id, name, name_key, description, access, created_at)
            VALUES ('default', 'default', 'default', 'Every document that names no collection (and every document of an index '
                    'made before collections).', 'all', '');
        INSERT INTO collection_documents (collection_id, document_id) SELECT 'default', document_id FROM documents
            ON CONFLICT DO NOTHING;
    END IF;
END $$;
"""
SCHEMA = (SCHEMA.replace("@COLLECTIONS_TABLE@", COLLECTIONS_TABLE.format(table="collections"))
          .replace("@UNIQUE_KEY_INDEX@", UNIQUE_KEY_INDEX).replace("@MEMBERSHIP_TABLES@\n", MEMBERSHIP_TABLES.lstrip())
          .replace("@DOCUMENT_INDEXES@\n", DOCUMENT_INDEXES.lstrip()) + FEEDBACK_TABLE)
SCHEMA += f"""
DO $$ BEGIN
    IF to_regclass('answer_citation_opens') IS NULL THEN
        -- databases before opens named their citation counted every open: each answer's become one (once)
        {"; ".join(OPENS_MIGRATION)};
    END IF;
END $$;
"""
