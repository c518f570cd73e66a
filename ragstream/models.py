"""The data that flows through ragstream: files -> documents -> chunks -> search results, and the scope of a read."""

from __future__ import annotations

import re
import threading
import unicodedata
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, computed_field, model_validator


class Page(BaseModel):
    """A span of a document's text; PDFs have one per page, other formats one in all."""

    model_config = ConfigDict(frozen=True)

    number: int | None = Field(None, description="1-based page (or slide) number, None for formats without pages.")
    text: str
    ocr: bool = Field(False, description="The text was read from an image of the page by OCR.")


class LoadedDocument(BaseModel):
    """A file turned into text, before chunking."""

    model_config = ConfigDict(frozen=True)

    document_id: str
    source: str = Field(description="Where the document came from: a path or URL.")
    title: str
    mime: str
    checksum: str = Field(description="sha256 of the file's bytes (hex).")
    size_bytes: int
    pages: tuple[Page, ...]
    metadata: dict[str, Any] = Field(default_factory=dict, description="User-given metadata, kept on every chunk.")
    owner: str | None = Field(None, description="The user the document belongs to; None: shared with every user.")
    warnings: tuple[str, ...] = Field((), description="What the loader could not read (OCR pages left unread); "
                                      "reported by the ingest, never stored.")
    root: str | None = Field(
        None, description="The folder (or file) `ragstream sync`/`watch` keeps this document in step with; None: "
        "ingested otherwise (a re-ingest without a root keeps the one the document has).")
    collections: tuple[str, ...] = Field(
        (), description="Ids of the collections the document is ingested into (added to those it is in already); "
        "empty: those it is in, or the default collection for a new document.")

    @property
    def text(self) -> str:
        """The whole text, pages joined by blank lines."""
        return "\n\n".join(page.text for page in self.pages)


class TextPiece(BaseModel):
    """What a chunker emits: a span of text with its place in the document."""

    model_config = ConfigDict(frozen=True)

    text: str
    header_path: tuple[str, ...] = ()
    page: int | None = None
    ocr: bool = False


class ChunkMetadata(BaseModel):
    """Metadata stored with every chunk: its place in the document, content features and checksums (the fields a
    search filter may name, docs/cli.md)."""

    model_config = ConfigDict(frozen=True)

    document_id: str
    source: str
    title: str
    section: str = Field("", description="The innermost heading of the chunk.")
    header_path: str = Field("", description="Headings from the top, joined with ' > '.")
    page: int | None = None
    chunk_index: int
    word_count: int
    has_code: bool
    has_equations: bool
    ocr: bool = Field(False, description="The chunk's text was read by OCR from a scanned page or an image.")
    checksum: str = Field(description="sha256 of the source file.")
    content_hash: str = Field(description="sha256 of the chunk text; the embedding-cache key.")
    mime: str
    created_at: str = Field(description="ISO 8601 UTC time the document version was ingested.")
    extra: dict[str, Any] = Field(default_factory=dict, description="User-given document metadata.")
    owner: str | None = Field(None, description="The document's owner; None: shared (see docs/http-api.md, Users).")
    collections: tuple[str, ...] = Field((), description="Ids of the collections the document belongs to "
                                         "(docs/collections.md); a search scoped to collections filters on it.")


PRIVATE_METADATA_PREFIX = "_"
"""Document metadata keys starting with it are kept in the catalog for ragstream's own use (where
an upload is stored) and never copied to chunks, offered as filters or shown over HTTP."""
UPLOAD_PATH_KEY = f"{PRIVATE_METADATA_PREFIX}upload_path"
"""Private document metadata key holding an uploaded file's stored path relative to the upload directory."""


def public_metadata(metadata: dict[str, Any]) -> dict[str, Any]:
    """``metadata`` without its private keys."""
    return {key: value for key, value in metadata.items() if not key.startswith(PRIVATE_METADATA_PREFIX)}


OWNER_FIELD = "owner"
COLLECTIONS_FIELD = "collections"
DEFAULT_COLLECTION_ID = "default"
"""The collection every document belongs to when it names none, and that an index made before collections
opens with (its name is ``default`` too; readable by every user)."""
SHARED_OWNER = ""
"""How stores write the owner of a shared document (no user id is empty), so the visibility filter
``{owner: [user, SHARED_OWNER]}`` is an ordinary exact-match filter on every backend."""
FILTERABLE_FIELDS = frozenset(set(ChunkMetadata.model_fields) - {"extra", OWNER_FIELD, COLLECTIONS_FIELD} | {"chapter"})
"""Chunk metadata fields a search filter may name (``chapter``: the first heading of the header path).
``owner`` and ``collections`` are not: the facade's ``user`` and ``collections`` arguments decide what a search sees."""


class Chunk(BaseModel):
    """An immutable, stored unit of retrieval."""

    model_config = ConfigDict(frozen=True)

    chunk_id: str
    text: str
    metadata: ChunkMetadata


SearchMode = Literal["hybrid", "dense", "bm25"]


class SearchHit(BaseModel):
    """One ranked result."""

    chunk: Chunk
    score: float = Field(description="The mode's score: cosine (dense), BM25, or fused (hybrid).")
    rank: int = Field(description="1-based rank.")
    dense_score: float | None = None
    bm25_score: float | None = None
    rerank_score: float | None = Field(None, description="The cross-encoder's raw score, when the search was reranked.")
    fused_score: float | None = Field(None, description="The search's own score before reranking, when reranked.")


class SearchResult(BaseModel):
    """The answer to a search: ranked hits plus how they were found."""

    query: str
    mode: SearchMode = Field(description="The mode that actually ran.")
    requested_mode: SearchMode
    fallback_reason: str | None = Field(None, description="Why the mode that ran differs from the requested one.")
    reranked: bool = Field(False, description="Whether a cross-encoder re-ordered the head of the hits.")
    rerank_reason: str | None = Field(None, description="Why a requested rerank did not run (no model, decisive ranking).")
    hits: list[SearchHit]
    latencies_ms: dict[str, float] = Field(default_factory=dict, description="Per stage: embed, dense, bm25, fusion, rerank, total.")
    num_candidates: dict[str, int] = Field(
        default_factory=dict, description="Candidates each retriever that ran (dense, bm25) produced, before fusion, "
        "the score threshold and the cut to top_k.")


class DocumentRecord(BaseModel):
    """A document as the catalog knows it."""

    document_id: str
    source: str
    title: str
    mime: str
    checksum: str
    generation: int
    chunk_count: int
    fingerprint: str
    ingested_at: str = Field(description="When the live version was ingested (the last update).")
    metadata: dict[str, Any] = Field(default_factory=dict)
    owner: str | None = Field(None, description="The user the document belongs to; None: shared with every user.")
    first_ingested_at: str | None = Field(None, description="When the document was first ingested (kept across updates).")
    root: str | None = Field(None, description="The synced or watched root the document belongs to (None: none).")
    collections: list[str] = Field(default_factory=list, description="The collections the document belongs to: ids in "
                                   "the catalog; names, those the reader may read, wherever a record is shown "
                                   "(HTTP, CLI).")


COLLECTION_HOME_FOLDER = "collection-{collection_id}"
"""The folder of a document uploaded into a collection (its stored file ``collection-ID/...``; MCP's inline
documents have the source ``mcp://collection-ID/name``): that collection is the document's home, whose editors may
change it."""
_HOME_IN_SOURCE = re.compile(r"^[a-z][a-z0-9+.-]*://collection-([0-9a-f]{8,64})/")
_HOME_IN_UPLOAD_PATH = re.compile(r"^collection-([0-9a-f]{8,64})/")


def collection_home(record: DocumentRecord) -> str | None:
    """The id of the collection a shared document was uploaded into (its home); None for one ingested by the CLI,
    synced, watched or shared by an admin."""
    found = _HOME_IN_SOURCE.match(record.source)
    path = record.metadata.get(UPLOAD_PATH_KEY)
    if found is None and isinstance(path, str):
        found = _HOME_IN_UPLOAD_PATH.match(path)
    return found.group(1) if found else None


class FileFailure(BaseModel):
    """A file that could not be ingested, and why."""

    source: str
    error_type: str
    code: str
    message: str


class SkippedFile(BaseModel):
    """A file or folder that a folder ingest did not take, and why."""

    source: str
    reason: Literal["not_a_document", "excluded", "ignored", "hidden", "temporary", "symlink", "symlink_outside_root",
                    "folder_symlink", "broken_symlink", "symlink_loop", "special_file", "unreadable"] = Field(
        description="not_a_document: no ingest.include glob matched; excluded: an ingest.exclude glob matched; "
        "ignored: an ignore file (.gitignore, .ragstreamignore) matched; hidden: the name starts with a dot; "
        "temporary: an editor's lock, swap or backup file or a partial download (sync.temporary_files; sync only); "
        "symlink: a file link while ingest.follow_symlinks is never; symlink_outside_root: a file link whose target "
        "lies outside the folder given (ingest.follow_symlinks = inside_root); folder_symlink: a link to a folder "
        "(never walked); broken_symlink: a link to nothing; symlink_loop: a link that leads back to itself; "
        "special_file: a FIFO, socket or device (never opened); unreadable: a file or folder without read permission."
    )


class IngestReport(BaseModel):
    """Outcome of an ingest job: counts of processed, skipped and failed documents, every failure and skipped file."""

    job_id: str
    documents_processed: int = 0
    documents_skipped: int = Field(0, description="Unchanged documents that were not re-embedded.")
    documents_failed: int = 0
    chunks_written: int = 0
    embedding_count: int = Field(0, description="Texts actually sent to the embedder (cache misses).")
    embedding_cache_hits: int = 0
    failures: list[FileFailure] = Field(default_factory=list)
    skipped_files: list[SkippedFile] = Field(
        default_factory=list, description="Files and folders a folder ingest did not take (a folder counts once)."
    )
    warnings: list[str] = Field(default_factory=list)
    document_ids: list[str] = Field(default_factory=list)
    reindexed: list[str] = Field(
        default_factory=list, description="Documents indexed under other chunking or embedding settings that this "
        "job re-chunked and re-embedded from their stored text (ingest.reindex_stale).")
    duration_seconds: float = 0.0
    embedding_seconds: float = Field(0.0, description="Time spent inside the embedding model.")

    @computed_field  # type: ignore[prop-decorator]
    @property
    def files_skipped(self) -> dict[str, int]:
        """``skipped_files`` counted per reason."""
        counts: dict[str, int] = {}
        for entry in self.skipped_files:
            counts[entry.reason] = counts.get(entry.reason, 0) + 1
        return counts

    @computed_field  # type: ignore[prop-decorator]
    @property
    def errors(self) -> list[str]:
        """The sources that failed (every JSON report carries them, beside the detailed ``failures``)."""
        return [failure.source for failure in self.failures]


def filter_fields(records: Iterable[DocumentRecord]) -> set[str]:
    """Metadata fields a search filter may name: the chunk metadata fields and the documents' own keys."""
    fields = set(FILTERABLE_FIELDS)
    for record in records:
        fields.update(public_metadata(record.metadata))
    return fields


# -- the scope of a read (docs/collections.md, "One Scope, resolved where it is read") ----------------------------
# A Scope is built once at each surface's edge (an HTTP route, /v1, /ws/chat, an MCP tool, the CLI, a script) from
# the caller and the collection names as the caller gave them, and carried unchanged into the facade. There, and only
# there, it becomes a ResolvedScope (collection ids for the store filter, their names for labels, their instructions
# for the answering model): an answer resolves it inside its retried attempt (LazyScope), so a store down while
# reading the collections is answered without retrieval on every surface.


@dataclass(frozen=True)
class Scope:
    """Who reads (``user``: None for the CLI or a script, which read every document; ``admin``: an admin key, which
    reads every collection) and which collections (``collections``: names as the caller gave them, each checked for
    the reader when resolved; None or none: every collection the reader may read)."""

    user: str | None = None
    collections: Sequence[str] | None = None
    admin: bool = False

    def __post_init__(self) -> None:
        if self.collections is not None:  # a tuple: a Scope is a value (hashable, never changed by its holder)
            object.__setattr__(self, "collections", tuple(self.collections))

    def names(self) -> list[str] | None:
        """The collection names to resolve (None: every collection the reader may read)."""
        return list(self.collections) if self.collections else None


WHOLE_INDEX = Scope()
"""No user and no collections: every document (the CLI and scripts, as before users and collections)."""


class ResolvedScope(BaseModel):
    """A :class:`Scope` resolved against the catalog: what one read may see besides its user's documents (the
    collections it is limited to) and their instructions for the answering model (docs/collections.md)."""

    model_config = ConfigDict(frozen=True)

    collections: tuple[str, ...] | None = Field(None, description="Collection ids every search is limited to "
                                                "(None: no limit beyond the user's own visibility).")
    instructions: tuple[str, ...] = Field((), description="'name: text' of each scoped collection with instructions.")
    names: tuple[tuple[str, str], ...] | None = Field(None, description="(id, name) of each collection the read "
                                                      "may see, its sources' labels (None: every collection).")


class LazyScope:
    """One read's :class:`Scope` with how to resolve it, resolved when first asked and then reused: an answer asks
    inside its attempt (a store down then is retried, then answered without retrieval) and again for its labels."""

    def __init__(self, scope: Scope, resolve: Callable[[Scope], ResolvedScope]) -> None:
        self.scope = scope
        self._resolve = resolve
        self._resolved: ResolvedScope | None = None
        self._lock = threading.Lock()

    @property
    def user(self) -> str | None:
        """Whose read it is."""
        return self.scope.user

    def resolved(self) -> ResolvedScope:
        """The resolved scope (read from the catalog on the first call only; a failed read is tried again)."""
        with self._lock:
            if self._resolved is None:
                self._resolved = self._resolve(self.scope)
            return self._resolved


CollectionAccess = Literal["private", "readers", "all"]
QUALIFIER = ":"
"""What separates the owner from the name in a qualified collection name ``OWNER:NAME`` (``:NAME``: no owner)."""


def name_key(name: str) -> str:
    """How collection names compare (docs/collections.md): NFKC-normalized, then case-folded."""
    return unicodedata.normalize("NFKC", name).casefold()


def qualified_name(owner: str | None, name: str, key: str) -> str:
    """The name that names exactly this collection: ``OWNER:NAME``, or NAME for one of no owner (NAME is the key
    itself for a collection whose key a migration had to make unique, ``specs~<id>``)."""
    part = name if name_key(name) == key else key
    return part if owner is None else f"{owner}{QUALIFIER}{part}"


class CollectionRecord(BaseModel):
    """A named body of documents with its own instructions and access (docs/collections.md)."""

    collection_id: str
    name: str = Field(description="Unique per owner (compared NFKC-normalized and case-folded); how commands, routes "
                      "and scoped questions name it.")
    name_key: str = Field("", exclude=True, description="The name as names compare (:func:`name_key`), unique per "
                          "owner; made unique with ``~<collection_id>`` for a later name a migration found taken.")
    qualified_name: str = Field("", description="OWNER:NAME (NAME for a collection of no owner; :NAME when the "
                                "caller owns one of that name too): names exactly this collection.")
    description: str = ""
    instructions: str = Field("", description="Text added to the answering model's instructions whenever a "
                              "question is scoped to this collection.")
    owner: str | None = Field(None, description="The user who made it; None: made by an admin or the CLI.")
    access: CollectionAccess = Field("private", description="private: its owner and editors; readers: also the "
                                     "users in ``readers``; all: every user.")
    readers: list[str] = Field(default_factory=list, description="Users who may read it (access ``readers``).")
    editors: list[str] = Field(default_factory=list, description="Users who may read it and add or remove documents.")
    created_at: str = ""
    documents: int = Field(0, description="Live documents in it (of those the asking user may see).")

    @model_validator(mode="after")
    def _keyed(self) -> CollectionRecord:
        """Its name key and qualified name, from its name and owner unless given."""
        if not self.name_key:
            self.name_key = name_key(self.name)
        if not self.qualified_name:
            self.qualified_name = qualified_name(self.owner, self.name, self.name_key)
        return self

    def renamed(self, name: str) -> CollectionRecord:
        """This collection under a new ``name`` (its key and qualified name follow)."""
        return self.model_copy(update={"name": name, "name_key": name_key(name),
                                       "qualified_name": qualified_name(self.owner, name, name_key(name))})

    def readable_by(self, user: str | None, admin: bool = False) -> bool:
        """Whether ``user`` may search it (None or an admin: anyone may)."""
        if user is None or admin or self.access == "all" or user == self.owner or user in self.editors:
            return True
        return self.access == "readers" and user in self.readers

    def editable_by(self, user: str | None, admin: bool = False) -> bool:
        """Whether ``user`` may add documents to it and remove them (every user may put their own documents in
        the default collection, as before collections)."""
        return (user is None or admin or user == self.owner or user in self.editors
                or self.collection_id == DEFAULT_COLLECTION_ID)

    def managed_by(self, user: str | None, admin: bool = False) -> bool:
        """Whether ``user`` may change its name, description, instructions and access, or delete it."""
        return user is None or admin or (user == self.owner and self.collection_id != DEFAULT_COLLECTION_ID)


# -- writes: who writes, uploads and their background jobs (ragstream/writes/) ---------------------

class Writer(BaseModel):
    """Who writes to the index, with their rights (docs/collections.md, "Who may change a document"): ``user``
    None is the local admin (the CLI, a script, MCP over stdio), who may write anything; ``admin`` an admin key."""

    model_config = ConfigDict(frozen=True)

    user: str | None = None
    admin: bool = False

    @property
    def unrestricted(self) -> bool:
        """The local admin or an admin key: may write anything anywhere."""
        return self.user is None or self.admin


LOCAL_ADMIN = Writer()
"""The writer of the CLI and of scripts: the local admin."""


class ErrorDetail(BaseModel):
    """What went wrong, with a stable machine-readable ``code``."""

    code: str
    type: str
    message: str


FileStatus = Literal["ingested", "duplicate", "unchanged", "failed", "pending"]


class UploadedFile(BaseModel):
    """The outcome of one uploaded file."""

    filename: str = Field(description="The client's file name, reduced to its last path part (display only).")
    status: FileStatus
    document_id: str | None = None
    sha256: str | None = None
    size_bytes: int | None = None
    stored_as: str | None = Field(None, description="Path under the upload directory: {user_id}/{date}/{uuid}.")
    chunks: int | None = Field(None, description="Chunks written for this file.")
    duplicate_of: list[str] = Field(default_factory=list, description="Live documents with the same sha256.")
    error: ErrorDetail | None = None
    warnings: list[str] = Field(default_factory=list, description="What was read only in part: hidden sheets "
                                "skipped, scanned pages left unread by OCR's bounds.")


class JobStatus(BaseModel):
    """``GET /api/jobs/{id}``: a background ingest job and its progress."""

    id: str
    kind: Literal["upload"] = "upload"
    user: str = Field(description="Who uploaded: only that user (or an admin) reads the job.")
    shared: bool = Field(False, description="The files become shared documents (an admin's ``shared=true`` upload).")
    collection: str | None = Field(None, description="The id of the collection the files join (docs/collections.md).")
    state: Literal["queued", "running", "succeeded", "failed"]
    files_total: int = Field(description="Files in the upload.")
    files_done: int = Field(0, description="Files with an outcome so far (ingested, duplicate, unchanged or failed).")
    chunks: int = Field(0, description="Chunks written so far.")
    files: list[UploadedFile] = Field(description="One result per file; ``pending`` until the job reaches it.")
    error: ErrorDetail | None = Field(None, description="Why the job failed (e.g. ``job_interrupted`` by a restart).")
    created_at: str
    updated_at: str
