"""SQL text and row conversions the SQLite and the PostgreSQL catalogs share (the same tables and columns)."""

from __future__ import annotations

import json
from typing import Any

from ragstream.models import DocumentRecord, LoadedDocument, Page

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


def record(row: tuple[Any, ...]) -> DocumentRecord:
    """A :data:`RECORD_COLUMNS` row as a record (a record from before first-ingest times: its ingest time)."""
    values = dict(zip(RECORD_COLUMNS.split(", "), row, strict=True))
    values["metadata"] = json.loads(values["metadata"])
    values["first_ingested_at"] = values["first_ingested_at"] or values["ingested_at"]
    return DocumentRecord(**values)


def stored_document(row: tuple[Any, ...]) -> LoadedDocument:
    """A :data:`STORED_COLUMNS` row as the document it was ingested as."""
    pages = tuple(Page(**page) for page in json.loads(row[6]))
    return LoadedDocument(document_id=row[0], source=row[1], title=row[2], mime=row[3], checksum=row[4],
                          size_bytes=row[5], pages=pages, metadata=json.loads(row[7]), owner=row[8], root=row[9])


def like_pattern(query: str) -> str:
    """The LIKE pattern (escape character ``\\``) of titles or sources containing ``query``, case-folded."""
    return "%" + query.casefold().replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"


def turn(row: tuple[Any, ...]) -> dict[str, Any]:
    """A (message_id, user_text, assistant_text, created_at, incomplete) row as a turn (:data:`TURN_KEYS`)."""
    return dict(zip(TURN_KEYS, (*row[:4], bool(row[4])), strict=True))
