"""The vector-store interface: chunks with dense and BM25 vectors, filtered search, generations."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple, Protocol

import numpy as np

from ragstream.models import COLLECTIONS_FIELD, OWNER_FIELD, SHARED_OWNER, Chunk

FilterValue = str | int | bool | Sequence[str] | Sequence[int]
Filters = Mapping[str, FilterValue]


def visible_to(filters: Filters | None, user: str | None, collections: Sequence[str] | None = None) -> Filters | None:
    """``filters`` plus the condition that a point belongs to ``user`` or is shared
    (``owner`` in [user, SHARED_OWNER]) and, with ``collections`` (ids), to one of those collections;
    ``filters`` as they are when ``user`` and ``collections`` are None (every document).

    The conditions replace any ``owner`` or ``collections`` filter of the caller's: nobody filters
    their way into another user's documents or a collection they may not read.
    """
    scoped = {key: value for key, value in (filters or {}).items() if key != COLLECTIONS_FIELD}
    if user is not None:
        scoped[OWNER_FIELD] = [user, SHARED_OWNER]
    if collections is not None:
        scoped[COLLECTIONS_FIELD] = list(collections)
    return scoped if (filters is not None or scoped) else None


@dataclass(frozen=True)
class Snapshot:
    """The committed state of the catalog at one instant, as a reader needs it (docs/consistency.md).

    A point of generation ``g`` belongs to a version committed at this instant exactly when
    ``g <= max_generation`` (generations allocated later are invisible) and ``g`` is not in
    ``uncommitted`` (generations that write intents named at this instant and that were not the
    live generation of their document: versions being written, and versions replaced or deleted
    whose points are not gone yet). Generation numbers are never reused, so no document id is needed.
    """

    sequence: int
    """The catalog's commit sequence: how many version switches (commits and deletes) it had seen."""
    max_generation: int
    uncommitted: frozenset[int]

    def visible(self, generation: int) -> bool:
        """Whether points of ``generation`` belong to a version committed at this snapshot."""
        return generation <= self.max_generation and generation not in self.uncommitted


class RankedId(NamedTuple):
    """One hit of a ranking without its chunk: what fusion needs (the chunk's place in its document)
    and nothing it does not (text and metadata are fetched for the hits that are kept)."""

    chunk_id: str
    score: float
    document_id: str
    chunk_index: int


RANKING_FIELDS = ["document_id", "chunk_index"]
"""Payload fields a ranking reads besides the id and score."""


class VectorStore(Protocol):
    """What ragstream needs from a vector database.

    Every point carries the ``document_id`` and ``generation`` (document version) it was written
    under; a search returns only points that :meth:`Snapshot.visible` accepts, so a reader sees the
    versions committed at its snapshot: never a half-written, superseded or later one.
    """

    read_only: bool
    """Opened for reading only (the embedded store on a full disk): searches work, writes are refused."""

    def reopen_writable(self, min_free_bytes: int) -> None:
        """Opened read-only: open for writing now (the disk has room again, ``min_free_bytes`` kept free), readers
        going on meanwhile; InsufficientStorageError when it still cannot. A store never opened read-only does
        nothing."""
        ...

    def upsert(self, chunks: Sequence[Chunk], vectors: np.ndarray, generation: int) -> None:
        """Write chunks with their dense vectors (BM25 vectors are computed by the store)."""
        ...

    def delete_generation(self, document_id: str, generation: int) -> None:
        """Remove every point of one document version."""
        ...

    def flush(self) -> None:
        """Make every write so far durable."""
        ...

    def set_collections(self, document_id: str, collections: Sequence[str]) -> None:
        """Make every stored point of ``document_id`` (of every generation) carry these collection ids: a
        membership change, without re-embedding or a new version."""
        ...

    def search_dense(self, vector: np.ndarray, limit: int, filters: Filters | None,
                     snapshot: Snapshot) -> list[tuple[Chunk, float]]:
        """Nearest chunks by cosine similarity among the versions committed at ``snapshot``."""
        ...

    def search_bm25(self, text: str, limit: int, filters: Filters | None,
                    snapshot: Snapshot) -> list[tuple[Chunk, float]]:
        """Best chunks by BM25 among the versions committed at ``snapshot``."""
        ...

    def rank_dense(self, vector: np.ndarray, limit: int, filters: Filters | None,
                   snapshot: Snapshot) -> list[RankedId]:
        """:meth:`search_dense`'s ranking without the chunks (a hybrid search fuses hundreds of candidates
        and keeps ``top_k``: reading every candidate's text and metadata was most of its store time)."""
        ...

    def rank_bm25(self, text: str, limit: int, filters: Filters | None, snapshot: Snapshot) -> list[RankedId]:
        """:meth:`search_bm25`'s ranking without the chunks."""
        ...

    def fetch(self, chunk_ids: Sequence[str]) -> dict[str, Chunk]:
        """The stored chunks of ``chunk_ids`` (ids no longer stored are left out). A chunk id names one
        document version, so chunks ranked at a snapshot are fetched as they were ranked."""
        ...

    def count(self, filters: Filters | None = None) -> int:
        """Number of stored points matching ``filters`` (of every generation, committed or not)."""
        ...

    def chunks_of(self, document_id: str, generation: int) -> list[Chunk]:
        """Every chunk of one document version, by chunk_index."""
        ...

    def points_of(self, document_id: str, generation: int) -> list[tuple[Chunk, np.ndarray]]:
        """Every chunk of one document version with its stored dense vector, by chunk_index
        (what a migration copies instead of re-embedding)."""
        ...

    def maybe_optimize(self) -> bool:
        """Build ANN indexes when the store is big enough to need them."""
        ...

    def info(self) -> Mapping[str, Any]:
        """Backend statistics."""
        ...

    def close(self) -> None:
        """Release the store."""
        ...
