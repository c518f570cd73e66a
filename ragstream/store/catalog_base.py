"""The catalog protocol: what ragstream needs from the database that says which version of each
document is live (documents, versions, write intents, counters, embedding cache, conversations).

One implementation per backend: :class:`ragstream.store.catalog.Catalog` (SQLite, the embedded
default) and :class:`ragstream.store.postgres.catalog.PostgresCatalog`. The factory
(:mod:`ragstream.store.factory`) opens the one the config names. docs/consistency.md tells the
protocol every implementation keeps; ``tests/test_store_contract.py`` proves it on each.
"""

from __future__ import annotations

import builtins
from collections.abc import Iterable, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Any, NamedTuple, Protocol

import numpy as np

from ragstream.models import DocumentRecord, LoadedDocument
from ragstream.store.base import Snapshot

GENERATION_COUNTER = "generation"
COMMIT_SEQUENCE = "commit_sequence"


@dataclass(frozen=True)
class DocumentVersion:
    """One version of a document, as the catalog registers it."""

    doc: LoadedDocument
    generation: int
    chunk_count: int
    fingerprint: str
    ingested_at: str


class TurnRow(NamedTuple):
    """One stored conversation turn, as a migration copies it."""

    conversation_id: str
    seq: int
    message_id: str
    user_text: str
    assistant_text: str
    created_at: str
    incomplete: bool


class CatalogBackend(Protocol):
    """The document registry and everything stored beside it (thread-safe)."""

    def close(self) -> None:
        """Release the database."""
        ...

    def read_transaction(self) -> AbstractContextManager[None]:
        """One read transaction: every catalog read inside it sees the same committed state (nests)."""
        ...

    def snapshot(self) -> Snapshot:
        """The committed state readers filter by (commit sequence, last generation, uncommitted ones)."""
        ...

    # -- settings, generations and intents ---------------------------------------------------

    def setting(self, name: str) -> int | None:
        """A stored integer setting (e.g. the vector size the store was created with)."""
        ...

    def set_setting(self, name: str, value: int) -> None:
        """Store an integer setting."""
        ...

    def begin_versions(self, documents: Sequence[tuple[str, int | None]]) -> tuple[list[int], list[int]]:
        """New, never reused generations for (document_id, old_generation) pairs and their write
        intents, in one transaction: ``(generations, intent_ids)``."""
        ...

    def add_intents(self, intents: Sequence[tuple[str, int | None, int | None]]) -> list[int]:
        """Record (document_id, new_generation, old_generation) intents; their ids."""
        ...

    def clear_intents(self, intent_ids: Sequence[int]) -> None:
        """Forget intents once the vector store matches the catalog."""
        ...

    def intents(self) -> builtins.list[tuple[int, str, int | None, int | None]]:
        """Unfinished intents: (intent_id, document_id, new_generation, old_generation)."""
        ...

    # -- documents ---------------------------------------------------------------------------

    def commit_documents(self, versions: Sequence[DocumentVersion]) -> int:
        """Make each version live, all in one transaction; the commit sequence of the switch."""
        ...

    def remove_document(self, document_id: str) -> int:
        """Drop a document from the registry; the commit sequence."""
        ...

    def get(self, document_id: str) -> DocumentRecord | None:
        """The live record of a document, or None."""
        ...

    def find_by_checksum(self, checksum: str) -> builtins.list[DocumentRecord]:
        """Documents whose source file had this sha256."""
        ...

    def list(self) -> builtins.list[DocumentRecord]:
        """Every live document, by source."""
        ...

    def live_generations(self) -> dict[str, int]:
        """document_id -> live generation."""
        ...

    def stored_document(self, document_id: str) -> LoadedDocument | None:
        """The extracted text of a document as it was ingested."""
        ...

    # -- embedding cache ---------------------------------------------------------------------

    def cached_vectors(self, model_id: str, content_hashes: Sequence[str]) -> dict[str, np.ndarray]:
        """Cached vectors for the given chunk-content hashes."""
        ...

    def cache_vectors(self, model_id: str, items: Iterable[tuple[str, np.ndarray]]) -> None:
        """Store vectors by chunk-content hash."""
        ...

    # -- conversations -----------------------------------------------------------------------

    def add_turn(self, conversation_id: str, message_id: str, user_text: str, assistant_text: str,
                 created_at: str, keep: int, *, incomplete: bool = False) -> None:
        """Append a (user, assistant) turn pair and keep only the conversation's last ``keep`` pairs."""
        ...

    def recent_turns(self, conversation_id: str, limit: int) -> builtins.list[tuple[str, str]]:
        """The conversation's last ``limit`` (user, assistant) pairs, oldest first."""
        ...

    def conversation_turns(self, conversation_id: str) -> builtins.list[dict[str, Any]]:
        """Every kept turn of a conversation, oldest first, with its message id and completeness."""
        ...

    # -- copying to another catalog (ragstream migrate, docs/backends.md) -----------------------

    def raise_generation(self, at_least: int) -> None:
        """Move the generation counter up to ``at_least`` (never down)."""
        ...

    def embedding_rows(self, after: tuple[str, str] | None, limit: int) -> builtins.list[tuple[str, str, np.ndarray]]:
        """Up to ``limit`` embedding-cache entries (model_id, content_hash, vector) in key order, after ``after``."""
        ...

    def turn_rows(self, after: tuple[str, int] | None, limit: int) -> builtins.list[TurnRow]:
        """Up to ``limit`` stored conversation turns in (conversation_id, seq) order, after ``after``."""
        ...

    def import_turns(self, rows: Sequence[TurnRow]) -> None:
        """Store conversation turns exactly as given (an existing message id is replaced)."""
        ...
