"""The facade's collections (docs/collections.md): :class:`Ragstream` takes these methods from
:class:`CollectionsFacade`, which keeps them out of ``api.py``. Each checks access for ``user`` (None: the CLI
or a script, which may do anything; ``admin``: an admin key, which manages every collection)."""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from ragstream.collection_service import CollectionLabels, CollectionService
from ragstream.models import Chunk, CollectionRecord, DocumentRecord, LazyScope, ResolvedScope, Scope, SearchResult

if TYPE_CHECKING:
    from ragstream.answer.models import Answer, StreamEvent
    from ragstream.feedback import AnswerFeedback
    from ragstream.pipeline.super_prompt import SuperPrompt


class CollectionsFacade:
    """Collections: create, list, show, edit and delete them; put documents in them and take them out."""

    collection_service: CollectionService
    feedback: AnswerFeedback

    def create_collection(self, name: str, *, description: str = "", instructions: str = "", access: str = "private",
                          readers: Sequence[str] = (), editors: Sequence[str] = (),
                          user: str | None = None, admin: bool = False) -> CollectionRecord:
        """A new collection owned by ``user``: access ``private`` (its owner and editors), ``readers`` (also the
        listed readers) or ``all`` (an admin or the CLI only, unless ``collections.users_may_share_with_all``);
        ``instructions`` reach the answering model for questions scoped to it. Raises CollectionExistsError for a
        name taken for ``user``, InvalidCollectionError for a bad name or list, PermissionDeniedError for ``all``."""
        return self.collection_service.create(name, description=description, instructions=instructions,
                                              access=access, readers=readers, editors=editors, user=user, admin=admin)

    def collections(self, *, user: str | None = None, admin: bool = False) -> list[CollectionRecord]:
        """The collections ``user`` may read, by name, with the count of their documents ``user`` may see."""
        return self.collection_service.readable(user, admin)

    def collection_references(self, *, user: str | None = None, admin: bool = False) -> list[str]:
        """For each collection ``user`` may read, a name that resolves to it for ``user`` (bare when that is
        unambiguous, else ``OWNER:NAME``)."""
        return self.collection_service.references(user, admin)

    def collection(self, name: str, *, user: str | None = None, admin: bool = False) -> CollectionRecord:
        """One collection ``user`` may read; CollectionNotFoundError for an unknown or unreadable one."""
        return self.collection_service.get(name, user, admin)

    def edit_collection(self, name: str, *, new_name: str | None = None, description: str | None = None,
                        instructions: str | None = None, access: str | None = None,
                        readers: Sequence[str] | None = None, editors: Sequence[str] | None = None,
                        user: str | None = None, admin: bool = False) -> CollectionRecord:
        """Change what is given (its owner, an admin or the CLI only: PermissionDeniedError otherwise)."""
        return self.collection_service.edit(name, new_name=new_name, description=description, instructions=instructions,
                                            access=access, readers=readers, editors=editors, user=user, admin=admin)

    def delete_collection(self, name: str, *, delete_documents: bool = False, user: str | None = None,
                          admin: bool = False) -> list[DocumentRecord]:
        """Delete a collection; CollectionNotEmptyError while it holds documents unless ``delete_documents``
        (which deletes those in no other collection). The documents deleted."""
        return self.collection_service.delete(name, delete_documents=delete_documents, user=user, admin=admin)

    def add_to_collection(self, name: str, document_ids: Sequence[str], *, user: str | None = None,
                          admin: bool = False) -> list[str]:
        """Put documents in a collection without re-embedding them; the ids newly added."""
        return self.collection_service.add_documents(name, document_ids, user=user, admin=admin)

    def remove_from_collection(self, name: str, document_ids: Sequence[str], *, user: str | None = None,
                               admin: bool = False) -> list[str]:
        """Take documents out of a collection without re-embedding them (never out of their last one)."""
        return self.collection_service.remove_documents(name, document_ids, user=user, admin=admin)

    def collection_for_writing(self, name: str | None, *, user: str | None = None, admin: bool = False) -> str | None:
        """The id of the collection ``name`` that ``user`` may put documents in (None for no name);
        CollectionNotFoundError when ``user`` may not read it, PermissionDeniedError when ``user`` only reads it."""
        return self.collection_service.for_writing(name, user, admin)

    def may_change_document(self, document_id: str, *, user: str | None = None, admin: bool = False) -> bool:
        """Whether ``user`` may delete or re-ingest a document: their own upload, one uploaded into a collection they
        may edit (its home), and a shared one only as an admin; which collections it sits in now grants nothing."""
        return self.collection_service.may_change(document_id, user, admin)

    def collect_roots(self, paths: Sequence[str | Path], collection: str | None) -> None:
        """With ``collection`` (a name): the synced or watched roots of ``paths`` remember it; the documents they
        hold join it now, and those their syncs and watchers write later join it as they are written."""
        self.collection_service.remember_roots(paths, collection)

    def with_collection_names(self, records: Sequence[DocumentRecord], *, user: str | None = None,
                              admin: bool = False) -> list[DocumentRecord]:
        """``records`` as a reader sees them: ``collections`` the names of those ``user`` may read (ids in the
        catalog), one catalog read for them all: how HTTP and the CLI show a document's collections."""
        return self.collection_service.named(records, user, admin)

    def chunks_with_collection_names(self, chunks: Sequence[Chunk], *, user: str | None = None,
                                     admin: bool = False) -> list[Chunk]:
        """``chunks`` with their metadata's ``collections`` the names of those ``user`` may read, as
        :meth:`with_collection_names` shows a record's."""
        return self.collection_service.named_chunks(chunks, user, admin)

    def search_with_collection_names(self, result: SearchResult, *, user: str | None = None,
                                     admin: bool = False) -> SearchResult:
        """``result`` with each hit's ``collections`` the names of those ``user`` may read (one catalog read)."""
        chunks = self.chunks_with_collection_names([hit.chunk for hit in result.hits], user=user, admin=admin)
        return result.model_copy(update={"hits": [hit.model_copy(update={"chunk": chunk})
                                                  for hit, chunk in zip(result.hits, chunks, strict=True)]})

    def _resolve(self, scope: Scope) -> ResolvedScope:
        """``scope`` resolved against the catalog (the one place a read's collection names become ids);
        CollectionNotFoundError for a name its reader may not read."""
        return self.collection_service.scope(scope.names(), scope.user, scope.admin)

    def _lazy(self, scope: Scope) -> LazyScope:
        """``scope`` to be resolved when first needed: inside the answer's attempt, where a store down while reading
        the collections is retried and then answered without retrieval."""
        return LazyScope(scope, self._resolve)

    def _scoped_prompt(self, sp: SuperPrompt, scope: Scope) -> ResolvedScope:
        """The resolved scope of a pipeline run (``scope``'s collections, else the names ``sp`` was scoped to), its
        names and instructions put in ``sp``."""
        if scope.collections is None and sp.collections:
            scope = Scope(scope.user, sp.collections, scope.admin)
        resolved = self._resolve(scope)
        if scope.collections is not None:
            sp.collections = list(scope.collections)
        sp.collection_instructions = list(resolved.instructions)
        return resolved

    def _labels(self, scope: LazyScope) -> Callable[[], CollectionLabels]:
        """How to label one answer's documents with the names of their collections, made once when first asked
        (``scope`` is resolved only then, if the answer did not resolve it: only an answer that cites a document
        needs it)."""
        return functools.cache(lambda: self.collection_service.labeller(scope.resolved()))

    def _labelled(self, answer: Answer, scope: LazyScope,
                  labels: Callable[[], CollectionLabels] | None = None) -> Answer:
        """``answer`` with the collection names of each cited document (``scope`` is found only when it cites one)."""
        ids = [c.document_id for c in answer.citations if c.document_id] + [s.document_id for s in answer.sources]
        if not ids:  # nothing to label (an answer without retrieval: the catalog may be down)
            return answer
        labeller = (labels or self._labels(scope))()
        named = labeller(ids)
        message_id = answer.metadata.get("message_id")
        if message_id:  # the collections it drew on, as they are now: its rating counts for them (docs/feedback.md)
            self.feedback.record_collections(str(message_id), labeller.drawn_on(
                [c.document_id for c in answer.citations if c.document_id and c.matched]))
        return answer.model_copy(update={
            "citations": [c.model_copy(update={"collections": named.get(c.document_id or "", [])}) for c in answer.citations],
            "sources": [s.model_copy(update={"collections": named.get(s.document_id, [])}) for s in answer.sources]})

    def _labelled_events(self, events: Iterator[StreamEvent], scope: LazyScope) -> Iterator[StreamEvent]:
        """The stream with the collection names of each cited document on its citation events and the answer
        (the names are read once for the whole answer, not once per citation)."""
        from ragstream.answer.models import CitationEvent, DoneEvent

        labels = self._labels(scope)
        for event in events:
            if isinstance(event, CitationEvent) and event.citation.document_id:
                names = labels()([event.citation.document_id])
                event = event.model_copy(update={"citation": event.citation.model_copy(
                    update={"collections": names[event.citation.document_id]})})
            elif isinstance(event, DoneEvent):
                event = event.model_copy(update={"response": self._labelled(event.response, scope, labels)})
            yield event
