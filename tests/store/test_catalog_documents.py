"""The catalog's document registry (``DocumentRegistry``) on every catalog backend (the ``catalog`` fixture:
SQLite and PostgreSQL): live records and their stored text, checksums, per-user visibility, pages, first
ingest times, roots, and the atomic rename (docs/consistency.md)."""

from __future__ import annotations

from support.backend_fixtures import document_version

from ragstream.store.catalog_base import SORT_COLUMNS, Catalog


def _commit(catalog: Catalog, *ids: str, **fields) -> list[int]:
    """Commit a new version of each of ``ids`` through the write protocol; their generations."""
    generations, intents = catalog.versions.begin_versions([(document_id, None) for document_id in ids])
    catalog.documents.commit_documents([document_version(document_id, generation, **fields)
                                        for document_id, generation in zip(ids, generations, strict=True)])
    catalog.versions.clear_intents(intents)
    return generations


def test_live_records_and_their_stored_text(catalog: Catalog):
    documents = catalog.documents
    generations = _commit(catalog, "b", "a", checksum="same")
    assert [r.document_id for r in documents.list()] == ["a", "b"]
    record = documents.get("a")
    assert record is not None and record.generation == generations[1] and record.metadata == {"team": "red"}
    assert documents.get("missing") is None
    assert [r.document_id for r in documents.find_by_checksum("same")] == ["a", "b"]
    assert documents.find_by_checksum("other") == []
    assert documents.live_generations() == {"b": generations[0], "a": generations[1]}
    stored = documents.stored_document("a")
    assert stored is not None and stored.pages[0].text == "x" and stored.pages[0].number == 1
    assert stored.metadata == {"team": "red"} and documents.stored_document("missing") is None


def test_each_switch_is_one_commit_sequence(catalog: Catalog):
    documents = catalog.documents
    [first] = _commit(catalog, "a")
    before = catalog.reads.snapshot().sequence
    again, _ = catalog.versions.begin_versions([("a", first), ("b", None)])
    assert documents.commit_documents([document_version("a", again[0]), document_version("b", again[1])]) == before + 1
    assert documents.live_generations() == {"a": again[0], "b": again[1]}
    assert documents.remove_document("b") == before + 2 and documents.get("b") is None
    assert documents.remove_document("never-there") == before + 3  # a delete is a switch, found or not


def test_a_document_keeps_its_first_ingest_time(catalog: Catalog):
    documents = catalog.documents
    _commit(catalog, "a", ingested_at="2026-01-01T00:00:00+00:00")
    _commit(catalog, "a", ingested_at="2026-02-01T00:00:00+00:00")
    record = documents.get("a")
    assert record is not None
    assert (record.first_ingested_at, record.ingested_at) == ("2026-01-01T00:00:00+00:00", "2026-02-01T00:00:00+00:00")
    _commit(catalog, "a", ingested_at="2026-03-01T00:00:00+00:00", first_ingested_at="2025-06-01T00:00:00+00:00")
    assert documents.get("a").first_ingested_at == "2025-06-01T00:00:00+00:00"  # type: ignore[union-attr]  # a copy's


def test_each_user_sees_their_own_and_the_shared_documents(catalog: Catalog):
    documents = catalog.documents
    for document_id, owner in (("a", "alice"), ("b", "bob"), ("s", None)):
        _commit(catalog, document_id, checksum="same", owner=owner)
    assert {r.document_id for r in documents.list()} == {"a", "b", "s"}
    assert {r.document_id for r in documents.list("alice")} == {"a", "s"}
    assert {r.document_id for r in documents.find_by_checksum("same", "bob")} == {"b", "s"}
    assert documents.get("a", "bob") is None and documents.get("a", "alice") is not None
    assert documents.get("a").owner == "alice" and documents.get("s").owner is None  # type: ignore[union-attr]
    assert documents.stored_document("b").owner == "bob"  # type: ignore[union-attr]
    page = documents.page(0, 10, sort="title", descending=True, user="alice")
    assert [r.document_id for r in page.records] == ["s", "a"] and page.total == 2
    assert documents.page(0, 10, query="B", user="bob").total == 1


def test_pages_sort_filter_and_count(catalog: Catalog):
    documents = catalog.documents
    ids = ["Beta", "alpha", "gamma_1", "100%", "delta"]
    _commit(catalog, *ids)
    for sort in SORT_COLUMNS:
        for descending in (False, True):
            page = documents.page(0, 10, sort=sort, descending=descending)
            assert page.total == len(ids) and sorted(r.document_id for r in page.records) == sorted(ids)
    titles = [r.title for r in documents.page(0, 10, sort="title").records]
    assert titles == sorted(ids, key=str.casefold)  # case-insensitive
    assert [r.title for r in documents.page(1, 2, sort="title", descending=True).records] == ["delta", "Beta"]
    assert documents.page(5, 10).records == [] and documents.page(5, 10).total == 5
    assert [r.document_id for r in documents.page(0, 10, query="ALPHA").records] == ["alpha"]
    assert [r.document_id for r in documents.page(0, 10, query="a_1").records] == ["gamma_1"]  # wildcards literal
    assert [r.document_id for r in documents.page(0, 10, query="0%").records] == ["100%"]
    assert documents.page(0, 10, query="a%1").total == 0
    assert documents.page(0, 10, sort="nonsense").total == 5  # an unknown key sorts by source


def test_documents_belong_to_roots_and_a_rename_is_one_switch(catalog: Catalog):
    documents = catalog.documents
    generations, intents = catalog.versions.begin_versions([("a", None), ("b", None), ("c", None)])
    documents.commit_documents([document_version("a", generations[0], root="/docs"),
                                document_version("b", generations[1], root="/docs"),
                                document_version("c", generations[2])])
    catalog.versions.clear_intents(intents)
    assert [record.document_id for record in documents.documents_in_root("/docs")] == ["a", "b"]
    assert documents.get("a").root == "/docs" and documents.get("c").root is None  # type: ignore[union-attr]
    stored = documents.stored_document("a")
    assert stored is not None and stored.root == "/docs"

    # a version that names no root keeps the document's; one that names one moves it
    [again], _ = catalog.versions.begin_versions([("a", generations[0])])
    documents.commit_documents([document_version("a", again)])
    assert documents.get("a").root == "/docs"  # type: ignore[union-attr]
    documents.set_root(["c"], "/docs")
    assert [record.document_id for record in documents.documents_in_root("/docs")] == ["a", "b", "c"]
    assert documents.documents_in_root("/elsewhere") == []

    # a rename: the new id comes and the old one goes in one switch (one commit sequence)
    [moved], _ = catalog.versions.begin_versions([("b2", None)])
    before = catalog.reads.snapshot().sequence
    sequence = documents.commit_documents([document_version("b2", moved, root="/docs")], removed=["b"])
    assert sequence == before + 1
    assert documents.get("b") is None and documents.get("b2").generation == moved  # type: ignore[union-attr]
    assert [record.document_id for record in documents.documents_in_root("/docs")] == ["a", "b2", "c"]


def test_unrooted_shared_documents_under_a_folder(catalog: Catalog):
    documents = catalog.documents
    generations, intents = catalog.versions.begin_versions(
        [(source, None) for source in ("/docs", "/docs/a.md", "/docs/sub/b.md", "/docsx/c.md", "/docs/mine.md",
                                       "/do%s/_.md", "/docs/rooted.md")])
    documents.commit_documents([
        document_version("/docs", generations[0]),
        document_version("/docs/a.md", generations[1]),
        document_version("/docs/sub/b.md", generations[2]),
        document_version("/docsx/c.md", generations[3]),  # a sibling whose name starts the same
        document_version("/docs/mine.md", generations[4], owner="alice"),  # a user's: never a sync's
        document_version("/do%s/_.md", generations[5]),  # wildcards of LIKE are plain characters here
        document_version("/docs/rooted.md", generations[6], root="/docs")])  # a root's already
    catalog.versions.clear_intents(intents)
    under = documents.unrooted_documents_under
    assert [r.source for r in under("/docs")] == ["/docs", "/docs/a.md", "/docs/sub/b.md"]
    assert [r.source for r in under("/docs/")] == ["/docs/a.md", "/docs/sub/b.md"]
    assert [r.source for r in under("/do%s")] == ["/do%s/_.md"]
    assert under("/do") == []
    documents.set_root(["/docs/a.md"], "/docs")
    assert [r.source for r in under("/docs")] == ["/docs", "/docs/sub/b.md"]
