"""The SQLite catalog's collections: their names, instructions and access, and which documents belong to each."""

from __future__ import annotations

import builtins
import sqlite3
from collections.abc import Sequence

from ragstream.errors import CollectionExistsError, CollectionNotEmptyError, InvalidCollectionError
from ragstream.models import CollectionRecord
from ragstream.store.catalog_sql import COLLECTION_COLUMNS, collection, collection_row
from ragstream.store.sqlite_catalog.connection import SqliteRole

_COUNT = ("SELECT COUNT(*) FROM collection_documents m JOIN documents d ON d.document_id = m.document_id "
          "WHERE m.collection_id = collections.collection_id")
_ORPHANS = ("SELECT document_id FROM collection_documents WHERE document_id IN (SELECT value FROM json_each(?)) "
            "GROUP BY document_id HAVING COUNT(*) = 1 AND MAX(collection_id) = ?")


class SqliteCollections(SqliteRole):
    """The :class:`~ragstream.store.catalog_base.CollectionRegistry` in SQLite."""

    def create(self, record: CollectionRecord) -> None:
        """Register a new collection; CollectionExistsError when its name (or id) is taken."""
        try:
            with self._connection.transaction() as db:
                db.execute(f"INSERT INTO collections ({COLLECTION_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                           collection_row(record))
        except sqlite3.IntegrityError as error:
            raise CollectionExistsError(f"a collection named {record.name!r} exists already") from error

    def get(self, collection_id: str) -> CollectionRecord | None:
        """One collection by id, with its document count."""
        return self._one("collection_id = ?", collection_id)

    def by_name(self, name: str) -> CollectionRecord | None:
        """One collection by name."""
        return self._one("name = ?", name)

    def _one(self, where: str, value: str) -> CollectionRecord | None:
        with self._connection.lock:
            row = self._connection.db.execute(f"SELECT {COLLECTION_COLUMNS}, ({_COUNT}) FROM collections WHERE {where}",
                                              (value,)).fetchone()
        return None if row is None else collection(row[:-1], int(row[-1]))

    def list(self, user: str | None = None) -> builtins.list[CollectionRecord]:
        """Every collection by name, with the count of its documents ``user`` may see."""
        visible, params = ("", ()) if user is None else (" AND (d.owner IS NULL OR d.owner = ?)", (user,))
        with self._connection.lock:
            rows = self._connection.db.execute(
                f"SELECT {COLLECTION_COLUMNS}, ({_COUNT}{visible}) FROM collections ORDER BY name", params).fetchall()
        return [collection(row[:-1], int(row[-1])) for row in rows]

    def update(self, record: CollectionRecord) -> None:
        """Store a changed name, description, instructions or access."""
        _, *values = collection_row(record)
        try:
            with self._connection.transaction() as db:
                db.execute("UPDATE collections SET name = ?, description = ?, instructions = ?, owner = ?, access = ?, "
                           "readers = ?, editors = ?, created_at = ? WHERE collection_id = ?",
                           (*values, record.collection_id))
        except sqlite3.IntegrityError as error:
            raise CollectionExistsError(f"a collection named {record.name!r} exists already") from error

    def delete(self, collection_id: str) -> None:
        """Drop a collection that holds no document."""
        with self._connection.transaction() as db:
            if db.execute("SELECT 1 FROM collection_documents WHERE collection_id = ? LIMIT 1", (collection_id,)).fetchone():
                raise CollectionNotEmptyError("the collection holds documents (written into it while it was being deleted)")
            db.execute("DELETE FROM collections WHERE collection_id = ?", (collection_id,))
            db.execute("DELETE FROM root_collections WHERE collection_id = ?", (collection_id,))

    def add_documents(self, collection_id: str, document_ids: Sequence[str]) -> builtins.list[str]:
        """Put live documents in a collection; the ids newly added (now pending)."""
        with self._connection.transaction() as db:
            added = [row[0] for row in db.execute(
                "SELECT document_id FROM documents WHERE document_id IN (SELECT value FROM json_each(?)) AND document_id "
                "NOT IN (SELECT document_id FROM collection_documents WHERE collection_id = ?) ORDER BY document_id",
                (_json(document_ids), collection_id))]
            db.executemany("INSERT INTO collection_documents (collection_id, document_id) VALUES (?, ?)",
                           [(collection_id, document_id) for document_id in added])
            db.executemany("INSERT OR IGNORE INTO collection_payloads (document_id) VALUES (?)", [(i,) for i in added])
        return added

    def remove_documents(self, collection_id: str, document_ids: Sequence[str]) -> builtins.list[str]:
        """Take documents out of a collection; the ids removed (now pending)."""
        with self._connection.transaction() as db:
            orphans = [row[0] for row in db.execute(_ORPHANS, (_json(document_ids), collection_id))]
            if orphans:
                raise InvalidCollectionError(f"{len(orphans)} document(s) would belong to no collection (e.g. "
                                             f"{orphans[0]!r}): add them to another collection first, or delete them")
            removed = [row[0] for row in db.execute(
                "SELECT document_id FROM collection_documents WHERE collection_id = ? AND document_id IN "
                "(SELECT value FROM json_each(?)) ORDER BY document_id", (collection_id, _json(document_ids)))]
            db.executemany("DELETE FROM collection_documents WHERE collection_id = ? AND document_id = ?",
                           [(collection_id, document_id) for document_id in removed])
            db.executemany("INSERT OR IGNORE INTO collection_payloads (document_id) VALUES (?)", [(i,) for i in removed])
        return removed

    def memberships(self, document_ids: Sequence[str]) -> dict[str, tuple[str, ...]]:
        """document_id -> the ids of its collections, sorted."""
        found: dict[str, list[str]] = {}
        with self._connection.lock:
            rows = self._connection.db.execute(
                "SELECT document_id, collection_id FROM collection_documents WHERE document_id IN "
                "(SELECT value FROM json_each(?)) ORDER BY document_id, collection_id", (_json(document_ids),)).fetchall()
        for document_id, collection_id in rows:
            found.setdefault(document_id, []).append(collection_id)
        return {document_id: tuple(ids) for document_id, ids in found.items()}

    def document_ids(self, collection_id: str, *, only_here: bool = False) -> builtins.list[str]:
        """The documents in a collection (with ``only_here``: those in no other), by id."""
        alone = (" AND document_id NOT IN (SELECT document_id FROM collection_documents WHERE collection_id != ?)"
                 if only_here else "")
        with self._connection.lock:
            rows = self._connection.db.execute(
                f"SELECT document_id FROM collection_documents WHERE collection_id = ?{alone} ORDER BY document_id",
                (collection_id, collection_id) if only_here else (collection_id,)).fetchall()
        return [row[0] for row in rows]

    def set_root_collection(self, root: str, collection_id: str | None) -> None:
        """Make the documents a sync of ``root`` writes join ``collection_id`` (None: none of its own)."""
        with self._connection.transaction() as db:
            db.execute("DELETE FROM root_collections WHERE root = ?", (root,))
            if collection_id is not None:
                db.execute("INSERT INTO root_collections (root, collection_id) VALUES (?, ?)", (root, collection_id))

    def root_collection(self, root: str) -> str | None:
        """The collection the documents of a synced ``root`` join, or None."""
        with self._connection.lock:
            row = self._connection.db.execute("SELECT collection_id FROM root_collections WHERE root = ?", (root,)).fetchone()
        return None if row is None else str(row[0])

    def pending(self) -> builtins.list[str]:
        """Documents whose store payloads may not show their membership yet."""
        with self._connection.lock:
            return [row[0] for row in self._connection.db.execute(
                "SELECT document_id FROM collection_payloads ORDER BY document_id")]

    def clear_pending(self, document_ids: Sequence[str]) -> None:
        """The store's payloads of these documents match the catalog now."""
        with self._connection.transaction() as db:
            db.executemany("DELETE FROM collection_payloads WHERE document_id = ?", [(i,) for i in document_ids])


def _json(values: Sequence[str]) -> str:
    import json

    return json.dumps(builtins.list(values))
