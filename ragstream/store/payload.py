"""The stored form of a chunk, shared by every vector-store backend: one flat payload per point
(chunk metadata, ``chapter``, ``generation``, ``text``) and how filter keys map onto it. A shared
chunk's ``owner`` is stored as the empty string, so "owner in [user, shared]" is one match-any filter; its
``collections`` (ids) are a list, so "in any of these collections" is one match-any filter too.

Booleans are stored as 0/1 integers (Qdrant never matches ``MatchValue(True)``; the other
backends keep the same form so a filter means the same everywhere). User metadata lives under
``extra``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ragstream.models import COLLECTIONS_FIELD, OWNER_FIELD, SHARED_OWNER, Chunk, ChunkMetadata

FLAG_FIELDS = ("has_code", "has_equations", "ocr")
METADATA_FIELDS = frozenset(ChunkMetadata.model_fields)
"""Read once: ``ChunkMetadata.model_fields`` costs microseconds per access (it was ~40% of a hybrid
search when read per payload key)."""
REQUIRED_FIELDS = frozenset(name for name, field in ChunkMetadata.model_fields.items() if field.is_required())
CORE_FIELDS = METADATA_FIELDS | {"chapter", "generation"}
FIELD_TYPES: dict[str, tuple[tuple[type, ...], Any]] = {
    "document_id": ((str,), ""), "source": ((str,), ""), "title": ((str,), ""), "section": ((str,), ""),
    "header_path": ((str,), ""), "page": ((int, type(None)), None), "chunk_index": ((int,), 0),
    "word_count": ((int,), 0), "checksum": ((str,), ""), "content_hash": ((str,), ""), "mime": ((str,), ""),
    "created_at": ((str,), ""), "extra": ((dict,), {}),
}
"""The metadata fields the answer path reads, their stored types and the safe value a malformed point gets."""
MALFORMED_KEY = "_malformed"
"""Under ``extra``: why a stored point is malformed (private: never a filter, never shown as metadata)."""


def to_payload(chunk: Chunk, generation: int) -> dict[str, Any]:
    """The payload stored with a chunk written under ``generation``."""
    payload = chunk.metadata.model_dump()
    for field in FLAG_FIELDS:
        payload[field] = int(payload[field])
    payload["chapter"] = chunk.metadata.header_path.split(" > ")[0] if chunk.metadata.header_path else ""
    payload["generation"] = generation
    payload[OWNER_FIELD] = chunk.metadata.owner or SHARED_OWNER
    payload[COLLECTIONS_FIELD] = list(chunk.metadata.collections)
    payload["text"] = chunk.text
    return payload


def from_payload(point_id: str, payload: Mapping[str, Any]) -> Chunk:
    """The chunk a stored payload describes; a malformed payload (no text, a missing or mistyped field) still
    gives a chunk, with safe values and the reason under ``extra["_malformed"]`` (:func:`malformed`): the answer
    path leaves such chunks out and reports them, and no read fails on one damaged point."""
    fields = {key: value for key, value in payload.items() if key in METADATA_FIELDS}
    for field in FLAG_FIELDS:
        fields[field] = bool(fields.get(field, 0))
    fields[OWNER_FIELD] = fields.get(OWNER_FIELD) or None
    fields[COLLECTIONS_FIELD] = tuple(fields.get(COLLECTIONS_FIELD) or ())
    text = payload.get("text")
    problem = _problem(text, fields)
    if problem is None and isinstance(text, str):  # as to_payload writes it: not validated again (~12% of a search)
        return Chunk.model_construct(chunk_id=point_id, text=text, metadata=ChunkMetadata.model_construct(**fields))
    safe = {name: fields[name] if _typed(name, fields.get(name)) else default
            for name, (_, default) in FIELD_TYPES.items()}
    given = fields.get("extra")
    extra: dict[str, Any] = given if isinstance(given, dict) else {}
    metadata = ChunkMetadata.model_construct(**{**fields, **safe, "extra": {**extra, MALFORMED_KEY: problem}})
    return Chunk.model_construct(chunk_id=point_id, text=text if isinstance(text, str) else "", metadata=metadata)


def malformed(chunk: Chunk) -> str | None:
    """Why the stored point behind ``chunk`` is malformed, or None when it is whole."""
    reason = chunk.metadata.extra.get(MALFORMED_KEY)
    return str(reason) if reason is not None else None


def _typed(name: str, value: Any) -> bool:
    types, _ = FIELD_TYPES[name]
    return isinstance(value, types) and not (isinstance(value, bool) and bool not in types)


def _problem(text: Any, fields: Mapping[str, Any]) -> str | None:
    """What makes a payload no chunk: no text, a required field missing, a field of the wrong type."""
    if not isinstance(text, str) or not text.strip():
        return "the stored point has no text"
    missing = sorted(REQUIRED_FIELDS - fields.keys())
    if missing:
        return f"the stored point lacks {', '.join(missing)}"
    broken = sorted(name for name in FIELD_TYPES if name in fields and not _typed(name, fields[name]))
    if broken:
        return "the stored point's " + ", ".join(f"{name} is {type(fields[name]).__name__}" for name in broken)
    return None


def payload_key(key: str) -> str:
    """Core metadata fields are top-level; anything else is user metadata under ``extra``."""
    return key if key in CORE_FIELDS else f"extra.{key}"


def filter_value(value: Any) -> Any:
    """A filter value in stored form (booleans as 0/1; lists item by item)."""
    if isinstance(value, (list, tuple, set, frozenset)):
        return [int(item) if isinstance(item, bool) else item for item in value]
    return int(value) if isinstance(value, bool) else value
