"""The PostgreSQL catalog's collections: their names, instructions and access, and which documents belong to each."""

from __future__ import annotations

import builtins
from collections.abc import Sequence

import psycopg

from ragstream.errors import CollectionExistsError, CollectionNotEmptyError, InvalidCollectionError, VectorDBWriteError
from ragstream.models import CollectionRecord
from ragstream.store import collections_sql as sql
from ragstream.store.catalog_sql import collection, collection_row
from ragstream.store.postgres.catalog.connection import PostgresRole


def _pg(statement: str) -> str:
    """A shared statement in PostgreSQL's dialect (``%s`` parameters, lists as arrays)."""
    return sql.for_backend(statement, sql.POSTGRES_IDS, "%s")


_LOCK_DOCUMENTS = "SELECT document_id FROM documents WHERE document_id = ANY(%s) ORDER BY document_id FOR UPDATE"
"""Membership changes of one document take turns (two removals could otherwise leave it in no collection)."""


class PostgresCollections(PostgresRole):
    """The :class:`~ragstream.store.catalog_base.CollectionRegistry` in PostgreSQL."""

    def create(self, record: CollectionRecord) -> None:
        """Register a new collection; CollectionExistsError when its owner has its name key (or its id is taken)."""
        try:
            with self._db.write() as conn:
                conn.execute(_pg(sql.CREATE), collection_row(record))
        except VectorDBWriteError as error:
            _raise_taken(error, record.name)

    def get(self, collection_id: str) -> CollectionRecord | None:
        """One collection by id, with its document count."""
        return self._one(sql.BY_ID, collection_id)

    def by_key(self, key: str) -> builtins.list[CollectionRecord]:
        """The collections (of every owner) whose name has the key ``key``."""
        with self._db.read() as conn:
            rows = conn.execute(_pg(sql.BY_KEY), (key,)).fetchall()
        return [collection(tuple(row[:-1]), int(row[-1])) for row in rows]

    def _one(self, statement: str, value: str) -> CollectionRecord | None:
        with self._db.read() as conn:
            row = conn.execute(_pg(statement), (value,)).fetchone()
        return None if row is None else collection(tuple(row[:-1]), int(row[-1]))

    def list(self, user: str | None = None) -> builtins.list[CollectionRecord]:
        """Every collection by name, with the count of its documents ``user`` may see."""
        with self._db.read() as conn:
            rows = conn.execute(*((_pg(sql.LIST), ()) if user is None else (_pg(sql.LIST_FOR_USER), (user,)))).fetchall()
        return [collection(tuple(row[:-1]), int(row[-1])) for row in rows]

    def update(self, record: CollectionRecord) -> None:
        """Store a changed name, description, instructions or access."""
        _, *values = collection_row(record)
        try:
            with self._db.write() as conn:
                conn.execute(_pg(sql.UPDATE), (*values, record.collection_id))
        except VectorDBWriteError as error:
            _raise_taken(error, record.name)

    def delete(self, collection_id: str) -> None:
        """Drop a collection that holds no document."""
        with self._db.write() as conn:
            conn.execute("SELECT 1 FROM collections WHERE collection_id = %s FOR UPDATE", (collection_id,))
            if conn.execute(_pg(sql.HOLDS_DOCUMENTS), (collection_id,)).fetchone():
                raise CollectionNotEmptyError("the collection holds documents (written into it while it was being deleted)")
            conn.execute(_pg(sql.DELETE), (collection_id,))
            conn.execute(_pg(sql.DELETE_ROOTS), (collection_id,))

    def add_documents(self, collection_id: str, document_ids: Sequence[str]) -> builtins.list[str]:
        """Put live documents in a collection; the ids newly added (now pending)."""
        with self._db.write() as conn:
            conn.execute(_LOCK_DOCUMENTS, (builtins.list(document_ids),))
            added = [str(row[0]) for row in conn.execute(_pg(sql.NEW_MEMBERS),
                                                         (builtins.list(document_ids), collection_id)).fetchall()]
            conn.execute("INSERT INTO collection_documents (collection_id, document_id) SELECT %s, unnest(%s::text[])",
                         (collection_id, added))
            conn.execute("INSERT INTO collection_payloads (document_id) SELECT unnest(%s::text[]) ON CONFLICT DO NOTHING",
                         (added,))
        return added

    def remove_documents(self, collection_id: str, document_ids: Sequence[str]) -> builtins.list[str]:
        """Take documents out of a collection; the ids removed (now pending)."""
        with self._db.write() as conn:
            conn.execute(_LOCK_DOCUMENTS, (builtins.list(document_ids),))
            orphans = [str(row[0]) for row in conn.execute(_pg(sql.ORPHANS), (builtins.list(document_ids), collection_id))]
            if orphans:
                raise InvalidCollectionError(f"{len(orphans)} document(s) would belong to no collection (e.g. "
                                             f"{orphans[0]!r}): add them to another collection first, or delete them")
            removed = [str(row[0]) for row in conn.execute(
                "DELETE FROM collection_documents WHERE collection_id = %s AND document_id = ANY(%s) RETURNING document_id",
                (collection_id, builtins.list(document_ids))).fetchall()]
            conn.execute("INSERT INTO collection_payloads (document_id) SELECT unnest(%s::text[]) ON CONFLICT DO NOTHING",
                         (removed,))
        return sorted(removed)

    def memberships(self, document_ids: Sequence[str]) -> dict[str, tuple[str, ...]]:
        """document_id -> the ids of its collections, sorted."""
        found: dict[str, list[str]] = {}
        with self._db.read() as conn:
            rows = conn.execute(_pg(sql.MEMBERSHIPS), (builtins.list(document_ids),)).fetchall()
        for document_id, collection_id in rows:
            found.setdefault(str(document_id), []).append(str(collection_id))
        return {document_id: tuple(ids) for document_id, ids in found.items()}

    def document_ids(self, collection_id: str, *, only_here: bool = False) -> builtins.list[str]:
        """The documents in a collection (with ``only_here``: those in no other), by id."""
        with self._db.read() as conn:
            rows = conn.execute(*((_pg(sql.ONLY_HERE), (collection_id, collection_id)) if only_here
                                  else (_pg(sql.DOCUMENT_IDS), (collection_id,)))).fetchall()
        return [str(row[0]) for row in rows]

    def set_root_collection(self, root: str, collection_id: str | None) -> None:
        """Make the documents a sync of ``root`` writes join ``collection_id`` (None: none of its own)."""
        with self._db.write() as conn:
            conn.execute(_pg(sql.FORGET_ROOT), (root,))
            if collection_id is not None:
                conn.execute(_pg(sql.SET_ROOT), (root, collection_id))

    def root_collection(self, root: str) -> str | None:
        """The collection the documents of a synced ``root`` join, or None."""
        with self._db.read() as conn:
            row = conn.execute(_pg(sql.ROOT), (root,)).fetchone()
        return None if row is None else str(row[0])

    def pending(self) -> builtins.list[str]:
        """Documents whose store payloads may not show their membership yet."""
        with self._db.read() as conn:
            return [str(row[0]) for row in conn.execute(_pg(sql.PENDING))]

    def clear_pending(self, document_ids: Sequence[str]) -> None:
        """The store's payloads of these documents match the catalog now."""
        with self._db.write() as conn:
            conn.execute("DELETE FROM collection_payloads WHERE document_id = ANY(%s)", (builtins.list(document_ids),))


def _raise_taken(error: VectorDBWriteError, name: str) -> None:
    """CollectionExistsError for a unique violation (a taken name); the error as it was otherwise."""
    if isinstance(error.__cause__, psycopg.errors.UniqueViolation):
        raise CollectionExistsError(f"a collection named {name!r} exists already (names compare case-insensitively)") from error
    raise error
