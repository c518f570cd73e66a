"""The SQL of the catalog's collections role, shared by the SQLite and the PostgreSQL backends, as
:mod:`ragstream.store.feedback_sql` is for feedback. ``?`` marks a parameter (the PostgreSQL role writes it as
``%s``); ``{ids}`` is where a backend puts its test of ``document_id`` against one list parameter
(:func:`for_backend`)."""

from __future__ import annotations

from ragstream.store.catalog_sql import COLLECTION_COLUMNS

SQLITE_IDS = "IN (SELECT value FROM json_each(?))"
"""SQLite's list test: the list as one JSON array parameter."""
POSTGRES_IDS = "= ANY(?)"
"""PostgreSQL's list test: the list as one array parameter."""

_COUNT = ("SELECT COUNT(*) FROM collection_documents m JOIN documents d ON d.document_id = m.document_id "
          "WHERE m.collection_id = collections.collection_id")
BY_ID = f"SELECT {COLLECTION_COLUMNS}, ({_COUNT}) FROM collections WHERE collection_id = ?"
BY_KEY = f"SELECT {COLLECTION_COLUMNS}, ({_COUNT}) FROM collections WHERE name_key = ? ORDER BY collection_id"
"""The collections of every owner whose name has one key (:func:`ragstream.models.name_key`)."""
LIST = f"SELECT {COLLECTION_COLUMNS}, ({_COUNT}) FROM collections ORDER BY name, collection_id"
LIST_FOR_USER = (f"SELECT {COLLECTION_COLUMNS}, ({_COUNT} AND (d.owner IS NULL OR d.owner = ?)) FROM collections "
                 "ORDER BY name, collection_id")
"""Each collection with the count of its documents one user may see (theirs and the shared ones)."""
CREATE = f"INSERT INTO collections ({COLLECTION_COLUMNS}) VALUES ({', '.join(['?'] * len(COLLECTION_COLUMNS.split(',')))})"
UPDATE = ("UPDATE collections SET name = ?, description = ?, instructions = ?, owner = ?, access = ?, readers = ?, "
          "editors = ?, created_at = ?, name_key = ? WHERE collection_id = ?")
HOLDS_DOCUMENTS = "SELECT 1 FROM collection_documents WHERE collection_id = ? LIMIT 1"
DELETE = "DELETE FROM collections WHERE collection_id = ?"
DELETE_ROOTS = "DELETE FROM root_collections WHERE collection_id = ?"
NEW_MEMBERS = ("SELECT document_id FROM documents WHERE document_id {ids} AND document_id NOT IN "
               "(SELECT document_id FROM collection_documents WHERE collection_id = ?) ORDER BY document_id")
"""The live documents of a list not yet in a collection."""
ORPHANS = ("SELECT document_id FROM collection_documents WHERE document_id {ids} "
           "GROUP BY document_id HAVING COUNT(*) = 1 AND MAX(collection_id) = ?")
"""The documents of a list whose one collection is this one (taking them out would leave them in none)."""
MEMBERSHIPS = ("SELECT document_id, collection_id FROM collection_documents WHERE document_id {ids} "
               "ORDER BY document_id, collection_id")
DOCUMENT_IDS = "SELECT document_id FROM collection_documents WHERE collection_id = ? ORDER BY document_id"
ONLY_HERE = ("SELECT document_id FROM collection_documents WHERE collection_id = ? AND document_id NOT IN "
             "(SELECT document_id FROM collection_documents WHERE collection_id != ?) ORDER BY document_id")
FORGET_ROOT = "DELETE FROM root_collections WHERE root = ?"
SET_ROOT = "INSERT INTO root_collections (root, collection_id) VALUES (?, ?)"
ROOT = "SELECT collection_id FROM root_collections WHERE root = ?"
PENDING = "SELECT document_id FROM collection_payloads ORDER BY document_id"
TABLE = """
CREATE TABLE IF NOT EXISTS {table} (
    collection_id TEXT PRIMARY KEY,
    name TEXT NOT NULL,
    description TEXT NOT NULL DEFAULT '',
    instructions TEXT NOT NULL DEFAULT '',
    owner TEXT,
    access TEXT NOT NULL DEFAULT 'private',
    readers TEXT NOT NULL DEFAULT '[]',
    editors TEXT NOT NULL DEFAULT '[]',
    created_at TEXT NOT NULL,
    name_key TEXT NOT NULL
);
"""
"""The collections table of both backends (``{table}``: its name): names unique per owner by key
(:data:`UNIQUE_KEY_INDEX`; PostgreSQL's schema step and SQLite's migration add it after migrating older tables)."""
MEMBERSHIP_TABLES = """
CREATE TABLE IF NOT EXISTS collection_documents (
    collection_id TEXT NOT NULL,
    document_id TEXT NOT NULL,
    PRIMARY KEY (collection_id, document_id)
);
CREATE INDEX IF NOT EXISTS collection_documents_by_document ON collection_documents(document_id);
CREATE TABLE IF NOT EXISTS collection_payloads (
    document_id TEXT PRIMARY KEY
);
CREATE TABLE IF NOT EXISTS root_collections (
    root TEXT PRIMARY KEY,
    collection_id TEXT NOT NULL
);
"""
"""Which documents belong to each collection, those whose store payloads may not show it yet, and the collection
of each synced root: the same tables in both backends."""
UNIQUE_KEY = "collections_by_owner_and_key"
"""The unique index of names per owner (none: ''), by key; a migration replaced the global UNIQUE(name) with it."""
UNIQUE_KEY_INDEX = f"CREATE UNIQUE INDEX IF NOT EXISTS {UNIQUE_KEY} ON collections ((COALESCE(owner, '')), name_key)"


def for_backend(sql: str, ids: str, parameter: str = "?") -> str:
    """``sql`` with the backend's list test ``ids`` in its ``{ids}`` slot and its ``parameter`` marker."""
    return sql.replace("{ids}", ids).replace("?", parameter)
