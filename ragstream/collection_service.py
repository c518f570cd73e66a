"""Collections as the facade offers them (docs/collections.md): who may read, change and manage each one,
names to ids, document moves that rewrite the vector store's payloads without re-embedding, and the scope of
one question.

The catalog (:class:`~ragstream.store.catalog_base.CollectionRegistry`) says which documents belong to which
collection; every chunk in the vector store carries its document's collection ids, so a scoped search is one
more match-any filter inside the store (dense and BM25 alike), like the owner filter. A membership change runs
under the ingestor's commit lock: the catalog first (marking the documents pending), then the payloads of every
stored point of those documents, then the pending mark is cleared; :meth:`CollectionService.recover` finishes a
change a crash cut short. An unknown collection and one the caller may not read are the same error
(CollectionNotFoundError), so names do not leak. Names are unique per owner by key (NFKC, case-folded);
:meth:`CollectionService.resolve` turns a name, bare or qualified (``OWNER:NAME``), into one collection.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Callable, Iterable, Sequence
from datetime import UTC, datetime
from pathlib import Path

from ragstream.config import CollectionsConfig
from ragstream.errors import (
    CollectionAmbiguousError,
    CollectionExistsError,
    CollectionNotEmptyError,
    CollectionNotFoundError,
    DocumentNotFoundError,
    InvalidCollectionError,
    PermissionDeniedError,
)
from ragstream.ingestion import Ingestor
from ragstream.models import (
    DEFAULT_COLLECTION_ID,
    QUALIFIER,
    Chunk,
    CollectionAccess,
    CollectionRecord,
    DocumentRecord,
    LoadedDocument,
    ResolvedScope,
    collection_home,
    name_key,
)
from ragstream.store.base import VectorStore
from ragstream.store.catalog_base import Catalog, CollectionRegistry

_NAME = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?")
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
ACCESS_VALUES: tuple[CollectionAccess, ...] = ("private", "readers", "all")


class CollectionService:
    """The collections of one index, with access checked for a ``user`` (None: the CLI or a script, which may do
    anything; ``admin``: an admin key, which manages every collection)."""

    def __init__(self, config: CollectionsConfig, catalog: Catalog, store: VectorStore, ingestor: Ingestor,
                 on_change: Callable[[], None]) -> None:
        self._config = config
        self._catalog = catalog
        self._registry = catalog.collections
        self._store = store
        self._ingestor = ingestor
        self._on_change = on_change

    # -- reads -------------------------------------------------------------------------------

    def readable(self, user: str | None = None, admin: bool = False) -> list[CollectionRecord]:
        """The collections ``user`` may read, by name, each with the count of its documents ``user`` may see (an
        unowned one whose name ``user`` has too is qualified ``:NAME``, the name that resolves to it)."""
        records = [record for record in self._registry.list(user) if record.readable_by(user, admin)]
        own = {record.name_key for record in records if user is not None and record.owner == user}
        return [record.model_copy(update={"qualified_name": QUALIFIER + record.qualified_name})
                if record.owner is None and record.name_key in own else record for record in records]

    def references(self, user: str | None = None, admin: bool = False) -> list[str]:
        """A name for each collection ``user`` may read that resolves to it for ``user``: its bare name when that
        names it alone, else its qualified one (``/v1/models``)."""
        records = self.readable(user, admin)
        by_key: dict[str, list[CollectionRecord]] = {}
        for record in records:
            by_key.setdefault(record.name_key, []).append(record)
        return [record.name if name_key(record.name) == record.name_key
                and _picked(by_key[record.name_key], None, user) == [record] else record.qualified_name
                for record in records]

    def resolve(self, name: str, user: str | None = None, admin: bool = False) -> CollectionRecord:
        """The collection ``name`` means for ``user``. ``OWNER:NAME`` (``:NAME``: the one of no owner) is exact;
        a bare name picks, among those of its key ``user`` may read, ``user``'s own, else the unowned one, else the
        only one: CollectionAmbiguousError (naming only readable ones) when several remain,
        CollectionNotFoundError when none does (an unknown name and an unreadable one alike)."""
        if not isinstance(name, str) or not name:
            raise CollectionNotFoundError(f"no collection named {name!r}")
        owner, qualified, bare = name.rpartition(QUALIFIER)
        readable = [r for r in self._registry.by_key(name_key(bare)) if r.readable_by(user, admin)]
        found = _picked(readable, owner if qualified else None, user)
        if not found:
            raise CollectionNotFoundError(f"no collection named {name!r}")
        if len(found) > 1:
            raise CollectionAmbiguousError(
                f"{name!r} names {len(found)} collections you may read: "
                f"{', '.join(sorted(r.qualified_name for r in found))}; name one of them as OWNER{QUALIFIER}NAME")
        return found[0]

    def get(self, name: str, user: str | None = None, admin: bool = False) -> CollectionRecord:
        """One collection ``user`` may read (:meth:`resolve`); CollectionNotFoundError for an unknown one and an
        unreadable one."""
        record = self.resolve(name, user, admin)
        if user is not None:
            record = record.model_copy(update={"documents": self._catalog.documents.count(
                user, collections=[record.collection_id])})
        return record

    def scope(self, names: Sequence[str] | None, user: str | None = None, admin: bool = False) -> ResolvedScope:
        """What a question of ``user`` may read: the collections ``names`` (each must be readable), or, without
        names, every collection ``user`` may read (no limit for None and admins, as before collections)."""
        if names:
            if len(names) > self._config.max_scope:
                raise InvalidCollectionError(f"a question may be scoped to at most {self._config.max_scope} collections "
                                             "(collections.max_scope)")
            records = list({r.collection_id: r for r in (self.get(name, user, admin) for name in dict.fromkeys(names))}.values())
            instructions = tuple(f"{r.name}: {r.instructions.strip()}" for r in records if r.instructions.strip())
            return ResolvedScope(collections=tuple(r.collection_id for r in records), instructions=instructions,
                                 names=tuple((r.collection_id, r.name) for r in records))
        if user is None or admin:
            return ResolvedScope()
        readable = [record for record in self._registry.list() if record.readable_by(user, admin)]
        return ResolvedScope(collections=tuple(record.collection_id for record in readable),
                             names=tuple((record.collection_id, record.name) for record in readable))

    def labeller(self, scope: ResolvedScope) -> CollectionLabels:
        """The collection names of one answer's documents, within ``scope`` (docs/collections.md)."""
        return CollectionLabels(self._registry, scope)

    def named(self, records: Sequence[DocumentRecord], user: str | None = None,
              admin: bool = False) -> list[DocumentRecord]:
        """``records`` as a reader sees them: ``collections`` the names of those ``user`` may read (one catalog read)."""
        if not records:
            return []
        names = self._reader_names(user, admin)
        return [record.model_copy(update={"collections": _named(record.collections, names)}) for record in records]

    def named_chunks(self, chunks: Sequence[Chunk], user: str | None = None, admin: bool = False) -> list[Chunk]:
        """``chunks`` as a reader sees them: their metadata's ``collections`` the names of those ``user`` may read."""
        if not chunks:
            return []
        names = self._reader_names(user, admin)
        return [chunk.model_copy(update={"metadata": chunk.metadata.model_copy(
            update={"collections": tuple(_named(chunk.metadata.collections, names))})}) for chunk in chunks]

    def _reader_names(self, user: str | None, admin: bool) -> dict[str, str]:
        """id -> name of every collection ``user`` may read."""
        return {r.collection_id: r.name for r in self._registry.list() if r.readable_by(user, admin)}

    # -- collections -------------------------------------------------------------------------

    def create(self, name: str, *, description: str = "", instructions: str = "", access: str = "private",
               readers: Sequence[str] = (), editors: Sequence[str] = (), user: str | None = None,
               admin: bool = False) -> CollectionRecord:
        """A new collection owned by ``user`` (None: by no user; admins and the CLI manage it);
        CollectionExistsError when the name is taken for ``user`` (:meth:`_refuse_taken`), InvalidCollectionError
        for a bad name, access or user list, PermissionDeniedError for access ``all`` from a user who may not."""
        self._check_name(name)
        record = self._checked(CollectionRecord(
            collection_id=uuid.uuid4().hex, name=name, description=description, instructions=instructions, owner=user,
            access=self._access(access, None, user, admin), readers=list(readers), editors=list(editors),
            created_at=datetime.now(UTC).isoformat(timespec="seconds")))
        self._refuse_taken(record, user, admin)
        self._registry.create(record)
        return record

    def edit(self, name: str, *, new_name: str | None = None, description: str | None = None,
             instructions: str | None = None, access: str | None = None, readers: Sequence[str] | None = None,
             editors: Sequence[str] | None = None, user: str | None = None, admin: bool = False) -> CollectionRecord:
        """Change what is given of a collection ``user`` manages (its owner, an admin, the CLI); a reader or an
        editor gets PermissionDeniedError, a user who may not read it CollectionNotFoundError."""
        record = self._managed(name, user, admin)
        if record.collection_id == DEFAULT_COLLECTION_ID and (new_name not in (None, record.name) or access is not None):
            raise InvalidCollectionError("the default collection keeps its name and stays readable by every user")
        changes = {key: value for key, value in (
            ("description", description), ("instructions", instructions),
            ("access", None if access is None else self._access(access, record, user, admin)),
            ("readers", None if readers is None else list(readers)),
            ("editors", None if editors is None else list(editors))) if value is not None}
        changed = self._checked(record.model_copy(update=changes))
        if new_name is not None and new_name != record.name:  # a name kept as it is is not checked again
            self._check_name(new_name)
            changed = changed.renamed(new_name)
            self._refuse_taken(changed, user, admin)
        self._registry.update(changed)
        self._on_change()
        return self._registry.get(changed.collection_id) or changed

    def delete(self, name: str, *, delete_documents: bool = False, user: str | None = None,
               admin: bool = False) -> list[DocumentRecord]:
        """Delete a collection ``user`` manages. While it holds documents: CollectionNotEmptyError, unless
        ``delete_documents``, which deletes those that belong to no other collection and takes the rest out of it.
        The documents deleted."""
        record = self._managed(name, user, admin)
        if record.collection_id == DEFAULT_COLLECTION_ID:
            raise InvalidCollectionError("the default collection cannot be deleted")
        with self._ingestor.commit_lock:  # one step for every writer, in this process and others sharing the index
            members = self._registry.document_ids(record.collection_id)
            if members and not delete_documents:
                raise CollectionNotEmptyError(f"collection {name!r} holds {len(members)} document(s): move them to "
                                              "another collection, or delete it with the documents that are only in it")
            deleted: list[DocumentRecord] = []
            if members:
                only_here = set(self._registry.document_ids(record.collection_id, only_here=True))
                records = [r for r in self._catalog.documents.list(collections=[record.collection_id])
                           if r.document_id in only_here]
                collections = {r.collection_id: r for r in self._registry.list()}
                foreign = [r.document_id for r in records if not self._owns(r, user, admin, collections)]
                if foreign:
                    raise PermissionDeniedError(
                        f"collection {name!r} is the only collection of {len(foreign)} document(s) you may not delete "
                        "(shared ones, or another user's upload): an admin or their owner must move or delete them")
                deleted = self._ingestor.delete_many(records)
                # under the commit lock no ingest commits between these steps: its next commit finds the collection
                # gone (collection_not_found), so a delete does not starve behind a running ingest
                shared = [document_id for document_id in members if document_id not in only_here]
                self._move(lambda: self._registry.remove_documents(record.collection_id, shared))
            self._registry.delete(record.collection_id)
        self._on_change()
        return deleted

    # -- documents ---------------------------------------------------------------------------

    def add_documents(self, name: str, document_ids: Sequence[str], *, user: str | None = None,
                      admin: bool = False) -> list[str]:
        """Put documents in a collection ``user`` may edit, without re-embedding; each must be a document ``user``
        may see and change (in a collection ``user`` may edit). The ids newly added."""
        record = self._editable(name, user, admin)
        self._changeable(document_ids, user, admin)
        return self._move(lambda: self._registry.add_documents(record.collection_id, list(document_ids)))

    def remove_documents(self, name: str, document_ids: Sequence[str], *, user: str | None = None,
                         admin: bool = False) -> list[str]:
        """Take documents out of a collection ``user`` may edit, without re-embedding: its manager may take out any
        of its documents, an editor only those they may change (:meth:`may_change`; PermissionDeniedError otherwise);
        InvalidCollectionError when one would belong to no collection. The ids removed."""
        record = self._editable(name, user, admin)
        # its manager curates what the collection holds; anybody else (an editor, any user in the default collection)
        # takes out only a document they have the right to change, so nobody hides a document from its readers
        self._changeable(document_ids, user, admin, require_edit=False, require_owner=not record.managed_by(user, admin))
        return self._move(lambda: self._registry.remove_documents(record.collection_id, list(document_ids)))

    def include(self, collection_id: str | None, document_ids: Sequence[str]) -> list[str]:
        """Put documents an ingest or sync wrote (or found unchanged) in the collection it named, if not there yet."""
        if collection_id is None or not document_ids:
            return []
        return self._move(lambda: self._registry.add_documents(collection_id, list(document_ids)))

    def for_writing(self, name: str | None, user: str | None = None, admin: bool = False) -> str | None:
        """The id of the collection ``user`` ingests into (None for no name); a reader gets PermissionDeniedError."""
        return None if name is None else self._editable(name, user, admin).collection_id

    def may_change(self, document_id: str, user: str | None, admin: bool = False) -> bool:
        """Whether ``user`` may delete or re-ingest the document (see :meth:`CollectionsFacade.may_change_document`)."""
        if user is None or admin:
            return True
        record = self._catalog.documents.get(document_id, user)
        return record is not None and self._owns(record, user)

    def _owns(self, record: DocumentRecord, user: str | None, admin: bool = False,
              collections: dict[str, CollectionRecord] | None = None) -> bool:
        """Whether ``user`` has the right to change the document ``record`` wherever it is (docs/collections.md):
        a user's own upload is theirs; a document uploaded into a collection belongs to the editors of that
        collection (its home, from its source); a shared one (ingested by the CLI, synced, watched, or uploaded by an
        admin with ``shared``) to admins alone. Which collections it sits in now never grants the right: a user could
        otherwise move a shared document into a collection of theirs and so make it theirs. ``collections`` (id ->
        record, read once for many documents) spares the read of the home."""
        if user is None or admin:
            return True
        if record.owner is not None:
            return record.owner == user
        home_id = collection_home(record)
        home = (None if home_id is None else collections.get(home_id) if collections is not None
                else self._registry.get(home_id))
        return home is not None and home.collection_id != DEFAULT_COLLECTION_ID and home.editable_by(user)

    def remember_roots(self, paths: Sequence[str | Path], collection: str | None) -> None:
        """With a ``collection`` named (a name): each synced or watched root of ``paths`` remembers it, and the
        documents it holds already join it (those a sync writes later join it as they are written)."""
        collection_id = self.for_writing(collection)
        if collection_id is None:
            return
        from ragstream.sync.syncer import resolve_root  # the file parsers load only when a sync runs

        for path in paths:
            root = str(resolve_root(path))
            self._registry.set_root_collection(root, collection_id)
            self.include(collection_id, [r.document_id for r in self._catalog.documents.documents_in_root(root)])

    def joined(self, doc: LoadedDocument, record: DocumentRecord | None) -> LoadedDocument:
        """``doc`` naming every collection its new version belongs to: those it names, those its document is in,
        its synced root's; the default collection when there are none."""
        ids = set(doc.collections) | set(record.collections if record is not None else ())
        root_collection = self._registry.root_collection(doc.root) if doc.root else None
        if root_collection is not None and self._registry.get(root_collection) is not None:
            ids.add(root_collection)
        return doc.model_copy(update={"collections": tuple(sorted(ids or {DEFAULT_COLLECTION_ID}))})

    def recover(self) -> int:
        """Finish membership changes a crash cut short (the payloads of their documents); how many documents."""
        pending = self._registry.pending()
        if pending:
            self._move(lambda: pending)
        return len(pending)

    # -- helpers -----------------------------------------------------------------------------

    def _move(self, change: Callable[[], list[str]]) -> list[str]:
        """Run a membership change of the catalog, then bring the stored payloads of its documents in step."""
        with self._ingestor.commit_lock:
            changed = change()
            if not changed:
                return changed
            members = self._registry.memberships(changed)
            for document_id in changed:
                if document_id in members:  # a document deleted meanwhile has no points left to change
                    self._store.set_collections(document_id, members[document_id])
            self._store.flush()
            self._registry.clear_pending(changed)
        self._on_change()
        return changed

    def _managed(self, name: str, user: str | None, admin: bool) -> CollectionRecord:
        record = self.resolve(name, user, admin)  # its rights only: no count of its documents
        if not record.managed_by(user, admin):
            raise PermissionDeniedError(f"only the owner of collection {name!r} or an admin may change or delete it")
        return record

    def _editable(self, name: str, user: str | None, admin: bool) -> CollectionRecord:
        record = self.resolve(name, user, admin)  # its rights only: no count of its documents
        if not record.editable_by(user, admin):
            raise PermissionDeniedError(f"you may read collection {name!r} but not add or remove its documents")
        return record

    def _changeable(self, document_ids: Sequence[str], user: str | None, admin: bool, *, require_edit: bool = True,
                    require_owner: bool = False) -> None:
        """Each document exists and ``user`` may see it; with ``require_edit``, it is in a collection ``user`` may
        edit or one every user reads (adding it elsewhere must not widen who reads a collection ``user`` only reads);
        with ``require_owner``, ``user`` has the right to change it (:meth:`_owns`). Two reads, however many
        documents: the collections and the documents."""
        if len(document_ids) > self._config.max_scope * self._config.max_users:
            raise InvalidCollectionError("too many documents in one request")
        collections = {r.collection_id: r for r in self._registry.list()}
        editable = {c for c, r in collections.items() if r.editable_by(user, admin) or r.access == "all"}
        documents = self._catalog.documents.get_many(document_ids, user)
        for document_id in document_ids:
            found = documents.get(document_id)
            readable = found is not None and (user is None or admin or any(
                c in collections and collections[c].readable_by(user) for c in found.collections))
            if found is None or not readable:
                raise DocumentNotFoundError(f"no document with id {document_id!r}")
            if require_edit and not set(found.collections) & editable:
                raise PermissionDeniedError(f"document {document_id!r} is only in collections you may read, not change")
            if require_owner and not self._owns(found, user, admin, collections):
                raise PermissionDeniedError(f"document {document_id!r} is not yours to take out of this collection: a "
                                            "shared document only an admin may move, a user's upload only that user")

    def _access(self, access: str, record: CollectionRecord | None, user: str | None, admin: bool) -> CollectionAccess:
        """``access`` checked: one of :data:`ACCESS_VALUES`; ``all`` (for a new collection, or one not shared with
        everyone yet) only for an admin, the CLI, or anyone with ``collections.users_may_share_with_all``."""
        for value in ACCESS_VALUES:
            if access == value:
                if (value == "all" and (record is None or record.access != "all") and user is not None and not admin
                        and not self._config.users_may_share_with_all):
                    raise PermissionDeniedError(
                        "only an admin may share a collection with every user (access 'all'); name its readers "
                        "instead (access 'readers'), or ask an admin (collections.users_may_share_with_all)")
                return value
        raise InvalidCollectionError(f"access must be one of {', '.join(ACCESS_VALUES)}, not {access!r}")

    def _check_name(self, name: str) -> None:
        """A new name (or a rename): InvalidCollectionError unless it is 1 to ``max_name_chars`` letters, digits,
        '.', '_', '-', starting and ending with a letter or digit (existing names are not checked again)."""
        limit = self._config.max_name_chars
        if not isinstance(name, str) or len(name) > limit or not _NAME.fullmatch(name):
            raise InvalidCollectionError(
                f"a collection name is 1 to {limit} letters, digits, '.', '_' or '-', starting and ending with a letter "
                f"or digit (collections.max_name_chars); not {name!r}")

    def _refuse_taken(self, record: CollectionRecord, user: str | None, admin: bool) -> None:
        """CollectionExistsError when ``record``'s name key is the default collection's, or that of another
        collection of its owner or one ``user`` may read. A name only an unreadable collection of another owner has
        is free: refusing it would tell that collection exists (docs/collections.md)."""
        if record.name_key == name_key(DEFAULT_COLLECTION_ID) and record.collection_id != DEFAULT_COLLECTION_ID:
            raise CollectionExistsError(f"{record.name!r} is the default collection's name (names compare case-insensitively)")
        for other in self._registry.by_key(record.name_key):
            if other.collection_id != record.collection_id and (other.owner == record.owner or other.readable_by(user, admin)):
                raise CollectionExistsError(f"collection {other.qualified_name!r} has the name {record.name!r} already "
                                            "(names compare case-insensitively)")

    def _checked(self, record: CollectionRecord) -> CollectionRecord:
        """``record`` with its texts and user lists within the configured bounds; InvalidCollectionError if not."""
        config = self._config
        for label, text, limit in (("description", record.description, config.max_description_chars),
                                   ("instructions", record.instructions, config.max_instructions_chars)):
            if len(text) > limit:
                raise InvalidCollectionError(f"the {label} is {len(text)} characters; the limit is {limit}")
        for label, users in (("readers", record.readers), ("editors", record.editors)):
            if len(users) > config.max_users:
                raise InvalidCollectionError(f"{label} names {len(users)} users; the limit is {config.max_users} "
                                             "(collections.max_users)")
            if any(not isinstance(u, str) or not u.strip() or u != u.strip() or _CONTROL.search(u) for u in users):
                raise InvalidCollectionError(f"{label} holds a blank user id, or one with spaces around it or control "
                                             "characters")
        return record.model_copy(update={"readers": sorted(set(record.readers)), "editors": sorted(set(record.editors))})


def _named(collection_ids: Iterable[str], names: dict[str, str]) -> list[str]:
    """The names of those of ``collection_ids`` in ``names`` (the others: collections the reader may not read)."""
    return sorted(names[c] for c in collection_ids if c in names)


class CollectionLabels:
    """What one answer's documents came from, within its scope: the names of their collections (never one the reader
    may not read: the scope holds only those) and, for its feedback, their ids. The id -> name map is read once (only
    when the scope does not carry it) and each document's memberships once, however many citations name it."""

    def __init__(self, registry: CollectionRegistry, scope: ResolvedScope) -> None:
        self._registry = registry
        self._scope = scope
        self._names: dict[str, str] | None = None
        self._members: dict[str, tuple[str, ...]] = {}

    def __call__(self, document_ids: Iterable[str]) -> dict[str, list[str]]:
        """document_id -> the names of its collections ([] for one in none of the scope's)."""
        names = self._id_names()
        return {document_id: _named(members, names) for document_id, members in self._scoped(document_ids).items()}

    def drawn_on(self, document_ids: Iterable[str]) -> list[str]:
        """The ids of the collections an answer citing ``document_ids`` drew on: those the documents belong to now,
        within the scope (the answer's feedback keeps them, docs/feedback.md)."""
        return sorted({c for members in self._scoped(document_ids).values() for c in members})

    def _scoped(self, document_ids: Iterable[str]) -> dict[str, tuple[str, ...]]:
        """document_id -> the ids of its collections within the scope, each document read once."""
        ids = list(dict.fromkeys(document_ids))
        missing = [document_id for document_id in ids if document_id not in self._members]
        if missing:
            allowed = self._scope.collections
            found = self._registry.memberships(missing)
            for document_id in missing:
                self._members[document_id] = tuple(c for c in found.get(document_id, ())
                                                   if allowed is None or c in allowed)
        return {document_id: self._members[document_id] for document_id in ids}

    def _id_names(self) -> dict[str, str]:
        if self._names is None:
            self._names = (dict(self._scope.names) if self._scope.names is not None
                           else {record.collection_id: record.name for record in self._registry.list()})
        return self._names
def _picked(readable: Sequence[CollectionRecord], owner: str | None, user: str | None) -> list[CollectionRecord]:
    """Of the readable collections of one name key: the one of ``owner`` ('' for none) when a qualified name gave
    it; for a bare name (``owner`` None) ``user``'s own, else the unowned one, else all of them."""
    if owner is not None:
        return [r for r in readable if (r.owner or "") == owner]
    return ([r for r in readable if user is not None and r.owner == user] or [r for r in readable if r.owner is None]
            or list(readable))
