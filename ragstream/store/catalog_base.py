"""The catalog's roles: what ragstream needs from the database that says which version of each
document is live, split by who uses what.

| Role | What it keeps | Used by |
|---|---|---|
| :class:`DocumentRegistry` | the live version of each document, its stored text and root | ingestion, sync, migration, the facade's reads |
| :class:`Versions` | the generation counter and the write intents | ingestion, snapshots, migration |
| :class:`ReadConsistency` | read transactions, snapshots and reader leases | snapshots |
| :class:`SyncRoots` | the roots ``ragstream sync`` / ``watch`` keep in step | sync, migration |
| :class:`Settings` | integer settings (the vector size) | the facade, migration |
| :class:`EmbeddingCache` | passage vectors by content hash | the cached embedder, migration |
| :class:`Conversations` | conversation turns | the answer service |
| :class:`MigrationRows` | the cache and the turns in key order, for a copy | migration |
| :class:`JobQueue` | background jobs and their workers' leases | the server's job runner |
| :class:`CollectionRegistry` | collections, their access and which documents belong to each | the facade's collections |
| :class:`Feedback` | every answer given, its rating and collections (in ``catalog_feedback``) | feedback, migration |

A backend implements each role in a module of its own over one shared
:class:`CatalogConnection` (SQLite: :mod:`ragstream.store.sqlite_catalog`; PostgreSQL:
:mod:`ragstream.store.postgres.catalog`); the factory (:mod:`ragstream.store.factory`) composes
the roles into a :class:`Catalog`. docs/consistency.md tells the protocol every implementation
keeps; the ``tests/store/test_catalog_*.py`` suites prove each role on each backend.
"""

from __future__ import annotations

import builtins
from collections.abc import Iterable, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Any, NamedTuple, Protocol

import numpy as np

from ragstream.models import CollectionRecord, DocumentRecord, LoadedDocument
from ragstream.store.base import Snapshot
from ragstream.store.catalog_feedback import (  # noqa: F401  (re-exported: the Feedback role)
    CollectionFeedback,
    Feedback,
    FeedbackDay,
    FeedbackRow,
    RatedQuestion,
)

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


class DocumentRegistry(Protocol):
    """The live version of each document, its stored text and the synced root it belongs to (thread-safe)."""

    def commit_documents(self, versions: Sequence[DocumentVersion], removed: Sequence[str] = ()) -> int:
        """Make each version live and drop the documents ``removed`` (a rename: the old id goes as the new one
        comes), all in one transaction; the commit sequence of the switch. A version without a ``root`` keeps
        the root its document has; it joins the collections its document names (and keeps those it is in; a
        document in none joins the default one)."""
        ...

    def remove_document(self, document_id: str) -> int:
        """Drop a document from the registry; the commit sequence."""
        ...

    def get(self, document_id: str, user: str | None = None, *,
            collections: Sequence[str] | None = None) -> DocumentRecord | None:
        """The live record of a document, or None (also for one ``user`` may not see: another user's, or, with
        ``collections``, one in none of those collections)."""
        ...

    def get_many(self, document_ids: Sequence[str], user: str | None = None) -> dict[str, DocumentRecord]:
        """document_id -> the live record of each of ``document_ids`` ``user`` may see (the others left out), in
        one read."""
        ...

    def count(self, user: str | None = None, *, collections: Sequence[str] | None = None) -> int:
        """How many documents :meth:`list` would return, in one COUNT query."""
        ...

    def find_by_checksum(self, checksum: str, user: str | None = None, *,
                         collections: Sequence[str] | None = None) -> builtins.list[DocumentRecord]:
        """Documents ``user`` may see (every one without a user; with ``collections``, in one of them) whose
        source file had this sha256."""
        ...

    def list(self, user: str | None = None, *, collections: Sequence[str] | None = None) -> builtins.list[DocumentRecord]:
        """Every live document ``user`` may see (their own and the shared ones; all without a user), by source;
        with ``collections`` (ids), only those in one of them."""
        ...

    def page(self, offset: int, limit: int, query: str = "", sort: str = "source",
             descending: bool = False, *, user: str | None = None,
             collections: Sequence[str] | None = None) -> DocumentPage:
        """``limit`` documents from ``offset`` of those ``user`` may see (with ``collections``: in one of them)
        whose title or source contains ``query`` (case-insensitive), sorted by ``sort`` (a key of
        :data:`SORT_COLUMNS`; ties by source)."""
        ...

    def live_generations(self) -> dict[str, int]:
        """document_id -> live generation."""
        ...

    def stored_document(self, document_id: str) -> LoadedDocument | None:
        """The extracted text of a document as it was ingested."""
        ...

    def documents_in_root(self, root: str) -> builtins.list[DocumentRecord]:
        """Every live document that belongs to ``root``, by source."""
        ...

    def unrooted_documents_under(self, folder: str) -> builtins.list[DocumentRecord]:
        """Every live shared document (no owner) that belongs to no root and whose source is ``folder`` or lies
        inside it (``folder`` + the path separator + more), by source: what ``ingest`` put in a synced root."""
        ...

    def set_root(self, document_ids: Sequence[str], root: str) -> None:
        """Make live documents belong to ``root`` (no new version: the root is not part of what readers see)."""
        ...


class Versions(Protocol):
    """Generations (never reused version numbers) and the write intents that name those being written or
    retired (thread-safe)."""

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

    def intents(self) -> list[tuple[int, str, int | None, int | None]]:
        """Unfinished intents recovery may replay: (intent_id, document_id, new_generation, old_generation)."""
        ...

    def raise_generation(self, at_least: int) -> None:
        """Move the generation counter up to ``at_least`` (never down): generations copied from another index
        under their own numbers are never allocated here again."""
        ...


class ReadConsistency(Protocol):
    """What readers filter by, and the readers other processes must wait for (docs/consistency.md)."""

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


class SyncRoots(Protocol):
    """The roots ``ragstream sync`` and ``watch`` keep the index in step with (their documents carry the root)."""

    def roots(self) -> list[RootRecord]:
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


class Settings(Protocol):
    """Integer settings of the index."""

    def setting(self, name: str) -> int | None:
        """A stored integer setting (e.g. the vector size the store was created with)."""
        ...

    def set_setting(self, name: str, value: int) -> None:
        """Store an integer setting."""
        ...


class EmbeddingCache(Protocol):
    """Passage vectors by model and chunk-content hash, so unchanged text is never embedded twice."""

    @property
    def read_only(self) -> bool:
        """The catalog was opened for reading only (a full disk): :meth:`cache_vectors` would fail."""
        ...

    def cached_vectors(self, model_id: str, content_hashes: Sequence[str]) -> dict[str, np.ndarray]:
        """Cached vectors for the given chunk-content hashes."""
        ...

    def cache_vectors(self, model_id: str, items: Iterable[tuple[str, np.ndarray]]) -> None:
        """Store vectors by chunk-content hash."""
        ...


class Conversations(Protocol):
    """The kept turns of each user's conversations."""

    def add_turn(self, conversation_id: str, message_id: str, user_text: str, assistant_text: str,
                 created_at: str, keep: int, *, incomplete: bool = False, owner: str | None = None) -> None:
        """Append a (user, assistant) turn pair to ``owner``'s conversation and keep only its last ``keep``
        pairs (the same id under two owners is two conversations); ``incomplete`` marks an answer cut short."""
        ...

    def recent_turns(self, conversation_id: str, limit: int, owner: str | None = None) -> list[tuple[str, str]]:
        """The last ``limit`` (user, assistant) pairs of ``owner``'s conversation, oldest first."""
        ...

    def conversation_turns(self, conversation_id: str, owner: str | None = None) -> list[dict[str, Any]]:
        """Every kept turn of ``owner``'s conversation, oldest first, with its message id and completeness."""
        ...


class MigrationRows(Protocol):
    """The embedding cache and the conversation turns in pages of key order, as ``ragstream migrate`` copies
    them (docs/backends.md), and the turns stored back exactly."""

    def embedding_rows(self, after: tuple[str, str] | None, limit: int) -> list[tuple[str, str, np.ndarray]]:
        """Up to ``limit`` embedding-cache entries (model_id, content_hash, vector) in key order, after ``after``."""
        ...

    def turn_rows(self, after: str | None, limit: int) -> list[TurnRow]:
        """Up to ``limit`` stored conversation turns in message-id order, after the message id ``after``."""
        ...

    def import_turns(self, rows: Sequence[TurnRow]) -> None:
        """Store conversation turns exactly as given (position and ids kept; an existing message id is replaced)."""
        ...


class JobQueue(Protocol):
    """Background jobs, and the leases of the workers running them."""

    def save_job(self, job_id: str, kind: str, state: str, payload: str, now: str) -> None:
        """Create or update a background job (``payload``: its progress and results as JSON text)."""
        ...

    def job(self, job_id: str) -> dict[str, str] | None:
        """A job's row (:data:`JOB_COLUMNS`), or None."""
        ...

    def unfinished_jobs(self) -> list[dict[str, str]]:
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


class CollectionRegistry(Protocol):
    """Collections (docs/collections.md) and the documents that belong to each (many to many). Every live document
    belongs to at least one: a version committed without a collection joins the default one
    (:data:`~ragstream.models.DEFAULT_COLLECTION_ID`), which a catalog from before collections gets with every
    document it holds. A membership change also names its documents as *pending* until the vector store's
    payloads carry it (:meth:`pending`, :meth:`clear_pending`), so recovery can finish one a crash cut short."""

    def create(self, record: CollectionRecord) -> None:
        """Register a new collection; CollectionExistsError when its owner (or no owner, for one of none) has a
        collection of its name key already (or its id is taken)."""
        ...

    def get(self, collection_id: str) -> CollectionRecord | None:
        """One collection by id (its ``documents``: every live document in it), or None."""
        ...

    def by_key(self, key: str) -> builtins.list[CollectionRecord]:
        """The collections of every owner whose name has the key ``key`` (:func:`~ragstream.models.name_key`; names
        are unique per owner by key), by id. Access is the caller's to check."""
        ...

    def list(self, user: str | None = None) -> builtins.list[CollectionRecord]:
        """Every collection by name, each with the count of its documents ``user`` may see (theirs and the
        shared ones; all without a user). Access is the caller's to check (:meth:`CollectionRecord.readable_by`)."""
        ...

    def update(self, record: CollectionRecord) -> None:
        """Store a changed name, description, instructions or access; CollectionExistsError for a name key its
        owner has already."""
        ...

    def delete(self, collection_id: str) -> None:
        """Drop a collection that holds no document (InvalidCollectionError when it still holds one)."""
        ...

    def add_documents(self, collection_id: str, document_ids: Sequence[str]) -> builtins.list[str]:
        """Put live documents in a collection; the ids that were not in it yet (now pending)."""
        ...

    def remove_documents(self, collection_id: str, document_ids: Sequence[str]) -> builtins.list[str]:
        """Take documents out of a collection; the ids that were in it (now pending). InvalidCollectionError, and
        nothing changed, when a document would belong to no collection."""
        ...

    def memberships(self, document_ids: Sequence[str]) -> dict[str, tuple[str, ...]]:
        """document_id -> the ids of the collections it belongs to, sorted (documents in none are left out)."""
        ...

    def document_ids(self, collection_id: str, *, only_here: bool = False) -> builtins.list[str]:
        """The documents in a collection (with ``only_here``: those that belong to no other), by id."""
        ...

    def set_root_collection(self, root: str, collection_id: str | None) -> None:
        """Make the documents a sync of ``root`` writes join ``collection_id`` (None: no collection of its own)."""
        ...

    def root_collection(self, root: str) -> str | None:
        """The collection the documents of a synced ``root`` join, or None."""
        ...

    def pending(self) -> builtins.list[str]:
        """Documents whose membership changed and whose vector-store payloads may not show it yet."""
        ...

    def clear_pending(self, document_ids: Sequence[str]) -> None:
        """The store's payloads of these documents match the catalog now."""
        ...


class CatalogConnection(Protocol):
    """The database one backend's roles share (thread-safe)."""

    @property
    def commit_lock(self) -> AbstractContextManager[Any]:
        """The reentrant lock of every writer's short switch: one writer at a time among all threads and processes."""
        ...

    @property
    def read_only(self) -> bool:
        """Opened for reading only (a local catalog on a full disk); writes raise InsufficientStorageError."""
        ...

    def reopen_writable(self, min_free_bytes: int) -> None:
        """Opened read-only: open for writing now (the disk has room again, ``min_free_bytes`` kept free);
        InsufficientStorageError when it still cannot. A catalog never opened read-only does nothing."""
        ...

    def close(self) -> None:
        """Release the database."""
        ...


@dataclass(frozen=True)
class Catalog:
    """One backend's catalog: its roles over one shared connection, as the factory composes them.

    A caller takes the role it uses (``catalog.documents``, ``catalog.jobs``, ...), not the whole catalog.
    """

    connection: CatalogConnection
    documents: DocumentRegistry
    versions: Versions
    reads: ReadConsistency
    roots: SyncRoots
    settings: Settings
    cache: EmbeddingCache
    conversations: Conversations
    migration: MigrationRows
    jobs: JobQueue
    collections: CollectionRegistry
    feedback: Feedback

    @property
    def read_only(self) -> bool:
        """Opened for reading only (a local catalog on a full disk); writes raise InsufficientStorageError."""
        return self.connection.read_only

    def reopen_writable(self, min_free_bytes: int) -> None:
        """Opened read-only: open for writing now; InsufficientStorageError when it still cannot."""
        self.connection.reopen_writable(min_free_bytes)

    def close(self) -> None:
        """Release the database."""
        self.connection.close()
