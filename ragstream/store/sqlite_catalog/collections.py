"""The SQLite catalog's collections: their names, instructions and access, and which documents belong to each."""

from __future__ import annotations

import builtins
import sqlite3
from collections.abc import Sequence

from ragstream.errors import CollectionExistsError, CollectionNotEmptyError, InvalidCollectionError
from ragstream.models import CollectionRecord
from ragstream.store import collections_sql as sql
from ragstream.store.catalog_sql import collection, collection_row
from ragstream.store.sqlite_catalog.connection import SqliteRole

_ORPHANS, _NEW_MEMBERS, _MEMBERSHIPS = (sql.for_backend(statement, sql.SQLITE_IDS)
                                        for statement in (sql.ORPHANS, sql.NEW_MEMBERS, sql.MEMBERSHIPS))


class SqliteCollections(SqliteRole):
    """The :class:`~ragstream.store.catalog_base.CollectionRegistry` in SQLite."""

    def create(self, record: CollectionRecord) -> None:
        """Register a new collection; CollectionExistsError when its owner has its name key (or its id is taken)."""
        try:
            with self._connection.transaction() as db:
                db.execute(sql.CREATE, collection_row(record))
        except sqlite3.IntegrityError as error:
            raise CollectionExistsError(f"a collection named {record.name!r} exists already (names compare case-insensitively)") from error

    def get(self, collection_id: str) -> CollectionRecord | None:
        """One collection by id, with its document count."""
        return self._one(sql.BY_ID, collection_id)

    def by_key(self, key: str) -> builtins.list[CollectionRecord]:
        """The collections (of every owner) whose name has the key ``key``."""
        with self._connection.lock:
            rows = self._connection.db.execute(sql.BY_KEY, (key,)).fetchall()
        return [collection(row[:-1], int(row[-1])) for row in rows]

    def _one(self, statement: str, value: str) -> CollectionRecord | None:
        with self._connection.lock:
            row = self._connection.db.execute(statement, (value,)).fetchone()
        return None if row is None else collection(row[:-1], int(row[-1]))

    def list(self, user: str | None = None) -> builtins.list[CollectionRecord]:
        """Every collection by name, with the count of its documents ``user`` may see."""
        with self._connection.lock:
            rows = self._connection.db.execute(*((sql.LIST, ()) if user is None else (sql.LIST_FOR_USER, (user,)))).fetchall()
        return [collection(row[:-1], int(row[-1])) for row in rows]

    def update(self, record: CollectionRecord) -> None:
        """Store a changed name, description, instructions or access."""
        _, *values = collection_row(record)
        try:
            with self._connection.transaction() as db:
                db.execute(sql.UPDATE, (*values, record.collection_id))
        except sqlite3.IntegrityError as error:
            raise CollectionExistsError(f"a collection named {record.name!r} exists already (names compare case-insensitively)") from error

    def delete(self, collection_id: str) -> None:
        """Drop a collection that holds no document."""
        with self._connection.transaction() as db:
            if db.execute(sql.HOLDS_DOCUMENTS, (collection_id,)).fetchone():
                raise CollectionNotEmptyError("the collection holds documents (written into it while it was being deleted)")
            db.execute(sql.DELETE, (collection_id,))
            db.execute(sql.DELETE_ROOTS, (collection_id,))

    def add_documents(self, collection_id: str, document_ids: Sequence[str]) -> builtins.list[str]:
        """Put live documents in a collection; the ids newly added (now pending)."""
        with self._connection.transaction() as db:
            added = [row[0] for row in db.execute(_NEW_MEMBERS, (_json(document_ids), collection_id))]
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
            rows = self._connection.db.execute(_MEMBERSHIPS, (_json(document_ids),)).fetchall()
        for document_id, collection_id in rows:
            found.setdefault(document_id, []).append(collection_id)
        return {document_id: tuple(ids) for document_id, ids in found.items()}

    def document_ids(self, collection_id: str, *, only_here: bool = False) -> builtins.list[str]:
        """The documents in a collection (with ``only_here``: those in no other), by id."""
        with self._connection.lock:
            rows = self._connection.db.execute(*((sql.ONLY_HERE, (collection_id, collection_id)) if only_here
                                                 else (sql.DOCUMENT_IDS, (collection_id,)))).fetchall()
        return [row[0] for row in rows]

    def set_root_collection(self, root: str, collection_id: str | None) -> None:
        """Make the documents a sync of ``root`` writes join ``collection_id`` (None: none of its own)."""
        with self._connection.transaction() as db:
            db.execute(sql.FORGET_ROOT, (root,))
            if collection_id is not None:
                db.execute(sql.SET_ROOT, (root, collection_id))

    def root_collection(self, root: str) -> str | None:
        """The collection the documents of a synced ``root`` join, or None."""
        with self._connection.lock:
            row = self._connection.db.execute(sql.ROOT, (root,)).fetchone()
        return None if row is None else str(row[0])

    def pending(self) -> builtins.list[str]:
        """Documents whose store payloads may not show their membership yet."""
        with self._connection.lock:
            return [row[0] for row in self._connection.db.execute(sql.PENDING)]

    def clear_pending(self, document_ids: Sequence[str]) -> None:
        """The store's payloads of these documents match the catalog now."""
        with self._connection.transaction() as db:
            db.executemany("DELETE FROM collection_payloads WHERE document_id = ?", [(i,) for i in document_ids])


def _json(values: Sequence[str]) -> str:
    import json

    return json.dumps(builtins.list(values))
