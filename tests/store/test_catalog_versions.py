"""The catalog's versions and read consistency (``Versions``, ``ReadConsistency``) on every catalog backend
(the ``catalog`` fixture: SQLite and PostgreSQL): generations are never reused, a snapshot is derived from
committed state and write intents, reads in one transaction see one state, and readers of other processes
hold back deletions (docs/consistency.md)."""

from __future__ import annotations

from support.backend_fixtures import document_version

from ragstream.store.base import Snapshot
from ragstream.store.catalog_base import Catalog


def test_snapshot_follows_intents_and_switches(catalog: Catalog):
    versions, documents, reads = catalog.versions, catalog.documents, catalog.reads
    assert reads.snapshot() == Snapshot(sequence=0, max_generation=0, uncommitted=frozenset())

    [first], intents = versions.begin_versions([("a", None)])
    assert reads.snapshot() == Snapshot(sequence=0, max_generation=first, uncommitted=frozenset({first}))
    sequence = documents.commit_documents([document_version("a", first)])
    assert reads.snapshot() == Snapshot(sequence=sequence, max_generation=first, uncommitted=frozenset())
    versions.clear_intents(intents)

    [second], intents = versions.begin_versions([("a", first)])
    assert reads.snapshot().uncommitted == {second}
    assert versions.intents() == [(intents[0], "a", second, first)]
    sequence = documents.commit_documents([document_version("a", second)])
    assert reads.snapshot() == Snapshot(sequence=sequence, max_generation=second, uncommitted=frozenset({first}))
    versions.clear_intents(intents)
    assert reads.snapshot().uncommitted == frozenset()

    [intent] = versions.add_intents([("a", None, second)])
    sequence = documents.remove_document("a")
    assert reads.snapshot() == Snapshot(sequence=sequence, max_generation=second, uncommitted=frozenset({second}))
    versions.clear_intents([intent])
    assert versions.intents() == []


def test_generations_are_never_reused(catalog: Catalog):
    versions = catalog.versions
    generations, intents = versions.begin_versions([("a", None), ("b", None), ("c", 7)])
    assert generations == [1, 2, 3] and len(set(intents)) == 3
    assert versions.intents() == [(intents[0], "a", 1, None), (intents[1], "b", 2, None), (intents[2], "c", 3, 7)]
    versions.clear_intents(intents[:2])
    assert [intent[0] for intent in versions.intents()] == intents[2:]
    versions.raise_generation(7)
    versions.raise_generation(3)  # never down
    assert catalog.reads.snapshot().max_generation == 7 and versions.begin_versions([("a", None)])[0] == [8]


def test_a_read_transaction_reads_one_state_and_nests(catalog: Catalog):
    generations = catalog.versions.begin_versions([("a", None), ("b", None)])[0]
    catalog.documents.commit_documents([document_version("a", generations[0]), document_version("b", generations[1])])
    with catalog.reads.read_transaction():
        assert catalog.reads.snapshot().max_generation == max(generations)
        with catalog.reads.read_transaction():
            assert catalog.documents.get("b") is not None
        assert catalog.documents.page(0, 10).total == 2


def test_readers_registered_for_other_processes(catalog: Catalog):
    reads = catalog.reads
    reader = reads.open_reader()
    if reader is None:  # a catalog one process holds: the process's own snapshots are enough
        assert reads.oldest_reader() == float("inf")
        return
    sequence = reads.snapshot().sequence
    assert reads.oldest_reader() == sequence
    catalog.documents.commit_documents([document_version("r", catalog.versions.begin_versions([("r", None)])[0][0])])
    later = reads.open_reader()
    assert later is not None and reads.oldest_reader() == sequence  # the oldest reader holds the horizon
    reads.close_reader(reader)
    assert reads.oldest_reader() == sequence + 1
    reads.close_reader(later)
    assert reads.oldest_reader() == float("inf")
