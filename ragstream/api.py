"""The public Python API. The CLI, the HTTP server and the web UI are thin shells over it.

Reads and answers take an optional ``user``: with one, they see only that user's documents and the
shared ones (and that user's conversations); without one (the CLI, scripts), every document.
Documents ingested here are shared unless ``owner`` is given.

>>> from ragstream import Ragstream
>>> rs = Ragstream()                      # embedded store in the user's data directory
>>> rs.ingest(["docs/"])                  # IngestReport
>>> rs.search("how do I set a timeout?")  # SearchResult with ranked, attributed hits
"""

from __future__ import annotations

import math
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from ragstream.answer.cache import RetrievalCache
from ragstream.api_pipeline import PipelineFacade
from ragstream.api_writes import WritesFacade
from ragstream.collection_service import CollectionService
from ragstream.config import RagstreamConfig, load_config
from ragstream.errors import (
    DocumentNotFoundError,
    InvalidNumberError,
    PermissionDeniedError,
)
from ragstream.feedback import AnswerFeedback
from ragstream.ingestion import Ingestor, ProgressCallback
from ragstream.models import (
    LOCAL_ADMIN,
    WHOLE_INDEX,
    Chunk,
    DocumentRecord,
    IngestReport,
    LoadedDocument,
    Scope,
    SearchMode,
    SearchResult,
    Writer,
    filter_fields,
)
from ragstream.pipeline.super_prompt import SuperPrompt
from ragstream.providers.deadline import Deadline
from ragstream.providers.embedders import Embedder
from ragstream.providers.embedders.cached import CachedEmbedder
from ragstream.providers.index_models import IndexModels
from ragstream.retrieval.searcher import Searcher
from ragstream.store.base import Filters, Snapshot, VectorStore
from ragstream.store.catalog_base import Catalog, DocumentPage
from ragstream.store.factory import open_catalog, open_store
from ragstream.store.snapshots import Snapshots
from ragstream.store.write_gate import WriteGate
from ragstream.titles import cut_title
from ragstream.writes.service import WriteService

if TYPE_CHECKING:
    from ragstream.answer.models import Answer, RAGContext, StreamEvent
    from ragstream.answer.service import AnswerService
    from ragstream.migration import MigrationProgress, MigrationReport
    from ragstream.pipeline.context import StageContext
    from ragstream.providers.rerankers.base import Reranker
    from ragstream.store.catalog_base import RootRecord
    from ragstream.sync.report import SyncReport
    from ragstream.sync.syncer import Syncer
    from ragstream.sync.watcher import ReportCallback, Watcher


class Ragstream(PipelineFacade, WritesFacade):
    """One ragstream index: its config, catalog, vector store and models; its collections (docs/collections.md)."""

    def __init__(self, config: RagstreamConfig | None = None, *, embedder: Embedder | None = None) -> None:
        self.config = config or load_config()
        Path(self.config.data_dir).mkdir(parents=True, exist_ok=True)
        self.catalog: Catalog = open_catalog(self.config)
        self._models = IndexModels(self.config, self.catalog.cache, embedder)
        self._embedder_lock = threading.Lock()
        try:
            self.store: VectorStore = open_store(self.config, self.catalog, self._vector_size())
        except BaseException:
            self.catalog.close()
            raise
        self._write_gate = WriteGate(self.store, self.catalog.connection, Path(self.config.data_dir),
                                     self.config.limits.min_free_disk_bytes, recover=lambda: self.ingestor.recover())
        self.snapshots = Snapshots(self.catalog.reads, self.catalog.versions, self.store)
        self.retrieval_cache = RetrievalCache(self.config.answer.cache)
        self.feedback = AnswerFeedback(self.catalog.feedback, self.config.answer.feedback,  # ratings, citation opens
                                       lambda: {c.collection_id: c.name for c in self.catalog.collections.list()})
        self._changed = False
        self.ingestor = Ingestor(self.config, self.catalog.documents, self.catalog.versions, self.store, self.embedder,
                                 self.snapshots, on_change=self._index_changed, before_write=self.ensure_writable,
                                 joined=lambda doc, record: self.collection_service.joined(doc, record),
                                 commit_lock=self.catalog.connection.commit_lock)
        self.collection_service = CollectionService(self.config.collections, self.catalog, self.store, self.ingestor, self._index_changed)
        self.writes = WriteService(self.config, self.collection_service, self.ingestor, self._syncer)
        """The one write path (ragstream/writes/): every surface's writes, checked for their writer."""
        self.searcher = Searcher(self.store, self.embedder, self.config.retrieval, self.snapshots,
                                 self.config.limits.max_query_chars)
        self._pipeline_context: StageContext | None = None
        self._answer_service: AnswerService | None = None
        self._folder_syncer: Syncer | None = None
        if not self.read_only:  # a read-only index (full disk) is searched as committed
            self.ingestor.recover()
            self.collection_service.recover()

    # -- a full disk (store/write_gate.py) -------------------------------------------------------

    @property
    def read_only(self) -> bool:
        """Opened on a full disk: searches and answers work over the committed index; writes raise
        InsufficientStorageError until the disk has room again (:meth:`ensure_writable`)."""
        return self._write_gate.read_only

    def ensure_writable(self) -> None:
        """Let a write go on. An index opened read-only on a full disk opens for writing once the disk has
        ``limits.min_free_disk_bytes`` free again (no restart; what an interrupted write left is recovered
        first); while it has not, InsufficientStorageError, before any work such as embedding. Every write of
        the ingestor (ingest, delete, reindex, sync) runs it first."""
        self._write_gate.ensure_writable()

    def when_writable(self, callback: Callable[[], None]) -> None:
        """Run ``callback`` once the index takes writes: now, or when a read-only index opens for writing."""
        self._write_gate.when_writable(callback)

    # -- models ----------------------------------------------------------------------------------

    def embedder(self) -> CachedEmbedder:
        """The embedder (passage vectors cached by text), loaded on first use; EmbedderUnavailableError if it cannot."""
        return self._models.embedder()

    def _vector_size(self) -> int:
        """The store's vector size: configured, remembered from creation, or asked of the embedder.

        Remembering it lets an existing index open (and fall back to BM25) without the embedder.
        """
        size = self.config.embedding.dimensions or self.catalog.settings.setting("vector_size")
        if size is None:
            size = self.embedder().dimensions
            self.catalog.settings.set_setting("vector_size", size)
        return size

    # -- documents -------------------------------------------------------------------------------

    def ingest(
        self, paths: Iterable[str | Path], *, metadata: dict[str, Any] | None = None, owner: str | None = None,
        progress: ProgressCallback | None = None, collection: str | None = None, writer: Writer = LOCAL_ADMIN,
    ) -> IngestReport:
        """Ingest files and folders; unchanged documents are skipped, bad files reported. They belong
        to ``owner`` (None: shared with every user) and join ``collection`` (a name; else the default one).
        ``writer``'s right to write there is checked first (default: the local admin, who may write anything)."""
        self._changed = True
        return self.writes.ingest_paths(self.writes.target(writer, owner=owner, collection=collection), paths,
                                        metadata=metadata, progress=progress)

    def ingest_bytes(self, data: bytes, filename: str, *, source: str, owner: str | None = None,
                     metadata: dict[str, Any] | None = None, collection: str | None = None,
                     writer: Writer = LOCAL_ADMIN) -> IngestReport:
        """Ingest one file given as bytes, its type sniffed from the content as for an upload. ``source`` names
        where it came from; the same ``source`` and ``owner`` replace the earlier document (another owner's never).
        Raises a DocumentError (unsupported, too large, empty, ...) for bytes that cannot be loaded, and what
        :meth:`ingest` raises for a ``writer`` who may not write there."""
        self._changed = True
        return self.writes.ingest_bytes(self.writes.target(writer, owner=owner, collection=collection), data, filename,
                                        source=source, metadata=metadata)

    def ingest_documents(self, docs: Iterable[LoadedDocument], *, progress: ProgressCallback | None = None,
                         writer: Writer = LOCAL_ADMIN) -> IngestReport:
        """Ingest documents built in memory (upsert by document_id; each carries its ``owner`` and collections,
        so only the local admin or an admin ``writer`` may)."""
        self._changed = True
        return self.writes.ingest_built(writer, docs, progress=progress)

    @contextmanager
    def snapshot(self) -> Iterator[Snapshot]:
        """The committed state of the index now: reads given it (``search(..., snapshot=)``) see one
        version of each document, the one committed when the block began (docs/consistency.md)."""
        with self.snapshots.open() as snapshot:
            yield snapshot

    def documents(self, *, scope: Scope = WHOLE_INDEX) -> list[DocumentRecord]:
        """Every live document ``scope``'s user may see (all without a user), in its collections if it names any,
        in one catalog read."""
        return self.catalog.documents.list(scope.user, collections=self._resolve(scope).collections)

    def document_page(self, offset: int = 0, limit: int | None = None, query: str = "", sort: str = "source",
                      descending: bool = False, *, scope: Scope = WHOLE_INDEX) -> DocumentPage:
        """One page of the documents of ``scope`` (every one without a user or collections) whose title or source
        contains ``query`` (case-insensitive), sorted by ``sort`` (title, source, mime, chunks, ingested,
        updated), with the total that matched."""
        size = limit if limit is not None else self.config.server.documents_page_size
        return self.catalog.documents.page(max(offset, 0), max(size, 0), query, sort, descending, user=scope.user,
                                           collections=self._resolve(scope).collections)

    def example_titles(self, count: int | None = None, *, user: str | None = None) -> list[str]:
        """Titles of the documents ``user`` may see (the largest ones first, each cut at a word to
        ``server.example_title_chars``), for a UI to suggest questions about."""
        server = self.config.server
        wanted = server.example_questions if count is None else count
        if wanted <= 0:
            return []
        records = self.document_page(0, wanted * 2, sort="chunks", descending=True, scope=Scope(user)).records
        titles = list(dict.fromkeys(" ".join(record.title.split()) for record in records if record.title.strip()))
        return [cut_title(title, server.example_title_chars) for title in titles[:wanted]]

    def document(self, document_id: str, *, user: str | None = None, admin: bool = False) -> DocumentRecord:
        """One document's record; raises DocumentNotFoundError (also for one ``user`` may not see; an ``admin``
        sees the shared documents of every collection, as in :meth:`documents`)."""
        return _found(document_id, self.catalog.documents.get(document_id, user,
                                                              collections=self._resolve(Scope(user, admin=admin)).collections))

    def document_with_chunks(self, document_id: str, *, user: str | None = None,
                             admin: bool = False) -> tuple[DocumentRecord, list[Chunk]]:
        """One document's record and the chunks of that very version, from one snapshot.

        Both are read inside the catalog's read transaction: on a store in the catalog's database (postgres) that
        is one database snapshot, so another process deleting the version meanwhile cannot take its chunks away.
        """
        def read() -> tuple[DocumentRecord, list[Chunk]]:
            found = self.document(document_id, user=user, admin=admin)
            return found, self.store.chunks_of(document_id, found.generation)

        with self.snapshots.open_with(read) as (_, record_and_chunks):
            return record_and_chunks

    def document_text(self, document_id: str, *, user: str | None = None,
                      admin: bool = False) -> tuple[DocumentRecord, str]:
        """One document's record and its whole text as extracted at ingest (pages joined by blank lines), from
        one snapshot; raises DocumentNotFoundError (also for one ``user`` may not see)."""
        def read() -> tuple[DocumentRecord, str]:
            found = self.document(document_id, user=user, admin=admin)
            stored = self.catalog.documents.stored_document(document_id)
            return found, stored.text if stored is not None else ""

        with self.snapshots.open_with(read) as (_, record_and_text):
            return record_and_text

    def duplicates(self, checksum: str, *, user: str | None = None) -> list[DocumentRecord]:
        """Live documents ``user`` may see whose source file had this sha256 (never another user's)."""
        return self.catalog.documents.find_by_checksum(checksum, user, collections=self._resolve(Scope(user)).collections)

    def filter_fields(self, *, user: str | None = None) -> set[str]:
        """Metadata fields a search filter may name: the chunk metadata fields and the documents' own keys."""
        return filter_fields(self.documents(scope=Scope(user)))

    def document_chunks(self, document_id: str, *, user: str | None = None, admin: bool = False) -> list[Chunk]:
        """The live chunks of one document, in order."""
        return self.document_with_chunks(document_id, user=user, admin=admin)[1]

    def delete(self, document_id: str, *, user: str | None = None, allow_shared: bool = True,
               admin: bool = False) -> DocumentRecord:
        """Delete a document and every chunk of it; the record it had.

        With ``user``: only a document that user may see (else DocumentNotFoundError), and a shared
        one only when ``allow_shared`` (else PermissionDeniedError).
        """
        if user is not None:
            record = self.document(document_id, user=user, admin=admin)
            if record.owner is None and not allow_shared:
                raise PermissionDeniedError(f"document {document_id!r} is shared; only an admin may delete it")
        self._changed = True
        return self.ingestor.delete(document_id)

    def reindex(self, *, progress: ProgressCallback | None = None) -> IngestReport:
        """Rebuild every document under the current chunking and embedding settings."""
        self._changed = True
        return self.ingestor.reindex(progress=progress)

    def stale_documents(self) -> list[str]:
        """Documents indexed with other settings than the current config."""
        return self.ingestor.stale_documents()

    # -- folder sync (docs/cli.md: sync, watch) ---------------------------------------------------

    def sync(self, paths: Iterable[str | Path], *, changed: Iterable[str | Path] | None = None,
             progress: ProgressCallback | None = None, collection: str | None = None,
             writer: Writer = LOCAL_ADMIN) -> SyncReport:
        """Make the index match folders (or files): new and changed files are ingested, a renamed file's document
        is re-linked by content hash without re-embedding, and documents whose files are gone or now excluded are
        removed with their chunks. The documents remember their root and are shared (as with the CLI's ingest);
        a user's document is never touched. ``changed``: only these paths changed; ``collection``: the roots' join it.
        The local admin's or an admin's (``writer``) alone."""
        self.ensure_writable()
        self._changed = True
        return self.writes.sync(writer, list(paths), changed=changed, progress=progress, collection=collection)

    def forget_root(self, path: str | Path, *, writer: Writer = LOCAL_ADMIN) -> SyncReport:
        """Remove every document of a synced root (which may no longer exist) and unregister it; raises
        RootNotFoundError for a path no sync registered."""
        self.ensure_writable()
        self._changed = True
        return self.writes.forget_root(writer, path)

    def roots(self) -> list[RootRecord]:
        """Every synced or watched root: its document count, last sync and watcher lease."""
        return self.catalog.roots.roots()

    def watcher(self, paths: Iterable[str | Path], *, on_report: ReportCallback | None = None, collection: str | None = None,
                writer: Writer = LOCAL_ADMIN) -> Watcher:
        """A watcher that keeps ``paths`` in step with this index as files change (``start``/``stop`` on a thread
        of its own, or ``run`` on the caller's); raises RootNotFoundError for a path that does not exist."""
        self._changed = True
        return self.writes.watcher(writer, list(paths), on_report=on_report, collection=collection)

    def _syncer(self) -> Syncer:
        from ragstream.sync.syncer import Syncer  # the file parsers load only when a sync runs

        with self._embedder_lock:
            if self._folder_syncer is None:
                self._folder_syncer = Syncer(self.config, self.catalog.documents, self.catalog.roots, self.ingestor)
            return self._folder_syncer

    # -- retrieval -------------------------------------------------------------------------------

    def search(
        self,
        query: str,
        *,
        mode: SearchMode | None = None,
        top_k: int | None = None,
        filters: Filters | None = None,
        score_threshold: float | None = None,
        query_vector: np.ndarray | None = None,
        snapshot: Snapshot | None = None,
        rerank: bool = False,
        scope: Scope = WHOLE_INDEX,
    ) -> SearchResult:
        """Hybrid (default), dense or BM25 search with metadata filters, over the versions committed
        at ``snapshot`` (one from :meth:`snapshot`; by default, the state when the search starts) of
        the documents ``scope``'s user may see (every document without a user), in its collections; with ``rerank``, the
        cross-encoder re-orders the first ``reranker.top_n`` hits (``retrieval/rerank.py``). Raises
        InvalidNumberError for a NaN or infinite ``score_threshold``."""
        if score_threshold is not None and not math.isfinite(score_threshold):
            raise InvalidNumberError(f"score_threshold must be a finite number, not {score_threshold}")
        result = self.searcher.search(query, mode=mode, top_k=top_k, filters=filters, score_threshold=score_threshold,
                                      query_vector=query_vector, snapshot=snapshot, user=scope.user,
                                      collections=self._resolve(scope).collections)
        if not rerank:
            return result
        from ragstream.retrieval.rerank import rerank_result

        reranker, unavailable = self.reranker()
        return rerank_result(result, reranker, unavailable, self.config.reranker,
                             Deadline(self.config.answer.deadline_seconds))

    def reranker(self) -> tuple[Reranker | None, str | None]:
        """The configured reranker (loaded once), or None with the reason it cannot run."""
        return self._models.reranker()

    def migrate(self, to: str, *, target_dir: Path | None = None, collection: str | None = None,
                progress: MigrationProgress | None = None) -> MigrationReport:
        """Copy this index (documents, versions, stored text, vectors, embedding cache, conversations) to
        the backend named by ``to``, without re-embedding; resumable, verified at the end
        (``report.ok``). Targets: a folder, ``qdrant:FOLDER``, ``http(s)://`` (a Qdrant server, its
        catalog in ``target_dir``) or ``postgresql://`` (docs/backends.md)."""
        from ragstream.migration import Migration, MigrationReport, Side, target_config

        settings = target_config(self.config, to, data_dir=target_dir, collection=collection, dimensions=self._vector_size())
        with Ragstream(settings) as target:  # opening it recovers a copy that was killed midway
            migration = Migration(Side(self.catalog, self.store), Side(target.catalog, target.store),
                                  self.config.store.migrate, vector_size=self._vector_size(), progress=progress)
            with self.snapshots.open_with(self.catalog.documents.list) as (snapshot, records):
                return migration.run(records, snapshot.max_generation, MigrationReport(target=to))

    def stats(self) -> dict[str, Any]:
        """Counts for observability."""
        return {"documents": len(self.catalog.documents.list()), **self.store.info()}

    def close(self) -> None:
        """Release the store and catalog (flushing the store first when this process changed the index)."""
        if self._changed:
            self.store.flush()
        self.store.close()
        self.catalog.close()

    def _index_changed(self) -> None:
        self._changed = True
        self.retrieval_cache.invalidate()

    def __enter__(self) -> Ragstream:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # -- SuperPrompt pipeline (docs/pipeline.md): new_prompt, run_stage, run_pipeline and the Answer step
    #    (stream_prompt_answer) come from PipelineFacade (api_pipeline.py)

    def start_llm(self) -> None:
        """Start a local model now, not at the first question: a bad file fails at start-up (ConfigError)."""
        self._models.start_llm()

    def stage_context(self) -> StageContext:
        """The pipeline's StageContext (search, embedder, reranker, agents, schema, tokens), built once."""
        if self._pipeline_context is not None:
            return self._pipeline_context
        from ragstream.agents.factory import AgentFactory
        from ragstream.pipeline.context import StageContext
        from ragstream.pipeline.prompt_schema import load_prompt_schema
        from ragstream.providers.tokens import make_token_counter

        reranker, unavailable = self.reranker()
        context = StageContext(config=self.config, search=self.searcher.search, embedder=self.embedder, reranker=reranker,
                               reranker_unavailable=unavailable, agents=AgentFactory(self.config),
                               schema=load_prompt_schema(self.config.preprocessing.prompt_schema),
                               count_tokens=make_token_counter(self.config.llm))
        with self._embedder_lock:
            self._pipeline_context = self._pipeline_context or context
            return self._pipeline_context

    # -- answers (docs/answers.md) --------------------------------------------------------------

    def retrieve(self, query: str, context_key: str = "", max_chunks: int | None = None,
                 min_relevance: float | None = None, *, scope: Scope = WHOLE_INDEX) -> RAGContext:
        """Chunks of relevance (dense cosine, 0..1) >= ``min_relevance``, best first, from one snapshot
        of the documents of ``scope``; cached per commit sequence, user and resolved scope."""
        with self.snapshot() as snapshot:
            return self.answers().retrieve(query, context_key, max_chunks, min_relevance, snapshot, self._lazy(scope))

    def ask(self, question: str, conversation_id: str | None = None, selected_text: str | None = None, *,
            scope: Scope = WHOLE_INDEX) -> Answer:
        """A cited answer (LLM, or extractive without one): answer, sources, citations, confidence, metadata.

        It reads the versions committed when the call starts, of the documents ``scope``'s user may see, and
        continues that user's conversation of that id, in ``scope``'s collections if it names any (resolved for its
        reader inside the answer's attempt, so a store down while reading them is answered without retrieval too)."""
        lazy = self._lazy(scope)  # resolved in the pipeline's attempt, then reused for the labels
        return self._labelled(self.answers().ask(question, conversation_id, selected_text, None, lazy), lazy)

    def stream_answer(self, question: str, conversation_id: str | None = None, selected_text: str | None = None, *,
                      scope: Scope = WHOLE_INDEX) -> Iterator[StreamEvent]:
        """The answer as ``token`` and ``citation`` events, then ``done``; it reads the versions
        committed when the iteration starts (a snapshot is held only while the pipeline runs), as :meth:`ask`."""
        lazy = self._lazy(scope)
        return self._labelled_events(self.answers().stream_answer(question, conversation_id, selected_text, lazy), lazy)

    def conversation(self, conversation_id: str, *, user: str | None = None) -> list[dict[str, Any]]:
        """``user``'s conversation's kept turns, oldest first (``incomplete`` marks answers cut short);
        empty for an id ``user`` has no conversation under."""
        return self.answers().conversations.messages(conversation_id, user)

    def answers(self) -> AnswerService:
        """The answer path (pipeline, answering model, citations), built once."""
        if self._answer_service is not None:
            return self._answer_service
        from ragstream.answer.conversation import ConversationStore
        from ragstream.answer.retrieve_contract import Retriever
        from ragstream.answer.service import AnswerService
        from ragstream.pipeline import controller

        context = self.stage_context()

        def run(sp: SuperPrompt, deadline: Deadline, snapshot: Snapshot | None = None, user: str | None = None,
                collections: Sequence[str] | None = None, timings: dict[str, float] | None = None) -> SuperPrompt:
            if snapshot is not None:
                return controller.run_pipeline(sp, context.for_turn(deadline, snapshot, user, collections), timings=timings)
            with self.snapshot() as fresh:  # every search of the question reads one snapshot
                return controller.run_pipeline(sp, context.for_turn(deadline, fresh, user, collections), timings=timings)

        service = AnswerService(
            self.config, pipeline=run, embedder=self.embedder,
            conversations=ConversationStore(self.catalog.conversations, self.config.pipeline.N4_RECENT_CONV_MAX_PAIRS,
                                            self.feedback.record_answer),
            llm=context.agents.client,
            retriever=Retriever(self.searcher.search, lambda query: self.embedder().embed_queries([query])[0],
                                self.config.answer, self.config.limits.max_query_chars),
            cache=self.retrieval_cache, cross_encoder=lambda: self.reranker()[0])
        with self._embedder_lock:
            self._answer_service = self._answer_service or service
            return self._answer_service


def _found(document_id: str, record: DocumentRecord | None) -> DocumentRecord:
    if record is None:
        raise DocumentNotFoundError(f"no document with id {document_id!r}")
    return record
