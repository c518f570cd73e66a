"""The catalog's collections (``CollectionRegistry``) on every catalog backend (the ``catalog`` fixture: SQLite and
PostgreSQL): unique names, access stored as given, many-to-many membership that never leaves a document in no
collection, the default collection, the pending payload marks, and the document reads scoped to collections."""

from __future__ import annotations

from pathlib import Path

import pytest
from support.backend_fixtures import document_version

from ragstream.config import StoreConfig
from ragstream.errors import CollectionExistsError, CollectionNotEmptyError, CollectionNotFoundError, InvalidCollectionError
from ragstream.models import DEFAULT_COLLECTION_ID, CollectionRecord, name_key
from ragstream.store.catalog_base import Catalog
from ragstream.store.collections_sql import TABLE as COLLECTIONS_TABLE
from ragstream.store.factory import postgres_catalog, sqlite_catalog


def _commit(catalog: Catalog, *ids: str, **fields) -> list[int]:
    generations, intents = catalog.versions.begin_versions([(document_id, None) for document_id in ids])
    catalog.documents.commit_documents([document_version(document_id, generation, **fields)
                                        for document_id, generation in zip(ids, generations, strict=True)])
    catalog.versions.clear_intents(intents)
    return generations


def _collection(collection_id: str, name: str, **fields) -> CollectionRecord:
    return CollectionRecord(collection_id=collection_id, name=name, created_at="2026-01-01T00:00:00+00:00", **fields)


def test_a_new_catalog_has_the_default_collection_readable_by_all(catalog: Catalog):
    [default] = catalog.collections.list()
    assert (default.collection_id, default.name, default.access, default.documents) == (
        DEFAULT_COLLECTION_ID, "default", "all", 0)
    assert default.readable_by("anyone") and default.editable_by("anyone") and not default.managed_by("anyone")


def test_collections_are_created_found_changed_and_deleted(catalog: Catalog):
    collections = catalog.collections
    hr = _collection("c1", "hr", description="the handbook", instructions="Quote the handbook.", owner="ann",
                     access="readers", readers=["bob", "bob"], editors=["cy"])
    collections.create(hr)
    [stored] = collections.by_key("hr")
    assert stored == collections.get("c1")
    assert (stored.description, stored.instructions, stored.owner, stored.access) == (
        "the handbook", "Quote the handbook.", "ann", "readers")
    assert (stored.readers, stored.editors) == (["bob"], ["cy"])
    assert stored.readable_by("bob") and not stored.editable_by("bob") and stored.editable_by("cy")
    assert not stored.readable_by("dan") and stored.readable_by(None) and stored.readable_by("dan", admin=True)
    with pytest.raises(CollectionExistsError):  # names are unique per owner
        collections.create(_collection("c2", "hr", owner="ann"))
    collections.create(_collection("c2", "minutes", owner="ann"))
    with pytest.raises(CollectionExistsError):
        collections.update(stored.renamed("minutes"))
    collections.update(stored.renamed("handbook").model_copy(update={"access": "all", "readers": []}))
    assert collections.by_key("hr") == []
    renamed = collections.get("c1")
    assert renamed is not None and (renamed.name, renamed.access, renamed.readers) == ("handbook", "all", [])
    assert [c.name for c in collections.list()] == ["default", "handbook", "minutes"]
    collections.delete("c2")
    assert collections.get("c2") is None and collections.by_key("minutes") == []


def test_names_are_unique_per_owner_by_their_key(catalog: Catalog):
    """Two owners may each have ``specs``; one owner (or no owner) only one name of each key (NFKC, case folded)."""
    collections = catalog.collections
    collections.create(_collection("c1", "specs", owner="alice"))
    collections.create(_collection("c2", "specs", owner="bob"))
    collections.create(_collection("c3", "Specs"))  # no owner: the CLI's
    for taken in (_collection("c4", "SPECS", owner="alice"), _collection("c4", "specs"),
                  _collection("c4", "\uff33pecs", owner="bob")):  # a fullwidth S folds to "specs" too
        with pytest.raises(CollectionExistsError):
            collections.create(taken)
    assert sorted((c.collection_id, c.name_key, c.qualified_name) for c in collections.by_key("specs")) == [
        ("c1", "specs", "alice:specs"), ("c2", "specs", "bob:specs"), ("c3", "specs", "Specs")]
    collections.create(_collection("c4", "notes", owner="alice"))
    with pytest.raises(CollectionExistsError):  # a rename into a key its owner has
        collections.update(collections.get("c4").model_copy(update={"name": "Specs", "name_key": "specs"}))
    assert collections.get("c4").name == "notes"

def test_documents_join_the_collections_they_name_or_the_default_one(catalog: Catalog):
    collections = catalog.collections
    collections.create(_collection("c1", "hr"))
    _commit(catalog, "a", "b", collections=("c1",))
    _commit(catalog, "c")
    assert collections.memberships(["a", "b", "c", "missing"]) == {"a": ("c1",), "b": ("c1",), "c": (DEFAULT_COLLECTION_ID,)}
    record = catalog.documents.get("a")
    assert record is not None and record.collections == ["c1"]
    _commit(catalog, "a")  # a new version naming no collection keeps the ones it has
    assert collections.memberships(["a"]) == {"a": ("c1",)}
    assert collections.document_ids("c1") == ["a", "b"]
    assert [c.documents for c in collections.list()] == [1, 2]  # default, hr


def test_membership_changes_are_many_to_many_and_marked_pending(catalog: Catalog):
    collections = catalog.collections
    collections.create(_collection("c1", "hr"))
    collections.create(_collection("c2", "minutes"))
    _commit(catalog, "a", "b", collections=("c1",))
    assert collections.add_documents("c2", ["a", "missing"]) == ["a"]
    assert collections.add_documents("c2", ["a"]) == []  # already there
    assert collections.memberships(["a"]) == {"a": ("c1", "c2")}
    assert collections.pending() == ["a"]
    collections.clear_pending(["a"])
    assert collections.pending() == []
    assert collections.remove_documents("c1", ["a"]) == ["a"]
    assert collections.memberships(["a", "b"]) == {"a": ("c2",), "b": ("c1",)}
    with pytest.raises(InvalidCollectionError, match="no collection"):
        collections.remove_documents("c2", ["a"])  # its last one: nothing changes
    assert collections.memberships(["a"]) == {"a": ("c2",)} and collections.pending() == ["a"]
    collections.add_documents("c2", ["b"])
    assert collections.document_ids("c2") == ["a", "b"]
    assert collections.document_ids("c2", only_here=True) == ["a"]
    with pytest.raises(CollectionNotEmptyError, match="holds documents"):
        collections.delete("c2")


def test_a_version_naming_a_deleted_collection_is_not_committed(catalog: Catalog):
    """An ingest into a collection deleted meanwhile: its commit fails whole (no document, no membership)."""
    collections = catalog.collections
    collections.create(_collection("c1", "hr"))
    collections.delete("c1")
    sequence = catalog.documents.commit_documents([document_version("keep", 1)])
    with pytest.raises(CollectionNotFoundError, match="deleted"):
        catalog.documents.commit_documents([document_version("a", 1), document_version("b", 1, collections=("c1",))])
    assert catalog.documents.get("a") is None and catalog.documents.get("b") is None
    assert collections.memberships(["a", "b"]) == {}
    assert catalog.documents.commit_documents([document_version("a", 1)]) == sequence + 1  # the failed one took none


def test_deleting_a_document_drops_its_memberships(catalog: Catalog):
    collections = catalog.collections
    collections.create(_collection("c1", "hr"))
    _commit(catalog, "a", "b", collections=("c1",))
    catalog.documents.remove_document("a")
    catalog.documents.commit_documents([], removed=["b"])
    assert collections.document_ids("c1") == [] and collections.memberships(["a", "b"]) == {}
    collections.delete("c1")


def test_document_reads_are_scoped_to_collections(catalog: Catalog):
    collections = catalog.collections
    collections.create(_collection("c1", "hr"))
    collections.create(_collection("c2", "minutes"))
    _commit(catalog, "a", checksum="same", collections=("c1",))
    _commit(catalog, "b", checksum="same", collections=("c2",))
    _commit(catalog, "c", checksum="same", collections=("c1",), owner="ann")
    documents = catalog.documents
    assert [r.document_id for r in documents.list(collections=["c1"])] == ["a", "c"]
    assert [r.document_id for r in documents.list("bob", collections=["c1"])] == ["a"]
    assert [r.document_id for r in documents.list(collections=["c1", "c2"])] == ["a", "b", "c"]
    assert documents.list(collections=[]) == []
    assert documents.get("b", collections=["c1"]) is None and documents.get("b", collections=["c2"]) is not None
    assert [r.document_id for r in documents.find_by_checksum("same", "bob", collections=["c2"])] == ["b"]
    page = documents.page(0, 10, user="ann", collections=["c1"])
    assert (page.total, [r.document_id for r in page.records]) == (2, ["a", "c"])
    assert [c.documents for c in collections.list("bob")] == [0, 1, 1]  # ann's own document is not counted for bob


def test_a_synced_root_remembers_its_collection(catalog: Catalog):
    collections = catalog.collections
    collections.create(_collection("c1", "hr"))
    assert collections.root_collection("/docs") is None
    collections.set_root_collection("/docs", "c1")
    assert collections.root_collection("/docs") == "c1"
    collections.set_root_collection("/docs", None)
    assert collections.root_collection("/docs") is None
    collections.set_root_collection("/docs", "c1")
    collections.delete("c1")  # a deleted collection is forgotten by its roots
    assert collections.root_collection("/docs") is None


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_a_catalog_from_before_collections_puts_every_document_in_the_default_one(backend: str, tmp_path: Path,
                                                                                   request: pytest.FixtureRequest):
    def reopen() -> Catalog:
        if backend == "postgres":
            return postgres_catalog(StoreConfig(backend="postgres", url=request.getfixturevalue("postgres_url")))
        return sqlite_catalog(tmp_path / "catalog.sqlite3")

    catalog = reopen()
    _commit(catalog, "a", "b")
    tables = ("collections", "collection_documents", "collection_payloads", "root_collections")
    if backend == "postgres":  # the tables as a database from before collections has them: none
        with catalog.connection.db.write() as conn:  # type: ignore[attr-defined]
            for table in tables:
                conn.execute(f"DROP TABLE {table}")
    else:
        with catalog.connection.transaction() as db:  # type: ignore[attr-defined]
            for table in tables:
                db.execute(f"DROP TABLE {table}")
    catalog.close()
    upgraded = reopen()
    try:
        assert upgraded.collections.memberships(["a", "b"]) == {"a": (DEFAULT_COLLECTION_ID,), "b": (DEFAULT_COLLECTION_ID,)}
        assert [(c.name, c.documents) for c in upgraded.collections.list()] == [("default", 2)]
        assert upgraded.collections.pending() == []  # nothing to rewrite: the stores put old points in it themselves
    finally:
        upgraded.close()


_OLD_COLLECTIONS = (COLLECTIONS_TABLE.format(table="collections").replace("name TEXT NOT NULL,", "name TEXT NOT NULL UNIQUE,")
                    .replace(",\n    name_key TEXT NOT NULL", ""))
"""The collections table as catalogs before name keys have it: names unique as written (``Specs`` beside ``specs``)."""


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_a_catalog_with_names_that_fold_alike_migrates_to_name_keys(backend: str, tmp_path: Path,
                                                                    request: pytest.FixtureRequest):
    """Names made under the old rules that now share a key (one owner's ``Specs`` and ``specs``): the catalog opens,
    the older keeps the plain key, the later one gets ``~<id>`` and stays reachable by it; memberships stay."""
    def reopen() -> Catalog:
        if backend == "postgres":
            return postgres_catalog(StoreConfig(backend="postgres", url=request.getfixturevalue("postgres_url")))
        return sqlite_catalog(tmp_path / "catalog.sqlite3")

    catalog = reopen()
    _commit(catalog, "a")
    rows = [("default", "default", None, ""), ("c2", "specs", "ann", "2026-01-02T00:00:00+00:00"),
            ("c1", "Specs", "ann", "2026-01-01T00:00:00+00:00"), ("c3", "SPECS", None, "2026-01-01T00:00:00+00:00"),
            ("c4", "notes", "bob", "2026-01-01T00:00:00+00:00")]
    insert = "INSERT INTO collections (collection_id, name, owner, access, created_at) VALUES ({0}, {0}, {0}, 'all', {0})"
    if backend == "postgres":
        with catalog.connection.db.write() as conn:  # type: ignore[attr-defined]
            conn.execute("DROP TABLE collections")
            conn.execute(_OLD_COLLECTIONS)
            for row in rows:
                conn.execute(insert.format("%s"), row)
            conn.execute("INSERT INTO collection_documents (collection_id, document_id) VALUES ('c2', 'a')")
    else:
        with catalog.connection.transaction() as db:  # type: ignore[attr-defined]
            db.execute("DROP TABLE collections")
            db.execute(_OLD_COLLECTIONS)
            db.executemany(insert.format("?"), rows)
            db.execute("INSERT INTO collection_documents (collection_id, document_id) VALUES ('c2', 'a')")
    catalog.close()
    upgraded = reopen()
    try:
        keys = {c.collection_id: (c.name, c.name_key, c.qualified_name) for c in upgraded.collections.list()}
        assert keys == {"default": ("default", "default", "default"), "c1": ("Specs", "specs", "ann:Specs"),
                        "c2": ("specs", "specs~c2", "ann:specs~c2"), "c3": ("SPECS", "specs", "SPECS"),
                        "c4": ("notes", "notes", "bob:notes")}
        assert [c.collection_id for c in upgraded.collections.by_key(name_key("specs~c2"))] == ["c2"]
        assert upgraded.collections.memberships(["a"]) == {"a": ("c2", DEFAULT_COLLECTION_ID)}
        with pytest.raises(CollectionExistsError):  # the new unique index holds
            upgraded.collections.create(_collection("c5", "sPeCs", owner="ann"))
        upgraded.collections.create(_collection("c5", "specs", owner="cy"))
    finally:
        upgraded.close()
    again = reopen()  # a second open changes nothing
    try:
        assert {c.collection_id: c.name_key for c in again.collections.list()}["c2"] == "specs~c2"
    finally:
        again.close()
