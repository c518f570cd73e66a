"""How a chunk is stored as a point payload, shared by the Qdrant backends (embedded and server).

Every point carries the chunk's metadata, its text, the ``chapter`` (first heading of its header
path) and the ``generation`` (document version) it was written under. Flags are stored as 0/1
integers (qdrant-edge 0.9 never matches booleans), so both Qdrant backends hold identical payloads
and a migration copies them unchanged.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ragstream.models import Chunk, ChunkMetadata

DENSE = "dense"
"""Name of the dense (cosine) vector of every point."""
SPARSE = "bm25"
"""Name of the BM25 sparse vector, whose IDF the engine applies at query time."""
FLAG_FIELDS = ("has_code", "has_equations")
KEYWORD_INDEXES = ("document_id", "source", "title", "section", "chapter", "header_path", "mime")
INTEGER_INDEXES = ("generation", "page", "chunk_index", *FLAG_FIELDS)
CORE_FIELDS = set(ChunkMetadata.model_fields) | {"chapter", "generation"}


def to_payload(chunk: Chunk, generation: int) -> dict[str, Any]:
    """The payload stored with ``chunk`` under ``generation``."""
    payload = chunk.metadata.model_dump()
    for field in FLAG_FIELDS:
        payload[field] = int(payload[field])
    payload["chapter"] = chunk.metadata.header_path.split(" > ")[0] if chunk.metadata.header_path else ""
    payload["generation"] = generation
    payload["text"] = chunk.text
    return payload


def from_payload(point_id: str, payload: Mapping[str, Any]) -> Chunk:
    """The chunk a stored point holds."""
    fields = {key: value for key, value in payload.items() if key in ChunkMetadata.model_fields}
    for field in FLAG_FIELDS:
        fields[field] = bool(fields.get(field, 0))
    return Chunk(chunk_id=point_id, text=payload.get("text", ""), metadata=ChunkMetadata(**fields))


def payload_key(key: str) -> str:
    """Core metadata fields are top-level; anything else is user metadata under ``extra``."""
    return key if key in CORE_FIELDS else f"extra.{key}"


def filter_value(value: Any) -> Any:
    """A filter value as stored (booleans as 0/1)."""
    return int(value) if isinstance(value, bool) else value
