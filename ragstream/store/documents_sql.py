"""The SQL of the catalog's document registry, shared by the SQLite and the PostgreSQL backends, as
:mod:`ragstream.store.collections_sql` is for collections. ``?`` marks a parameter, ``{ids}`` a backend's test against
one list parameter, ``{record}`` a record's columns with its collections, ``{visible}`` the documents a reader may
see: a :class:`Dialect` fills them in."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from ragstream.store.catalog_sql import MEMBER_COLUMN, RECORD_COLUMNS, STORED_COLUMNS
from ragstream.store.collections_sql import POSTGRES_IDS, SQLITE_IDS

BY_ID = "SELECT {record} FROM documents WHERE document_id = ? AND {visible}"
BY_IDS = "SELECT {record} FROM documents WHERE document_id {ids} AND {visible}"
BY_CHECKSUM = "SELECT {record} FROM documents WHERE checksum = ? AND {visible} ORDER BY source"
LIST = "SELECT {record} FROM documents WHERE {visible} ORDER BY source"
COUNT = "SELECT COUNT(*) FROM documents WHERE {visible}"
IN_ROOT = "SELECT {record} FROM documents WHERE root = ? ORDER BY source"
STORED = f"SELECT {STORED_COLUMNS} FROM documents WHERE document_id = ?"
DELETE = "DELETE FROM documents WHERE document_id = ?"
JOIN_COLLECTIONS = "INSERT INTO collection_documents (collection_id, document_id) VALUES (?, ?) ON CONFLICT DO NOTHING"
JOIN_DEFAULT = ("INSERT INTO collection_documents (collection_id, document_id) SELECT ?, ? WHERE NOT EXISTS "
                "(SELECT 1 FROM collection_documents WHERE document_id = ?)")
"""A document in no collection joins the default one."""
LEAVE_COLLECTIONS = "DELETE FROM collection_documents WHERE document_id = ?"
INDEXES = """
CREATE INDEX IF NOT EXISTS documents_checksum ON documents(checksum);
CREATE INDEX IF NOT EXISTS documents_generation ON documents(generation);
CREATE INDEX IF NOT EXISTS documents_by_title ON documents(lower(title));
CREATE INDEX IF NOT EXISTS documents_by_source ON documents(lower(source));
CREATE INDEX IF NOT EXISTS documents_by_chunks ON documents(chunk_count);
CREATE INDEX IF NOT EXISTS documents_by_update ON documents(ingested_at);
"""
"""The indexes of the ``documents`` table's first columns, in both backends' schemas."""


@dataclass(frozen=True)
class Dialect:
    """What one backend writes differently: its parameter marker, its list test and list parameter, and its
    aggregate of a document's collection ids."""

    parameter: str
    ids: str
    id_list: Callable[[Sequence[str]], Any]
    aggregate: str

    def sql(self, statement: str, visible: str = "") -> str:
        """``statement`` in this dialect, ``visible`` (from :meth:`visible_to`) in its ``{visible}`` slot."""
        record = RECORD_COLUMNS + ", " + MEMBER_COLUMN.format(aggregate=self.aggregate)
        return (statement.replace("{visible}", visible).replace("{record}", record).replace("{ids}", self.ids)
                .replace("?", self.parameter))

    def visible_to(self, user: str | None, collections: Sequence[str] | None = None) -> tuple[str, tuple[Any, ...]]:
        """The condition (``?`` parameters) and parameters of the documents ``user`` may see: theirs and the shared
        ones (owner NULL); every document when ``user`` is None. With ``collections`` (ids), only those in one."""
        condition, params = ("(owner IS NULL OR owner = ?)", (user,)) if user is not None else ("1 = 1", ())
        if collections is None:
            return condition, params
        return (f"{condition} AND document_id IN (SELECT document_id FROM collection_documents WHERE collection_id "
                "{ids})", (*params, self.id_list(collections)))


SQLITE = Dialect(parameter="?", ids=SQLITE_IDS, id_list=lambda ids: json.dumps(list(ids)),
                 aggregate="group_concat(m.collection_id)")
POSTGRES = Dialect(parameter="%s", ids=POSTGRES_IDS, id_list=list, aggregate="string_agg(m.collection_id, ',')")
