"""Turn a document's text pieces into stored chunks with their metadata."""

from __future__ import annotations

import hashlib
from uuid import NAMESPACE_URL, uuid5

from ragstream.config.answer import CitationConfig
from ragstream.documents.features import has_code, has_equations
from ragstream.models import Chunk, ChunkMetadata, LoadedDocument, TextPiece, public_metadata

HEADER_PATH_SEPARATOR = " > "


def chunk_id_for(document_id: str, generation: int, index: int) -> str:
    """The stable id of chunk ``index`` of a document version (``generation``)."""
    return str(uuid5(NAMESPACE_URL, f"ragstream:{document_id}:{generation}:{index}"))


def build_chunks(doc: LoadedDocument, pieces: list[TextPiece], *, generation: int, created_at: str) -> list[Chunk]:
    """Wrap each piece of ``doc`` in a :class:`Chunk` with its full metadata (0-based index)."""
    return [
        Chunk(
            chunk_id=chunk_id_for(doc.document_id, generation, index),
            text=piece.text,
            metadata=ChunkMetadata(
                document_id=doc.document_id,
                source=doc.source,
                title=doc.title,
                section=piece.header_path[-1] if piece.header_path else "",
                header_path=HEADER_PATH_SEPARATOR.join(piece.header_path),
                page=piece.page,
                chunk_index=index,
                word_count=len(piece.text.split()),
                has_code=has_code(piece.text),
                has_equations=has_equations(piece.text),
                ocr=piece.ocr,
                checksum=doc.checksum,
                content_hash=hashlib.sha256(piece.text.encode("utf-8")).hexdigest(),
                mime=doc.mime,
                created_at=created_at,
                extra=public_metadata(doc.metadata),
                owner=doc.owner,
                collections=doc.collections,
            ),
        )
        for index, piece in enumerate(pieces)
    ]


def missing_metadata_warnings(doc: LoadedDocument, pieces: list[TextPiece], labels: CitationConfig) -> list[str]:
    """The ingest report's warnings about a document without a chapter (title) or with chunks under no section
    heading: its citations and sources show ``missing_chapter_label`` / ``missing_section_label`` instead."""
    warnings = []
    if not doc.title.strip():
        warnings.append(f"{doc.source}: no chapter (title) metadata: its citations show "
                        f"{labels.missing_chapter_label!r}")
    bare = sum(1 for piece in pieces if not piece.header_path)
    if bare:
        warnings.append(f"{doc.source}: {bare} of {len(pieces)} chunks stand under no section heading: their "
                        f"citations show {labels.missing_section_label!r}")
    return warnings


def relinked_chunk(chunk: Chunk, doc: LoadedDocument, *, generation: int, created_at: str) -> Chunk:
    """``chunk`` (its text and place unchanged) as a chunk of ``doc``'s version ``generation``: what a renamed
    file's document keeps, with the new id, source, title, owner and document metadata."""
    metadata = chunk.metadata.model_copy(update={
        "document_id": doc.document_id, "source": doc.source, "title": doc.title, "created_at": created_at,
        "extra": public_metadata(doc.metadata), "owner": doc.owner, "checksum": doc.checksum, "mime": doc.mime,
        "collections": doc.collections or chunk.metadata.collections})
    return Chunk(chunk_id=chunk_id_for(doc.document_id, generation, chunk.metadata.chunk_index), text=chunk.text,
                 metadata=metadata)
