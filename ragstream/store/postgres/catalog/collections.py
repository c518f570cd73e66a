"""The PostgreSQL catalog's collections: their names, instructions and access, and which documents belong to each."""

from __future__ import annotations

import builtins
from collections.abc import Sequence

import psycopg

from ragstream.errors import CollectionExistsError, CollectionNotEmptyError, InvalidCollectionError, VectorDBWriteError
from ragstream.models import CollectionRecord
from ragstream.store.catalog_sql import COLLECTION_COLUMNS, collection, collection_row
from ragstream.store.postgres.catalog.connection import PostgresRole

_COUNT = ("SELECT COUNT(*) FROM collection_documents m JOIN documents d ON d.document_id = m.document_id "
          "WHERE m.collection_id = collections.collection_id")
_ORPHANS = ("SELECT document_id FROM collection_documents WHERE document_id = ANY(%s) "
            "GROUP BY document_id HAVING COUNT(*) = 1 AND MAX(collection_id) = %s")
_LOCK_DOCUMENTS = "SELECT document_id FROM documents WHERE document_id = ANY(%s) ORDER BY document_id FOR UPDATE"
"""Membership changes of one document take turns (two removals could otherwise leave it in no collection)."""


class PostgresCollections(PostgresRole):
    """The :class:`~ragstream.store.catalog_base.CollectionRegistry` in PostgreSQL."""

    def create(self, record: CollectionRecord) -> None:
        """Register a new collection; CollectionExistsError when its name (or id) is taken."""
        try:
            with self._db.write() as conn:
                conn.execute(f"INSERT INTO collections ({COLLECTION_COLUMNS}) VALUES ({', '.join(['%s'] * 9)})",
                             collection_row(record))
        except VectorDBWriteError as error:
            _raise_taken(error, record.name)

    def get(self, collection_id: str) -> CollectionRecord | None:
        """One collection by id, with its document count."""
        return self._one("collection_id = %s", collection_id)

    def by_name(self, name: str) -> CollectionRecord | None:
        """One collection by name."""
        return self._one("name = %s", name)

    def _one(self, where: str, value: str) -> CollectionRecord | None:
        with self._db.read() as conn:
            row = conn.execute(f"SELECT {COLLECTION_COLUMNS}, ({_COUNT}) FROM collections WHERE {where}", (value,)).fetchone()
        return None if row is None else collection(tuple(row[:-1]), int(row[-1]))

    def list(self, user: str | None = None) -> builtins.list[CollectionRecord]:
        """Every collection by name, with the count of its documents ``user`` may see."""
        visible, params = ("", ()) if user is None else (" AND (d.owner IS NULL OR d.owner = %s)", (user,))
        with self._db.read() as conn:
            rows = conn.execute(f"SELECT {COLLECTION_COLUMNS}, ({_COUNT}{visible}) FROM collections ORDER BY name",
                                params).fetchall()
        return [collection(tuple(row[:-1]), int(row[-1])) for row in rows]

    def update(self, record: CollectionRecord) -> None:
        """Store a changed name, description, instructions or access."""
        _, *values = collection_row(record)
        try:
            with self._db.write() as conn:
                conn.execute("UPDATE collections SET name = %s, description = %s, instructions = %s, owner = %s, "
                             "access = %s, readers = %s, editors = %s, created_at = %s WHERE collection_id = %s",
                             (*values, record.collection_id))
        except VectorDBWriteError as error:
            _raise_taken(error, record.name)

    def delete(self, collection_id: str) -> None:
        """Drop a collection that holds no document."""
        with self._db.write() as conn:
            conn.execute("SELECT 1 FROM collections WHERE collection_id = %s FOR UPDATE", (collection_id,))
            if conn.execute("SELECT 1 FROM collection_documents WHERE collection_id = %s LIMIT 1", (collection_id,)).fetchone():
                raise CollectionNotEmptyError("the collection holds documents (written into it while it was being deleted)")
            conn.execute("DELETE FROM collections WHERE collection_id = %s", (collection_id,))
            conn.execute("DELETE FROM root_collections WHERE collection_id = %s", (collection_id,))

    def add_documents(self, collection_id: str, document_ids: Sequence[str]) -> builtins.list[str]:
        """Put live documents in a collection; the ids newly added (now pending)."""
        with self._db.write() as conn:
            conn.execute(_LOCK_DOCUMENTS, (builtins.list(document_ids),))
            added = [str(row[0]) for row in conn.execute(
                "SELECT document_id FROM documents WHERE document_id = ANY(%s) AND document_id NOT IN "
                "(SELECT document_id FROM collection_documents WHERE collection_id = %s) ORDER BY document_id",
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
            orphans = [str(row[0]) for row in conn.execute(_ORPHANS, (builtins.list(document_ids), collection_id))]
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
            rows = conn.execute("SELECT document_id, collection_id FROM collection_documents WHERE document_id = ANY(%s) "
                                "ORDER BY document_id, collection_id", (builtins.list(document_ids),)).fetchall()
        for document_id, collection_id in rows:
            found.setdefault(str(document_id), []).append(str(collection_id))
        return {document_id: tuple(ids) for document_id, ids in found.items()}

    def document_ids(self, collection_id: str, *, only_here: bool = False) -> builtins.list[str]:
        """The documents in a collection (with ``only_here``: those in no other), by id."""
        alone = (" AND document_id NOT IN (SELECT document_id FROM collection_documents WHERE collection_id != %s)"
                 if only_here else "")
        with self._db.read() as conn:
            rows = conn.execute(
                f"SELECT document_id FROM collection_documents WHERE collection_id = %s{alone} ORDER BY document_id",
                (collection_id, collection_id) if only_here else (collection_id,)).fetchall()
        return [str(row[0]) for row in rows]

    def set_root_collection(self, root: str, collection_id: str | None) -> None:
        """Make the documents a sync of ``root`` writes join ``collection_id`` (None: none of its own)."""
        with self._db.write() as conn:
            conn.execute("DELETE FROM root_collections WHERE root = %s", (root,))
            if collection_id is not None:
                conn.execute("INSERT INTO root_collections (root, collection_id) VALUES (%s, %s)", (root, collection_id))

    def root_collection(self, root: str) -> str | None:
        """The collection the documents of a synced ``root`` join, or None."""
        with self._db.read() as conn:
            row = conn.execute("SELECT collection_id FROM root_collections WHERE root = %s", (root,)).fetchone()
        return None if row is None else str(row[0])

    def pending(self) -> builtins.list[str]:
        """Documents whose store payloads may not show their membership yet."""
        with self._db.read() as conn:
            return [str(row[0]) for row in conn.execute("SELECT document_id FROM collection_payloads ORDER BY document_id")]

    def clear_pending(self, document_ids: Sequence[str]) -> None:
        """The store's payloads of these documents match the catalog now."""
        with self._db.write() as conn:
            conn.execute("DELETE FROM collection_payloads WHERE document_id = ANY(%s)", (builtins.list(document_ids),))


def _raise_taken(error: VectorDBWriteError, name: str) -> None:
    """CollectionExistsError for a unique violation (a taken name); the error as it was otherwise."""
    if isinstance(error.__cause__, psycopg.errors.UniqueViolation):
        raise CollectionExistsError(f"a collection named {name!r} exists already") from error
    raise error
