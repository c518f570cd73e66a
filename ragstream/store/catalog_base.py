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

JOB_COLUMNS = ("job_id", "kind", "state", "payload", "created_at", "updated_at")
"""The stored form of a background job (its progress and results are the JSON ``payload``)."""
UNFINISHED_JOB_STATES = ("queued", "running")
JOB_QUEUED, JOB_RUNNING = UNFINISHED_JOB_STATES
CLAIMED_JOB_COLUMNS = (*JOB_COLUMNS, "attempts")
"""A job taken from the queue: its row and how many workers have taken it (this one included)."""
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
    first_ingested_at: str | None = None
    """When the document was first ingested, if known (a copy keeps its source's); else the catalog
    keeps the time it already has for the document, or takes ``ingested_at`` for a new one."""


class TurnRow(NamedTuple):
    """One stored conversation turn, as a migration copies it."""

    conversation_id: str
    seq: int
    message_id: str
    user_text: str
    assistant_text: str
    created_at: str
    incomplete: bool
    owner: str = ""
    """The user the conversation belongs to ("" for none: the Python API and CLI)."""


SORT_COLUMNS = {"title": "lower(title)", "source": "lower(source)", "mime": "mime", "chunks": "chunk_count",
                "ingested": "first_ingested_at", "updated": "ingested_at"}
"""What a page of documents may be sorted by (title, source, type, chunk count, first ingest, last
update) and the SQL expression each catalog sorts by (the same in SQLite and PostgreSQL)."""
SORT_KEYS = tuple(SORT_COLUMNS)


@dataclass(frozen=True)
class RootRecord:
    """A folder (or file) that ``ragstream sync`` or ``watch`` keeps the index in step with."""

    root: str
    documents: int
    """Live documents that belong to it."""
    last_sync_at: str | None
    """When its last sync ended (ISO 8601 UTC), None before the first one ended."""
    last_summary: str
    """What its last sync did, as JSON text (counts and failures; ``ragstream.sync.report``)."""
    watched_until: float | None
    """A watcher's lease on it (seconds since the epoch), renewed while the watcher runs; None when none watches it."""


@dataclass(frozen=True)
class DocumentPage:
    """One page of the document list and how many documents matched in all."""

    records: list[DocumentRecord]
    total: int


class CatalogBackend(Protocol):
    """The document registry and everything stored beside it (thread-safe)."""

    read_only: bool
    """Opened for reading only (a local catalog on a full disk); writes raise InsufficientStorageError."""

    def reopen_writable(self, min_free_bytes: int) -> None:
        """Opened read-only: open for writing now (the disk has room again, ``min_free_bytes`` kept free);
        InsufficientStorageError when it still cannot. A catalog never opened read-only does nothing."""
        ...

    def close(self) -> None:
        """Release the database."""
        ...

    def read_transaction(self) -> AbstractContextManager[None]:
        """One read transaction: every catalog read inside it sees the same committed state (nests)."""
        ...

    def snapshot(self) -> Snapshot:
        """The committed state readers filter by (commit sequence, last generation, uncommitted ones)."""
        ...

    def open_reader(self) -> int | None:
        """Register a reader that is about to read a snapshot, at the commit sequence committed now, so that no
        process deletes a version it may read; its id (for :meth:`close_reader`), or None where no other process
        reads this catalog (the process's own snapshot bookkeeping is enough)."""
        ...

    def close_reader(self, reader_id: int) -> None:
        """The reader ``reader_id`` is done."""
        ...

    def oldest_reader(self) -> float:
        """The oldest commit sequence a registered reader (of any process) may read; infinity when none is."""
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

    def commit_documents(self, versions: Sequence[DocumentVersion], removed: Sequence[str] = ()) -> int:
        """Make each version live and drop the documents ``removed`` (a rename: the old id goes as the new one
        comes), all in one transaction; the commit sequence of the switch. A version without a ``root`` keeps
        the root its document has."""
        ...

    def remove_document(self, document_id: str) -> int:
        """Drop a document from the registry; the commit sequence."""
        ...

    def get(self, document_id: str, user: str | None = None) -> DocumentRecord | None:
        """The live record of a document, or None (also for one ``user`` may not see: another user's)."""
        ...

    def find_by_checksum(self, checksum: str, user: str | None = None) -> builtins.list[DocumentRecord]:
        """Documents ``user`` may see (every one without a user) whose source file had this sha256."""
        ...

    def list(self, user: str | None = None) -> builtins.list[DocumentRecord]:
        """Every live document ``user`` may see (their own and the shared ones; all without a user), by source."""
        ...

    def page(self, offset: int, limit: int, query: str = "", sort: str = "source",
             descending: bool = False, *, user: str | None = None) -> DocumentPage:
        """``limit`` documents from ``offset`` of those ``user`` may see whose title or source contains
        ``query`` (case-insensitive), sorted by ``sort`` (one of :data:`SORT_KEYS`; ties by source)."""
        ...

    def live_generations(self) -> dict[str, int]:
        """document_id -> live generation."""
        ...

    def stored_document(self, document_id: str) -> LoadedDocument | None:
        """The extracted text of a document as it was ingested."""
        ...

    # -- synced roots (ragstream sync / watch) ------------------------------------------------

    def documents_in_root(self, root: str) -> builtins.list[DocumentRecord]:
        """Every live document that belongs to ``root``, by source."""
        ...

    def set_root(self, document_ids: Sequence[str], root: str) -> None:
        """Make live documents belong to ``root`` (no new version: the root is not part of what readers see)."""
        ...

    def roots(self) -> builtins.list[RootRecord]:
        """Every root a sync has run on, with its document count, last sync and watcher lease, by root."""
        ...

    def record_sync(self, root: str, synced_at: str, summary: str) -> None:
        """Register ``root`` (if new) and remember when its last sync ended and what it did (JSON text)."""
        ...

    def watch_roots(self, roots: Sequence[str], until: float | None) -> None:
        """Set (or, with None, drop) a watcher's lease on registered ``roots`` (seconds since the epoch)."""
        ...

    def forget_root(self, root: str) -> None:
        """Unregister ``root`` (its documents must be gone first; the caller removes them)."""
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
                 created_at: str, keep: int, *, incomplete: bool = False, owner: str | None = None) -> None:
        """Append a (user, assistant) turn pair to ``owner``'s conversation and keep only its last ``keep``
        pairs (the same id under two owners is two conversations)."""
        ...

    def recent_turns(self, conversation_id: str, limit: int, owner: str | None = None) -> builtins.list[tuple[str, str]]:
        """The last ``limit`` (user, assistant) pairs of ``owner``'s conversation, oldest first."""
        ...

    def conversation_turns(self, conversation_id: str, owner: str | None = None) -> builtins.list[dict[str, Any]]:
        """Every kept turn of ``owner``'s conversation, oldest first, with its message id and completeness."""
        ...

    # -- copying to another catalog (ragstream migrate, docs/backends.md) -----------------------

    def raise_generation(self, at_least: int) -> None:
        """Move the generation counter up to ``at_least`` (never down)."""
        ...

    def embedding_rows(self, after: tuple[str, str] | None, limit: int) -> builtins.list[tuple[str, str, np.ndarray]]:
        """Up to ``limit`` embedding-cache entries (model_id, content_hash, vector) in key order, after ``after``."""
        ...

    def turn_rows(self, after: str | None, limit: int) -> builtins.list[TurnRow]:
        """Up to ``limit`` stored conversation turns in message-id order, after the message id ``after``."""
        ...

    def import_turns(self, rows: Sequence[TurnRow]) -> None:
        """Store conversation turns exactly as given (an existing message id is replaced)."""
        ...

    # -- background jobs ---------------------------------------------------------------------

    def save_job(self, job_id: str, kind: str, state: str, payload: str, now: str) -> None:
        """Create or update a background job (``payload``: its progress and results as JSON text)."""
        ...

    def job(self, job_id: str) -> dict[str, str] | None:
        """A job's row (:data:`JOB_COLUMNS`), or None."""
        ...

    def unfinished_jobs(self) -> builtins.list[dict[str, str]]:
        """Jobs still queued or running (after a restart: the ones it interrupted)."""
        ...

    def claim_job(self, worker: str, lease_seconds: float, now: str) -> dict[str, Any] | None:
        """Take the oldest job that is queued, or running with its lease run out (its worker died or hung):
        it becomes ``running`` for ``worker`` with a lease of ``lease_seconds`` (by the database's clock) and one
        more attempt. Its row (:data:`CLAIMED_JOB_COLUMNS`), or None. Concurrent callers never take one job twice."""
        ...

    def renew_job(self, job_id: str, worker: str, lease_seconds: float) -> bool:
        """Extend ``worker``'s lease on its running job; False when the job is no longer ``worker``'s."""
        ...

    def update_job(self, job_id: str, worker: str, state: str, payload: str, now: str, lease_seconds: float) -> bool:
        """Record ``worker``'s progress on its job (renewing the lease) or its end (a final ``state`` drops the
        lease; ``queued`` hands it back to the queue, not counted as an attempt). False, and nothing written,
        when the job is no longer ``worker``'s (another worker took it over)."""
        ...
