"""The SQLite catalog's document registry: which version of each document is live, its stored text and root.

The catalog is the source of truth for which *generation* (version) of each document is live. Vector-store
points of any other generation are invisible to readers and removed once no reader needs them, or on
recovery. docs/consistency.md tells the whole protocol.
"""

from __future__ import annotations

import builtins
import json
import os
import sqlite3
from collections.abc import Sequence

from ragstream.errors import CollectionNotFoundError
from ragstream.models import DEFAULT_COLLECTION_ID, DocumentRecord, LoadedDocument
from ragstream.store import documents_sql as sql
from ragstream.store.catalog_base import COMMIT_SEQUENCE, SORT_COLUMNS, DocumentPage, DocumentVersion
from ragstream.store.catalog_sql import INSERT_COLUMNS, RECORD_COLUMNS, like_pattern, record, stored_document
from ragstream.store.sqlite_catalog.connection import SqliteRole

_SQL = sql.SQLITE

# A new version keeps the time its document was first ingested, and its root unless it names one.
_INSERT_DOCUMENT = (f"INSERT OR REPLACE INTO documents ({INSERT_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, "
                    "COALESCE(?, (SELECT first_ingested_at FROM documents WHERE document_id = ?), ?), "
                    "COALESCE(?, (SELECT root FROM documents WHERE document_id = ?)))")




class SqliteDocuments(SqliteRole):
    """The :class:`~ragstream.store.catalog_base.DocumentRegistry` in SQLite."""

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
        with self._connection.transaction() as db:
            _require_collections(db, versions)
            db.executemany(_INSERT_DOCUMENT, rows)
            db.executemany(sql.DELETE, [(document_id,) for document_id in removed])
            db.executemany(sql.LEAVE_COLLECTIONS, [(document_id,) for document_id in removed])
            db.executemany(sql.JOIN_COLLECTIONS, [(c, v.doc.document_id) for v in versions for c in v.doc.collections])
            db.executemany(sql.JOIN_DEFAULT, [(DEFAULT_COLLECTION_ID, v.doc.document_id, v.doc.document_id) for v in versions])
            return self._next_sequence(db)

    def remove_document(self, document_id: str) -> int:
        """Drop a document from the registry (its points become invisible at once); the commit sequence."""
        with self._connection.transaction() as db:
            db.execute(sql.DELETE, (document_id,))
            db.execute(sql.LEAVE_COLLECTIONS, (document_id,))
            return self._next_sequence(db)

    def _next_sequence(self, db: sqlite3.Connection) -> int:
        db.execute("INSERT INTO counters(name, value) VALUES(?, 1) ON CONFLICT(name) DO UPDATE SET value = value + 1",
                   (COMMIT_SEQUENCE,))
        return self._connection.counter(COMMIT_SEQUENCE)

    def get(self, document_id: str, user: str | None = None, *,
            collections: Sequence[str] | None = None) -> DocumentRecord | None:
        """The live record of a document, or None (also when ``user`` is given and may not see it)."""
        visible, params = _SQL.visible_to(user, collections)
        with self._connection.lock:
            row = self._connection.db.execute(_SQL.sql(sql.BY_ID, visible), (document_id, *params)).fetchone()
        return record(row) if row else None

    def get_many(self, document_ids: Sequence[str], user: str | None = None) -> dict[str, DocumentRecord]:
        """document_id -> the live record of each of ``document_ids`` ``user`` may see, in one read."""
        visible, params = _SQL.visible_to(user)
        with self._connection.lock:
            rows = self._connection.db.execute(_SQL.sql(sql.BY_IDS, visible),
                                               (_SQL.id_list(document_ids), *params)).fetchall()
        return {found.document_id: found for found in map(record, rows)}

    def count(self, user: str | None = None, *, collections: Sequence[str] | None = None) -> int:
        """How many live documents ``user`` may see (with ``collections``: in one of them)."""
        visible, params = _SQL.visible_to(user, collections)
        with self._connection.lock:
            return int(self._connection.db.execute(_SQL.sql(sql.COUNT, visible), params).fetchone()[0])

    def find_by_checksum(self, checksum: str, user: str | None = None, *,
                         collections: Sequence[str] | None = None) -> builtins.list[DocumentRecord]:
        """Documents whose source file had this sha256 (with ``user``: among those it may see)."""
        visible, params = _SQL.visible_to(user, collections)
        with self._connection.lock:
            rows = self._connection.db.execute(_SQL.sql(sql.BY_CHECKSUM, visible), (checksum, *params)).fetchall()
        return [record(row) for row in rows]

    def list(self, user: str | None = None, *,
             collections: Sequence[str] | None = None) -> builtins.list[DocumentRecord]:
        """Every live document, by source; with ``user``, only that user's and the shared ones."""
        visible, params = _SQL.visible_to(user, collections)
        with self._connection.lock:
            rows = self._connection.db.execute(_SQL.sql(sql.LIST, visible), params).fetchall()
        return [record(row) for row in rows]

    def page(self, offset: int, limit: int, query: str = "", sort: str = "source",
             descending: bool = False, *, user: str | None = None,
             collections: Sequence[str] | None = None) -> DocumentPage:
        """Live documents ``user`` may see (every one without a user) whose title or source contains
        ``query`` (case-insensitive), sorted by ``sort`` (a key of :data:`SORT_COLUMNS`; ties by source),
        ``limit`` of them from ``offset``."""
        column = SORT_COLUMNS.get(sort, SORT_COLUMNS["source"])
        direction = "DESC" if descending else "ASC"
        visible, visible_params = _SQL.visible_to(user, collections)
        where, params = _SQL.sql(f"WHERE {visible}"), visible_params
        if query:
            pattern = like_pattern(query)
            where = f"{where} AND (lower(title) LIKE ? ESCAPE '\\' OR lower(source) LIKE ? ESCAPE '\\')"
            params = (*visible_params, pattern, pattern)
        with self._connection.read_transaction():
            db = self._connection.db
            total = int(db.execute(f"SELECT COUNT(*) FROM documents {where}", params).fetchone()[0])
            rows = db.execute(
                f"SELECT {_SQL.sql('{record}')} FROM documents {where} ORDER BY {column} {direction}, source {direction} "
                "LIMIT ? OFFSET ?", (*params, limit, offset)).fetchall()
        return DocumentPage(records=[record(row) for row in rows], total=total)

    def live_generations(self) -> dict[str, int]:
        """document_id -> live generation."""
        with self._connection.lock:
            return dict(self._connection.db.execute("SELECT document_id, generation FROM documents"))

    def stored_document(self, document_id: str) -> LoadedDocument | None:
        """The extracted text of a document as it was ingested (for reindexing without the file)."""
        with self._connection.lock:
            row = self._connection.db.execute(sql.STORED, (document_id,)).fetchone()
        return None if row is None else stored_document(row)

    def documents_in_root(self, root: str) -> builtins.list[DocumentRecord]:
        """Every live document that belongs to ``root``, by source."""
        with self._connection.lock:
            rows = self._connection.db.execute(_SQL.sql(sql.IN_ROOT), (root,)).fetchall()
        return [record(row) for row in rows]

    def unrooted_documents_under(self, folder: str) -> builtins.list[DocumentRecord]:
        """Every live shared document of no root whose source is ``folder`` or lies inside it, by source."""
        prefix = folder.rstrip(os.sep) + os.sep
        with self._connection.lock:
            rows = self._connection.db.execute(
                f"SELECT {RECORD_COLUMNS} FROM documents WHERE owner IS NULL AND root IS NULL AND (source = ? OR substr(source, 1, ?) = ?) "
                "ORDER BY source", (folder, len(prefix), prefix)).fetchall()
        return [record(row) for row in rows]

    def set_root(self, document_ids: Sequence[str], root: str) -> None:
        """Make live documents belong to ``root``."""
        with self._connection.transaction() as db:
            db.executemany("UPDATE documents SET root = ? WHERE document_id = ?", [(root, i) for i in document_ids])


def _require_collections(db: sqlite3.Connection, versions: Sequence[DocumentVersion]) -> None:
    """CollectionNotFoundError (the transaction rolls back) when a version names a collection that is gone: one
    deleted while an ingest into it ran (the write transaction orders the two; docs/collections.md)."""
    named = sorted({c for v in versions for c in v.doc.collections})
    if named:
        found = {row[0] for row in db.execute(
            "SELECT collection_id FROM collections WHERE collection_id IN (SELECT value FROM json_each(?))",
            (json.dumps(named),))}
        if missing := [c for c in named if c not in found]:
            raise CollectionNotFoundError(f"collection {missing[0]!r} was deleted while documents were written into it")
