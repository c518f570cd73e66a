"""SQL text and row conversions the SQLite and the PostgreSQL catalogs share (the same tables and columns)."""

from __future__ import annotations

import json
from typing import Any

from ragstream.models import CollectionRecord, DocumentRecord, LoadedDocument, Page
from ragstream.store.catalog_base import JOB_COLUMNS

RECORD_COLUMNS = ("document_id, source, title, mime, checksum, generation, chunk_count, fingerprint, ingested_at, "
                  "metadata, owner, first_ingested_at, root")
"""The columns of a :class:`~ragstream.models.DocumentRecord`, in :func:`record`'s order."""
INSERT_COLUMNS = ("document_id, source, title, mime, checksum, generation, chunk_count, fingerprint, ingested_at, "
                  "metadata, owner, size_bytes, pages, first_ingested_at, root")
"""The columns a committed version writes."""
STORED_COLUMNS = "document_id, source, title, mime, checksum, size_bytes, pages, metadata, owner, root"
"""The columns of a document's stored text, in :func:`stored_document`'s order."""
ROOT_COLUMNS = ("root, (SELECT COUNT(*) FROM documents WHERE documents.root = sync_roots.root), last_sync_at, "
                "last_summary, watched_until")
"""The columns of a :class:`~ragstream.store.catalog_base.RootRecord`."""
NO_OWNER = ""
"""``conversation_turns.owner`` of conversations held for no user (the Python API and CLI)."""
TURN_KEYS = ("message_id", "user", "assistant", "created_at", "incomplete")
"""The keys of a turn as ``conversation_turns`` returns it."""


SAVE_JOB = ("INSERT INTO jobs (job_id, kind, state, payload, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?) "
            "ON CONFLICT (job_id) DO UPDATE SET state = EXCLUDED.state, payload = EXCLUDED.payload, "
            "updated_at = EXCLUDED.updated_at")
"""Create a background job, or record its state and payload."""
JOB_BY_ID = f"SELECT {', '.join(JOB_COLUMNS)} FROM jobs WHERE job_id = ?"
"""A job's row (``catalog_base.JOB_COLUMNS``)."""


def postgres(statement: str) -> str:
    """A shared statement (``?`` parameters) in psycopg's form (``%s`` parameters)."""
    return statement.replace("?", "%s")


COLLECTION_COLUMNS = "collection_id, name, description, instructions, owner, access, readers, editors, created_at, name_key"
"""The stored columns of a :class:`~ragstream.models.CollectionRecord`, in :func:`collection`'s order."""
MEMBER_COLUMN = "(SELECT {aggregate} FROM collection_documents m WHERE m.document_id = documents.document_id)"
"""A record's collection ids as one comma-separated column; each dialect fills in its aggregate of ``m.collection_id``."""


def record(row: tuple[Any, ...]) -> DocumentRecord:
    """A :data:`RECORD_COLUMNS` row (plus, optionally, :data:`MEMBER_COLUMN`) as a record (a record from before
    first-ingest times: its ingest time)."""
    names = RECORD_COLUMNS.split(", ")
    collections = sorted(str(row[len(names)]).split(",")) if len(row) > len(names) and row[len(names)] else []
    values: dict[str, Any] = dict(zip(names, row[:len(names)], strict=True))
    values["collections"] = collections
    values["metadata"] = json.loads(values["metadata"])
    values["first_ingested_at"] = values["first_ingested_at"] or values["ingested_at"]
    return DocumentRecord(**values)


def stored_document(row: tuple[Any, ...]) -> LoadedDocument:
    """A :data:`STORED_COLUMNS` row as the document it was ingested as."""
    pages = tuple(Page(**page) for page in json.loads(row[6]))
    return LoadedDocument(document_id=row[0], source=row[1], title=row[2], mime=row[3], checksum=row[4],
                          size_bytes=row[5], pages=pages, metadata=json.loads(row[7]), owner=row[8], root=row[9])


def collection(row: tuple[Any, ...], documents: int = 0) -> CollectionRecord:
    """A :data:`COLLECTION_COLUMNS` row as a record, with its document count."""
    values = dict(zip(COLLECTION_COLUMNS.split(", "), row, strict=True))
    values["readers"], values["editors"] = json.loads(values["readers"]), json.loads(values["editors"])
    return CollectionRecord(**values, documents=documents)


def collection_row(record: CollectionRecord) -> tuple[Any, ...]:
    """The stored columns of ``record`` (:data:`COLLECTION_COLUMNS`)."""
    return (record.collection_id, record.name, record.description, record.instructions, record.owner, record.access,
            json.dumps(sorted(set(record.readers))), json.dumps(sorted(set(record.editors))), record.created_at,
            record.name_key)


def like_pattern(query: str) -> str:
    """The LIKE pattern (escape character ``\\``) of titles or sources containing ``query``, case-folded."""
    return "%" + query.casefold().replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"


def turn(row: tuple[Any, ...]) -> dict[str, Any]:
    """A (message_id, user_text, assistant_text, created_at, incomplete) row as a turn (:data:`TURN_KEYS`)."""
    return dict(zip(TURN_KEYS, (*row[:4], bool(row[4])), strict=True))
