"""The PostgreSQL catalog's document registry: which version of each document is live, its stored text and
root, in a database every worker shares (a version switch is one transaction)."""

from __future__ import annotations

import builtins
import json
import os
from collections.abc import Sequence

from ragstream.errors import CollectionNotFoundError
from ragstream.models import DEFAULT_COLLECTION_ID, DocumentRecord, LoadedDocument
from ragstream.store import documents_sql as sql
from ragstream.store.catalog_base import COMMIT_SEQUENCE, SORT_COLUMNS, DocumentPage, DocumentVersion
from ragstream.store.catalog_sql import INSERT_COLUMNS, RECORD_COLUMNS, like_pattern, record, stored_document
from ragstream.store.postgres.catalog.connection import BUMP, PostgresRole, one

# A new version keeps the time its document was first ingested (unless the version names one: a copy), and
# its root unless it names one.
_UPSERT_DOCUMENT = (
    f"INSERT INTO documents ({INSERT_COLUMNS}) VALUES ({', '.join(['%s'] * 15)}) ON CONFLICT (document_id) DO UPDATE SET "
    + ", ".join(f"{c} = EXCLUDED.{c}" for c in INSERT_COLUMNS.split(", ")[1:-2])
    + ", first_ingested_at = COALESCE(%s, documents.first_ingested_at, EXCLUDED.first_ingested_at)"
    + ", root = COALESCE(EXCLUDED.root, documents.root)"
)


_SQL = sql.POSTGRES


class PostgresDocuments(PostgresRole):
    """The :class:`~ragstream.store.catalog_base.DocumentRegistry` in PostgreSQL."""

    def commit_documents(self, versions: Sequence[DocumentVersion], removed: Sequence[str] = ()) -> int:
        """Make each version live and drop the documents ``removed`` in one transaction; the commit sequence."""
        rows = [
            (
                v.doc.document_id, v.doc.source, v.doc.title, v.doc.mime, v.doc.checksum, v.generation, v.chunk_count,
                v.fingerprint, v.ingested_at, json.dumps(v.doc.metadata, sort_keys=True), v.doc.owner, v.doc.size_bytes,
                json.dumps([page.model_dump() for page in v.doc.pages]), v.first_ingested_at or v.ingested_at,
                v.doc.root, v.first_ingested_at,
            )
            for v in versions
        ]
        named = sorted({c for v in versions for c in v.doc.collections})
        with self._db.write() as conn:
            # each named collection locked against its delete (which takes it FOR UPDATE) until this commit ends
            found = {row[0] for row in conn.execute(
                "SELECT collection_id FROM collections WHERE collection_id = ANY(%s) FOR KEY SHARE", (named,))}
            if missing := [c for c in named if c not in found]:
                raise CollectionNotFoundError(f"collection {missing[0]!r} was deleted while documents were written into it")
            with conn.cursor() as cursor:
                cursor.executemany(_UPSERT_DOCUMENT, rows)
                cursor.executemany(_SQL.sql(sql.JOIN_COLLECTIONS), [(c, v.doc.document_id) for v in versions for c in v.doc.collections])
                cursor.executemany(_SQL.sql(sql.JOIN_DEFAULT), [(DEFAULT_COLLECTION_ID, v.doc.document_id, v.doc.document_id)
                                                   for v in versions])
            if removed:
                conn.execute("DELETE FROM documents WHERE document_id = ANY(%s)", (builtins.list(removed),))
                conn.execute("DELETE FROM collection_documents WHERE document_id = ANY(%s)", (builtins.list(removed),))
            return one(conn, BUMP, (COMMIT_SEQUENCE, 1))

    def remove_document(self, document_id: str) -> int:
        """Drop a document from the registry; the commit sequence."""
        with self._db.write() as conn:
            conn.execute(_SQL.sql(sql.DELETE), (document_id,))
            conn.execute(_SQL.sql(sql.LEAVE_COLLECTIONS), (document_id,))
            return one(conn, BUMP, (COMMIT_SEQUENCE, 1))

    def get(self, document_id: str, user: str | None = None, *,
            collections: Sequence[str] | None = None) -> DocumentRecord | None:
        """The live record of a document, or None (also when ``user`` may not see it)."""
        visible, params = _SQL.visible_to(user, collections)
        with self._db.read() as conn:
            row = conn.execute(_SQL.sql(sql.BY_ID, visible), (document_id, *params)).fetchone()
        return record(row) if row else None

    def get_many(self, document_ids: Sequence[str], user: str | None = None) -> dict[str, DocumentRecord]:
        """document_id -> the live record of each of ``document_ids`` ``user`` may see, in one read."""
        visible, params = _SQL.visible_to(user)
        with self._db.read() as conn:
            rows = conn.execute(_SQL.sql(sql.BY_IDS, visible), (_SQL.id_list(document_ids), *params)).fetchall()
        return {found.document_id: found for found in map(record, rows)}

    def count(self, user: str | None = None, *, collections: Sequence[str] | None = None) -> int:
        """How many live documents ``user`` may see (with ``collections``: in one of them)."""
        visible, params = _SQL.visible_to(user, collections)
        with self._db.read() as conn:
            return one(conn, _SQL.sql(sql.COUNT, visible), params)

    def find_by_checksum(self, checksum: str, user: str | None = None, *,
                         collections: Sequence[str] | None = None) -> builtins.list[DocumentRecord]:
        """Documents whose source file had this sha256 (with ``user``: among those it may see)."""
        visible, params = _SQL.visible_to(user, collections)
        with self._db.read() as conn:
            rows = conn.execute(_SQL.sql(sql.BY_CHECKSUM, visible), (checksum, *params)).fetchall()
        return [record(row) for row in rows]

    def list(self, user: str | None = None, *,
             collections: Sequence[str] | None = None) -> builtins.list[DocumentRecord]:
        """Every live document, by source; with ``user``, only that user's and the shared ones."""
        visible, params = _SQL.visible_to(user, collections)
        with self._db.read() as conn:
            rows = conn.execute(_SQL.sql(sql.LIST, visible), params).fetchall()
        return [record(row) for row in rows]

    def page(self, offset: int, limit: int, query: str = "", sort: str = "source",
             descending: bool = False, *, user: str | None = None,
             collections: Sequence[str] | None = None) -> DocumentPage:
        """``limit`` documents from ``offset`` of those ``user`` may see whose title or source contains ``query``."""
        column = SORT_COLUMNS.get(sort, SORT_COLUMNS["source"])
        direction = "DESC" if descending else "ASC"
        visible, params = _SQL.visible_to(user, collections)
        where = _SQL.sql(f"WHERE {visible}")
        if query:
            pattern = like_pattern(query)
            where = f"{where} AND (lower(title) LIKE %s OR lower(source) LIKE %s)"
            params = (*params, pattern, pattern)
        with self._db.read() as conn:
            total = one(conn, f"SELECT COUNT(*) FROM documents {where}", params)
            rows = conn.execute(f"SELECT {_SQL.sql('{record}')} FROM documents {where} ORDER BY {column} {direction} "
                                f"NULLS LAST, source {direction} LIMIT %s OFFSET %s", (*params, limit, offset)).fetchall()
        return DocumentPage(records=[record(row) for row in rows], total=total)

    def live_generations(self) -> dict[str, int]:
        """document_id -> live generation."""
        with self._db.read() as conn:
            return {str(d): int(g) for d, g in conn.execute("SELECT document_id, generation FROM documents")}

    def stored_document(self, document_id: str) -> LoadedDocument | None:
        """The extracted text of a document as it was ingested."""
        with self._db.read() as conn:
            row = conn.execute(_SQL.sql(sql.STORED), (document_id,)).fetchone()
        return None if row is None else stored_document(row)

    def documents_in_root(self, root: str) -> builtins.list[DocumentRecord]:
        """Every live document that belongs to ``root``, by source."""
        with self._db.read() as conn:
            rows = conn.execute(_SQL.sql(sql.IN_ROOT), (root,)).fetchall()
        return [record(row) for row in rows]

    def unrooted_documents_under(self, folder: str) -> builtins.list[DocumentRecord]:
        """Every live shared document of no root whose source is ``folder`` or lies inside it, by source."""
        prefix = folder.rstrip(os.sep) + os.sep
        with self._db.read() as conn:
            rows = conn.execute(f"SELECT {RECORD_COLUMNS} FROM documents WHERE owner IS NULL AND root IS NULL AND "
                                "(source = %s OR left(source, %s) = %s) ORDER BY source",
                                (folder, len(prefix), prefix)).fetchall()
        return [record(row) for row in rows]

    def set_root(self, document_ids: Sequence[str], root: str) -> None:
        """Make live documents belong to ``root``."""
        with self._db.write() as conn:
            conn.execute("UPDATE documents SET root = %s WHERE document_id = ANY(%s)", (root, builtins.list(document_ids)))
