"""The catalog's registry of synced roots (``SyncRoots``) on every catalog backend (the ``catalog`` fixture:
SQLite and PostgreSQL): each root's document count, last sync and watcher lease."""

from __future__ import annotations

from support.backend_fixtures import document_version

from ragstream.store.catalog_base import Catalog


def test_roots_registry(catalog: Catalog):
    roots = catalog.roots
    generations, _ = catalog.versions.begin_versions([("a", None), ("b", None), ("c", None)])
    catalog.documents.commit_documents([document_version(document_id, generation, root="/docs")
                                        for document_id, generation in zip("abc", generations, strict=True)])
    assert roots.roots() == []  # documents name a root; a sync registers it
    roots.record_sync("/docs", "2026-01-01T00:00:00+00:00", '{"added": 3}')
    roots.record_sync("/other", "2026-01-02T00:00:00+00:00", "{}")
    roots.watch_roots(["/docs"], 123.5)
    first, second = roots.roots()
    assert (first.root, first.documents, first.last_sync_at, first.last_summary, first.watched_until) == (
        "/docs", 3, "2026-01-01T00:00:00+00:00", '{"added": 3}', 123.5)
    assert (second.root, second.documents, second.watched_until) == ("/other", 0, None)
    roots.record_sync("/docs", "2026-01-03T00:00:00+00:00", '{"removed": 1}')
    roots.watch_roots(["/docs"], None)
    assert (roots.roots()[0].last_summary, roots.roots()[0].watched_until) == ('{"removed": 1}', None)
    roots.watch_roots(["/never-synced"], 9.0)  # only registered roots hold a lease
    roots.forget_root("/other")
    assert [root.root for root in roots.roots()] == ["/docs"]
