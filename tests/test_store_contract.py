"""The store/catalog contract, on every backend (``backend`` fixture: qdrant_edge, postgres, qdrant on
qdrant-client's local mode, and qdrant on a real server when ``RAGSTREAM_TEST_QDRANT_URL`` is set):
a search returns exactly the points a snapshot sees, filters mean the same everywhere, the catalog
derives the snapshot from committed state, and an interrupted write recovers on reopen
(docs/consistency.md, docs/backends.md)."""

from __future__ import annotations

import threading
from typing import Any, NoReturn

import numpy as np
import pytest
from crash_steps import CRASH_POINTS, install_crash
from hash_embedder import HashEmbedder

from ragstream.models import Chunk, ChunkMetadata, LoadedDocument, Page
from ragstream.store.base import Snapshot, VectorStore
from ragstream.store.catalog_base import DocumentVersion

TEXT = "connection pool timeouts for the client"
ALL = Snapshot(sequence=0, max_generation=1_000, uncommitted=frozenset())


def _chunk(document_id: str, generation: int, text: str | None = None, index: int = 0, **fields: Any) -> Chunk:
    metadata = ChunkMetadata(**{"document_id": document_id, "source": document_id, "title": document_id, "chunk_index": index,
                                "word_count": 6, "has_code": False, "has_equations": False, "checksum": "c",
                                "content_hash": "h", "mime": "text/plain", "created_at": "2026-01-01T00:00:00+00:00",
                                **fields})
    return Chunk(chunk_id=f"00000000-0000-0000-{index:04d}-{generation:012d}", text=text or f"{TEXT} {document_id}",
                 metadata=metadata)


def _generations(hits: list[tuple[Chunk, float]]) -> set[int]:
    return {int(chunk.chunk_id.rsplit("-", 1)[1]) for chunk, _ in hits}


def _write(store: VectorStore, embedder: HashEmbedder, chunks: list[Chunk], generation: int) -> None:
    store.upsert(chunks, embedder.embed_documents([chunk.text for chunk in chunks]), generation)
    store.flush()


def test_searches_return_exactly_what_the_snapshot_sees(opened, hash_embedder: HashEmbedder):
    _, store = opened
    vector = hash_embedder.embed_queries([TEXT])[0]
    for generation, document_id in [(1, "a"), (2, "b"), (3, "a"), (4, "b")]:
        store.upsert([_chunk(document_id, generation)], np.array([vector]), generation)
    store.flush()
    cases = {
        # a replaced (1), b live (2), a's new version (3) committed, b's new version (4) allocated later
        Snapshot(sequence=5, max_generation=3, uncommitted=frozenset({1})): {2, 3},
        # a and b both being rewritten: 3 and 4 not committed yet
        Snapshot(sequence=4, max_generation=4, uncommitted=frozenset({3, 4})): {1, 2},
        Snapshot(sequence=9, max_generation=4, uncommitted=frozenset()): {1, 2, 3, 4},
    }
    for snapshot, visible in cases.items():
        assert _generations(store.search_dense(vector, 10, None, snapshot)) == visible
        assert _generations(store.search_bm25(TEXT, 10, None, snapshot)) == visible
        assert _generations(store.search_dense(vector, 10, {"document_id": "a"}, snapshot)) == visible & {1, 3}
        assert {g for g in (1, 2, 3, 4) if snapshot.visible(g)} == visible


def test_filters_mean_the_same_on_every_backend(opened, hash_embedder: HashEmbedder):
    _, store = opened
    chunks = [
        _chunk("a", 1, index=0, section="Intro", has_code=True, extra={"team": "red", "tags": ["x", "y"], "year": 2024}),
        _chunk("a", 1, index=1, section="Usage", page=2, extra={"team": "blue", "tags": ["y"], "year": 2025}),
        _chunk("b", 2, index=0, section="Intro", header_path="Guide > Intro", extra={"team": "red", "year": 2025}),
    ]
    for generation in (1, 2):
        _write(store, hash_embedder, [c for c in chunks if int(c.chunk_id.rsplit("-", 1)[1]) == generation], generation)
    vector = hash_embedder.embed_queries([TEXT])[0]

    def found(filters: dict[str, Any]) -> set[tuple[str, int]]:
        dense = {(c.metadata.document_id, c.metadata.chunk_index) for c, _ in store.search_dense(vector, 10, filters, ALL)}
        bm25 = {(c.metadata.document_id, c.metadata.chunk_index) for c, _ in store.search_bm25(TEXT, 10, filters, ALL)}
        assert dense == bm25, filters
        assert store.count(filters) == len(dense), filters
        return dense

    assert found({"document_id": "a"}) == {("a", 0), ("a", 1)}
    assert found({"document_id": ["b", "zzz"]}) == {("b", 0)}  # a list is any-of
    assert found({"section": "Intro", "team": "red"}) == {("a", 0), ("b", 0)}  # user metadata under extra
    assert found({"has_code": True}) == {("a", 0)}
    assert found({"has_code": False}) == {("a", 1), ("b", 0)}
    assert found({"tags": "y"}) == {("a", 0), ("a", 1)}  # a list-valued field holds the value
    assert found({"tags": ["x", "nope"]}) == {("a", 0)}
    assert found({"year": 2025}) == {("a", 1), ("b", 0)}
    assert found({"year": "2025"}) == set()  # types are strict, as in Qdrant
    assert found({"page": 2}) == {("a", 1)}
    assert found({"chapter": "Guide"}) == {("b", 0)}
    assert found({"team": []}) == set()
    [(chunk, _)] = store.search_dense(vector, 10, {"has_code": True}, ALL)
    assert chunk == chunks[0]  # stored and read back whole


def test_rankings_are_the_searches_without_their_chunks(opened, hash_embedder: HashEmbedder):
    """rank_dense/rank_bm25 give the same ids, scores and order as the searches, with each chunk's place in
    its document, under the same snapshot and filters; fetch reads the chunks back whole."""
    _, store = opened
    chunks = [_chunk("a", 1, f"{TEXT} part {i} pool", index=i) for i in range(3)] + [_chunk("b", 2, "pool party")]
    for generation in (1, 2):
        _write(store, hash_embedder, [c for c in chunks if int(c.chunk_id.rsplit("-", 1)[1]) == generation], generation)
    vector = hash_embedder.embed_queries([TEXT])[0]
    only_first = Snapshot(sequence=1, max_generation=1, uncommitted=frozenset())
    for snapshot, filters in [(ALL, None), (ALL, {"document_id": "a"}), (only_first, None)]:
        for ranked, searched in [(store.rank_dense(vector, 10, filters, snapshot),
                                  store.search_dense(vector, 10, filters, snapshot)),
                                 (store.rank_bm25("pool party", 10, filters, snapshot),
                                  store.search_bm25("pool party", 10, filters, snapshot))]:
            assert [hit.chunk_id for hit in ranked] == [chunk.chunk_id for chunk, _ in searched]
            assert [hit.score for hit in ranked] == pytest.approx([score for _, score in searched])
            assert [(hit.document_id, hit.chunk_index) for hit in ranked] == \
                [(chunk.metadata.document_id, chunk.metadata.chunk_index) for chunk, _ in searched]
    assert {hit.document_id for hit in store.rank_bm25("pool", 10, None, only_first)} == {"a"}
    assert store.rank_bm25("the of a", 10, None, ALL) == []
    fetched = store.fetch([chunks[3].chunk_id, chunks[1].chunk_id, "00000000-0000-0000-0000-000000009999"])
    assert fetched == {chunks[3].chunk_id: chunks[3], chunks[1].chunk_id: chunks[1]}  # an id no longer stored is left out
    assert store.fetch([]) == {}


def test_bm25_ranks_rare_terms_higher_and_ignores_unknown_words(opened, hash_embedder: HashEmbedder):
    _, store = opened
    texts = ["the pool of connections", "a pool party in summer", "pool pool pool", "zebra crossing near the pool"]
    _write(store, hash_embedder, [_chunk(f"d{i}", i + 1, text) for i, text in enumerate(texts)], 1)
    hits = store.search_bm25("zebra pool", 10, None, ALL)
    assert hits[0][0].text == texts[3]  # the rare term decides
    assert len(hits) == 4 and all(score > 0 for _, score in hits)
    assert [score for _, score in hits] == sorted((score for _, score in hits), reverse=True)
    assert store.search_bm25("the of a", 10, None, ALL) == []  # stopwords only
    assert store.search_bm25("unseenword", 10, None, ALL) == []


def test_versions_are_deleted_whole_and_read_back_in_order(opened, hash_embedder: HashEmbedder):
    _, store = opened
    _write(store, hash_embedder, [_chunk("a", 1, f"part {i} of a", index=i) for i in (2, 0, 1)], 1)
    _write(store, hash_embedder, [_chunk("a", 2, f"part {i} of a, new", index=i) for i in (0, 1)], 2)
    assert [c.metadata.chunk_index for c in store.chunks_of("a", 1)] == [0, 1, 2]
    points = store.points_of("a", 1)  # what a migration copies: the chunks with their stored vectors
    assert [chunk for chunk, _ in points] == store.chunks_of("a", 1)
    for chunk, vector in points:
        given = hash_embedder.embed_documents([chunk.text])[0]
        assert np.allclose(vector / np.linalg.norm(vector), given / np.linalg.norm(given), atol=1e-6)
    assert store.count() == 5 and store.count({"document_id": "a"}) == 5
    store.delete_generation("a", 1)
    store.flush()
    assert store.chunks_of("a", 1) == [] and store.count() == 2
    assert {c.metadata.chunk_index for c, _ in store.search_bm25("part", 10, None, ALL)} == {0, 1}
    # writing a chunk id again replaces the point
    _write(store, hash_embedder, [_chunk("a", 2, "part 0 rewritten", index=0)], 2)
    assert store.count() == 2 and store.chunks_of("a", 2)[0].text == "part 0 rewritten"
    assert store.info()["points"] == 2
    store.maybe_optimize()


def _version(document_id: str, generation: int, checksum: str = "c") -> DocumentVersion:
    doc = LoadedDocument(document_id=document_id, source=document_id, title=document_id, mime="text/plain",
                         checksum=checksum, size_bytes=1, pages=(Page(text="x", number=1),), metadata={"team": "red"})
    return DocumentVersion(doc, generation, 1, "fp", "2026-01-01T00:00:00+00:00")


def test_catalog_snapshot_follows_intents_and_switches(opened):
    catalog, _ = opened
    assert catalog.snapshot() == Snapshot(sequence=0, max_generation=0, uncommitted=frozenset())

    [first], intents = catalog.begin_versions([("a", None)])
    assert catalog.snapshot() == Snapshot(sequence=0, max_generation=first, uncommitted=frozenset({first}))
    sequence = catalog.commit_documents([_version("a", first)])
    assert catalog.snapshot() == Snapshot(sequence=sequence, max_generation=first, uncommitted=frozenset())
    catalog.clear_intents(intents)

    [second], intents = catalog.begin_versions([("a", first)])
    assert catalog.snapshot().uncommitted == {second}
    assert catalog.intents() == [(intents[0], "a", second, first)]
    sequence = catalog.commit_documents([_version("a", second)])
    assert catalog.snapshot() == Snapshot(sequence=sequence, max_generation=second, uncommitted=frozenset({first}))
    catalog.clear_intents(intents)
    assert catalog.snapshot().uncommitted == frozenset()

    [intent] = catalog.add_intents([("a", None, second)])
    sequence = catalog.remove_document("a")
    assert catalog.snapshot() == Snapshot(sequence=sequence, max_generation=second, uncommitted=frozenset({second}))
    catalog.clear_intents([intent])
    assert catalog.intents() == []


def test_catalog_documents_cache_settings_and_conversations(opened):
    catalog, _ = opened
    generations, intents = catalog.begin_versions([("b", None), ("a", None)])
    catalog.commit_documents([_version("b", generations[0], "same"), _version("a", generations[1], "same")])
    catalog.clear_intents(intents)
    assert [r.document_id for r in catalog.list()] == ["a", "b"]
    record = catalog.get("a")
    assert record is not None and record.generation == generations[1] and record.metadata == {"team": "red"}
    assert catalog.get("missing") is None
    assert [r.document_id for r in catalog.find_by_checksum("same")] == ["a", "b"]
    assert catalog.live_generations() == {"b": generations[0], "a": generations[1]}
    stored = catalog.stored_document("a")
    assert stored is not None and stored.pages[0].text == "x" and stored.pages[0].number == 1
    with catalog.read_transaction():  # nests, reads one state
        assert catalog.snapshot().max_generation == max(generations)
        assert catalog.get("b") is not None

    vectors = {"h1": np.arange(4, dtype=np.float32), "h2": np.ones(4, dtype=np.float32)}
    catalog.cache_vectors("m", vectors.items())
    cached = catalog.cached_vectors("m", ["h1", "h2", "h3", "h1"])
    assert set(cached) == {"h1", "h2"} and np.array_equal(cached["h1"], vectors["h1"])
    assert catalog.cached_vectors("other", ["h1"]) == {}

    assert catalog.setting("vector_size") is None
    catalog.set_setting("vector_size", 256)
    catalog.set_setting("vector_size", 384)
    assert catalog.setting("vector_size") == 384

    for turn in range(4):
        catalog.add_turn("c1", f"m{turn}", f"q{turn}", f"a{turn}", "2026-01-01T00:00:00+00:00", keep=3,
                         incomplete=turn == 3)
    assert catalog.recent_turns("c1", 2) == [("q2", "a2"), ("q3", "a3")]
    turns = catalog.conversation_turns("c1")
    assert [t["message_id"] for t in turns] == ["m1", "m2", "m3"] and [t["incomplete"] for t in turns] == [False, False, True]
    assert catalog.recent_turns("nobody", 5) == []


def test_catalog_pages_out_what_a_migration_copies(opened):
    from ragstream.store.catalog_base import TurnRow

    catalog, _ = opened
    catalog.raise_generation(7)
    catalog.raise_generation(3)  # never down
    assert catalog.snapshot().max_generation == 7 and catalog.begin_versions([("a", None)])[0] == [8]

    vectors = {(model, f"h{i}"): np.full(4, i, dtype=np.float32) for model in ("m1", "m2") for i in range(5)}
    for model in ("m1", "m2"):
        catalog.cache_vectors(model, [(h, v) for (m, h), v in vectors.items() if m == model])
    seen, after = [], None
    while page := catalog.embedding_rows(after, 3):
        seen.extend(page)
        after = (page[-1][0], page[-1][1])
    assert [(m, h) for m, h, _ in seen] == sorted(vectors) and all(np.array_equal(v, vectors[(m, h)]) for m, h, v in seen)

    for turn in range(3):
        catalog.add_turn(f"c{turn % 2}", f"m{turn}", f"q{turn}", f"a{turn}", "2026-01-01T00:00:00+00:00", keep=5,
                         incomplete=turn == 2)
    catalog.add_turn("c0", "m3", "q3", "a3", "2026-01-01T00:00:00+00:00", keep=5, owner="alice")
    turns = catalog.turn_rows(None, 2) + catalog.turn_rows("m1", 2)  # pages by message id
    assert [(t.conversation_id, t.seq, t.message_id, t.incomplete, t.owner) for t in turns] == \
        [("c0", 1, "m0", False, ""), ("c1", 1, "m1", False, ""), ("c0", 2, "m2", True, ""), ("c0", 1, "m3", False, "alice")]
    catalog.import_turns([TurnRow("c9", 4, "m9", "q", "a", "2026-01-02T00:00:00+00:00", True), turns[0]])
    assert catalog.conversation_turns("c9") == [
        {"message_id": "m9", "user": "q", "assistant": "a", "created_at": "2026-01-02T00:00:00+00:00", "incomplete": True}]
    assert len(catalog.turn_rows(None, 100)) == 5


# -- crash safety through the whole engine ---------------------------------------------------

class _CrashError(Exception):
    """Stands in for a SIGKILL between two write steps (tests/test_crash_safety.py kills for real)."""


def _crash(crash_point: str) -> NoReturn:
    raise _CrashError(crash_point)


@pytest.mark.parametrize("crash_point", CRASH_POINTS)
def test_interrupted_write_recovers_on_reopen(make_fast_index, backend, tmp_path, monkeypatch, crash_point):
    folder = tmp_path / "docs"
    folder.mkdir()

    def write(version: str) -> None:
        for doc in range(3):
            (folder / f"doc{doc}.txt").write_text("\n\n".join(
                f"Paragraph {p} of document {doc} in version {version}. " * 20 for p in range(6)))

    write("alpha")
    rs = make_fast_index(store=backend)
    rs.ingest([folder])
    write("beta")
    install_crash(type(rs.store), type(rs.catalog), crash_point, _crash, monkeypatch.setattr)
    with pytest.raises(_CrashError):
        rs.ingest([folder])
    monkeypatch.undo()
    rs.close()

    reopened = make_fast_index(store=backend)  # recovery replays the intents
    assert reopened.catalog.intents() == []
    total = 0
    for record in reopened.documents():
        chunks = reopened.document_chunks(record.document_id)
        assert len(chunks) == record.chunk_count
        assert len({tag for c in chunks for tag in ("alpha", "beta") if f"version {tag}" in c.text}) == 1
        total += record.chunk_count
    assert reopened.store.count() == total, "points of dead generations survived recovery"
    assert reopened.ingest([folder]).documents_failed == 0
    assert {c.text.split("version ")[1][:4] for r in reopened.documents() for c in reopened.document_chunks(r.document_id)} == {"beta"}


def test_catalog_keeps_background_jobs(opened):
    catalog, _ = opened
    catalog.save_job("j1", "upload", "queued", '{"files_done": 0}', "2026-01-01T00:00:00+00:00")
    catalog.save_job("j2", "upload", "succeeded", "{}", "2026-01-01T00:00:01+00:00")
    catalog.save_job("j1", "upload", "running", '{"files_done": 1}', "2026-01-01T00:00:02+00:00")
    job = catalog.job("j1")
    assert job is not None and job["state"] == "running" and job["payload"] == '{"files_done": 1}'
    assert job["created_at"] == "2026-01-01T00:00:00+00:00" and job["updated_at"] == "2026-01-01T00:00:02+00:00"
    assert catalog.job("nope") is None
    assert [row["job_id"] for row in catalog.unfinished_jobs()] == ["j1"]


def test_readers_registered_for_other_processes(opened):
    catalog, _ = opened
    reader = catalog.open_reader()
    if reader is None:  # a catalog one process holds: the process's own snapshots are enough
        assert catalog.oldest_reader() == float("inf")
        return
    sequence = catalog.snapshot().sequence
    assert catalog.oldest_reader() == sequence
    catalog.commit_documents([_version("r", catalog.begin_versions([("r", None)])[0][0])])
    later = catalog.open_reader()
    assert later is not None and catalog.oldest_reader() == sequence  # the oldest reader holds the horizon
    catalog.close_reader(reader)
    assert catalog.oldest_reader() == sequence + 1
    catalog.close_reader(later)
    assert catalog.oldest_reader() == float("inf")


EXPIRED = -1.0
"""A lease that has run out already (what a worker that died leaves behind), without waiting for one."""
LEASE = 60.0


def test_job_queue_leases_and_takeover(opened):
    catalog, _ = opened
    for number in range(2):
        catalog.save_job(f"j{number}", "upload", "queued", f'{{"n": {number}}}', f"2026-01-01T00:00:0{number}+00:00")
    first = catalog.claim_job("worker-a", EXPIRED, "2026-01-01T00:01:00+00:00")
    assert first is not None and first["job_id"] == "j0" and first["state"] == "running" and first["attempts"] == 1
    assert first["payload"] == '{"n": 0}'
    taken_over = catalog.claim_job("worker-c", LEASE, "2026-01-01T00:01:01+00:00")  # worker-a's lease ran out
    assert taken_over is not None and taken_over["job_id"] == "j0" and taken_over["attempts"] == 2
    assert taken_over["payload"] == '{"n": 0}'  # with the progress worker-a recorded
    second = catalog.claim_job("worker-b", LEASE, "2026-01-01T00:01:02+00:00")
    assert second is not None and second["job_id"] == "j1" and second["attempts"] == 1
    assert catalog.claim_job("worker-d", LEASE, "2026-01-01T00:01:03+00:00") is None  # both held by live leases
    assert not catalog.renew_job("j0", "worker-a", LEASE)  # the dead worker lost it ...
    assert not catalog.update_job("j0", "worker-a", "running", '{"n": "stale"}', "2026-01-01T00:01:04+00:00", LEASE)
    assert catalog.job("j0")["payload"] == '{"n": 0}'  # type: ignore[index]  # ... and writes nothing
    assert catalog.renew_job("j0", "worker-c", LEASE)
    assert catalog.update_job("j0", "worker-c", "running", '{"n": 1}', "2026-01-01T00:01:05+00:00", LEASE)
    assert catalog.update_job("j0", "worker-c", "succeeded", '{"n": 2}', "2026-01-01T00:01:06+00:00", LEASE)
    assert catalog.job("j0")["state"] == "succeeded" and catalog.job("j0")["payload"] == '{"n": 2}'  # type: ignore[index]
    assert not catalog.update_job("j0", "worker-c", "failed", "{}", "2026-01-01T00:01:07+00:00", LEASE)  # finished
    assert catalog.update_job("j1", "worker-b", "queued", '{"n": 3}', "2026-01-01T00:01:08+00:00", LEASE)  # handed back
    again = catalog.claim_job("worker-e", LEASE, "2026-01-01T00:01:09+00:00")
    assert again is not None and again["job_id"] == "j1" and again["attempts"] == 1  # a hand-back is no attempt
    assert [row["job_id"] for row in catalog.unfinished_jobs()] == ["j1"]


def test_job_queue_gives_each_job_to_one_worker(opened):
    catalog, _ = opened
    jobs = [f"job{number:02d}" for number in range(24)]
    for job_id in jobs:
        catalog.save_job(job_id, "upload", "queued", "{}", "2026-01-01T00:00:00+00:00")
    taken: list[list[str]] = [[] for _ in range(4)]

    def take(worker: int) -> None:
        while (row := catalog.claim_job(f"worker-{worker}", LEASE, "2026-01-01T00:01:00+00:00")) is not None:
            taken[worker].append(row["job_id"])

    threads = [threading.Thread(target=take, args=(worker,)) for worker in range(len(taken))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    everything = [job_id for ids in taken for job_id in ids]
    assert sorted(everything) == jobs  # every job taken, none twice


def _rooted(document_id: str, generation: int, root: str | None, checksum: str = "c") -> DocumentVersion:
    version = _version(document_id, generation, checksum)
    return DocumentVersion(version.doc.model_copy(update={"root": root}), generation, 1, "fp", version.ingested_at)


def test_catalog_roots_registry_and_atomic_rename(opened):
    catalog, _ = opened
    generations, intents = catalog.begin_versions([("a", None), ("b", None), ("c", None)])
    catalog.commit_documents([_rooted("a", generations[0], "/docs"), _rooted("b", generations[1], "/docs"),
                              _rooted("c", generations[2], None)])
    catalog.clear_intents(intents)
    assert [record.document_id for record in catalog.documents_in_root("/docs")] == ["a", "b"]
    assert catalog.get("a").root == "/docs" and catalog.get("c").root is None
    stored = catalog.stored_document("a")
    assert stored is not None and stored.root == "/docs"

    # a version that names no root keeps the document's; one that names one moves it
    [again], intents = catalog.begin_versions([("a", generations[0])])
    catalog.commit_documents([_rooted("a", again, None)])
    assert catalog.get("a").root == "/docs"
    catalog.set_root(["c"], "/docs")
    assert [record.document_id for record in catalog.documents_in_root("/docs")] == ["a", "b", "c"]

    # a rename: the new id comes and the old one goes in one switch (one commit sequence)
    [moved], _ = catalog.begin_versions([("b2", None)])
    before = catalog.snapshot().sequence
    sequence = catalog.commit_documents([_rooted("b2", moved, "/docs")], removed=["b"])
    assert sequence == before + 1
    assert catalog.get("b") is None and catalog.get("b2").generation == moved
    assert [record.document_id for record in catalog.documents_in_root("/docs")] == ["a", "b2", "c"]

    assert catalog.roots() == []
    catalog.record_sync("/docs", "2026-01-01T00:00:00+00:00", '{"added": 3}')
    catalog.record_sync("/other", "2026-01-02T00:00:00+00:00", "{}")
    catalog.watch_roots(["/docs"], 123.5)
    first, second = catalog.roots()
    assert (first.root, first.documents, first.last_sync_at, first.last_summary, first.watched_until) == (
        "/docs", 3, "2026-01-01T00:00:00+00:00", '{"added": 3}', 123.5)
    assert (second.root, second.documents, second.watched_until) == ("/other", 0, None)
    catalog.record_sync("/docs", "2026-01-03T00:00:00+00:00", '{"removed": 1}')
    catalog.watch_roots(["/docs"], None)
    assert (catalog.roots()[0].last_summary, catalog.roots()[0].watched_until) == ('{"removed": 1}', None)
    catalog.forget_root("/other")
    assert [root.root for root in catalog.roots()] == ["/docs"]
