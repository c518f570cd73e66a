"""What the postgres backend adds beyond the shared contracts (tests/store/test_store_contract.py and the
catalog's role suites tests/store/test_catalog_*.py): every handle on the database sees one committed
state, BM25 is the exact formula, the HNSW index serves filtered queries and is rebuilt beside itself when its
graph settings change, bad configuration is a
clear error, recovery replays only the intents of writers that are gone, a database from before
sync gets its root column, and ``ragstream db`` runs the bundled server."""

from __future__ import annotations

import math
import shutil
import tempfile
from pathlib import Path
from typing import Any

import pytest
from support.backend_fixtures import document_version
from support.hash_embedder import HashEmbedder
from typer.testing import CliRunner

from ragstream import load_config
from ragstream.cli import app
from ragstream.config import StoreConfig
from ragstream.errors import ConfigError
from ragstream.models import Chunk, ChunkMetadata
from ragstream.store.base import Snapshot
from ragstream.store.factory import open_backend, postgres_catalog
from ragstream.store.postgres.bm25 import first_pass, rarest_first, terms_needed
from ragstream.store.postgres.store import HNSW_INDEX, PostgresStore

ALL = Snapshot(sequence=0, max_generation=10**6, uncommitted=frozenset())


def _chunk(index: int, text: str, document_id: str = "d") -> Chunk:
    metadata = ChunkMetadata(document_id=document_id, source=document_id, title=document_id, chunk_index=index,
                             word_count=len(text.split()), has_code=False, has_equations=False, checksum="c",
                             content_hash=f"h{index}", mime="text/plain", created_at="2026-01-01T00:00:00+00:00")
    return Chunk(chunk_id=f"00000000-0000-0000-0000-{index:012d}", text=text, metadata=metadata)


def test_two_handles_see_the_same_committed_state(postgres_url: str):
    config = StoreConfig(backend="postgres", url=postgres_url)
    writer, reader = postgres_catalog(config), postgres_catalog(config)  # as two worker processes would
    try:
        [generation], intents = writer.versions.begin_versions([("a", None)])
        assert reader.reads.snapshot() == writer.reads.snapshot() == Snapshot(0, generation, frozenset({generation}))
        with reader.reads.read_transaction():  # one REPEATABLE READ transaction: later commits stay unseen
            before = reader.reads.snapshot()
            writer.documents.commit_documents([document_version("a", generation)])
            assert reader.reads.snapshot() == before and reader.documents.get("a") is None
        assert reader.reads.snapshot() == writer.reads.snapshot() == Snapshot(1, generation, frozenset())
        writer.versions.clear_intents(intents)
        assert reader.versions.intents() == []
    finally:
        writer.close()
        reader.close()


def test_bm25_is_the_exact_formula(postgres_url: str, tmp_path: Path, hash_embedder: HashEmbedder):
    texts = ["alpha beta beta gamma", "beta delta", "alpha alpha alpha epsilon zeta eta theta", "gamma"]
    catalog, store = open_backend(load_config(data_dir=tmp_path, store={"backend": "postgres", "url": postgres_url}),
                                  lambda catalog: hash_embedder.dimensions)
    try:
        chunks = [_chunk(i, text) for i, text in enumerate(texts)]
        store.upsert(chunks, hash_embedder.embed_documents(texts), 1)
        config = StoreConfig()
        k1, b = config.bm25_k1, config.bm25_b
        tokens = [text.split() for text in texts]  # no stopwords or stems to remove in these words
        avgdl = sum(map(len, tokens)) / len(tokens)

        def bm25(query: list[str], doc: list[str]) -> float:
            score = 0.0
            for term in set(query):
                df = sum(term in other for other in tokens)
                tf = doc.count(term)
                if tf:
                    idf = math.log(1 + (len(tokens) - df + 0.5) / (df + 0.5))
                    score += idf * tf * (k1 + 1) / (tf + k1 * (1 - b + b * len(doc) / avgdl))
            return score

        hits = store.search_bm25("alpha beta", 10, None, ALL)
        expected = sorted(((bm25(["alpha", "beta"], doc), i) for i, doc in enumerate(tokens) if bm25(["alpha", "beta"], doc)),
                          reverse=True)
        assert [chunk.metadata.chunk_index for chunk, _ in hits] == [i for _, i in expected]
        assert [score for _, score in hits] == pytest.approx([score for score, _ in expected], rel=1e-5)
    finally:
        store.close()
        catalog.close()


def _ranked(hits: list[tuple[Chunk, float]]) -> tuple[list[float], set[str]]:
    """The scores, best first, and the chunks above the last score (which of the chunks tied with the last one
    make the cut is the database's choice)."""
    scores = [round(score, 4) for _, score in hits]
    assert scores == sorted(scores, reverse=True)
    return scores, {chunk.chunk_id for chunk, score in hits if round(score, 4) > min(scores, default=0.0)}


def test_bm25_rarest_terms_first_gives_the_exact_ranking(postgres_url: str, tmp_path: Path, hash_embedder: HashEmbedder):
    """The first pass scores only the chunks holding the rarest term (a budget of 1 chunk); whether it stops there
    (the rest's bound is under the k-th score) or adds terms, the ranking is the one of scoring every candidate."""
    texts = ([f"common filler {i}" for i in range(200)] + [f"common {'apple ' * (1 + i % 4)}pie {i}" for i in range(60)]
             + [f"zebra common {'apple ' * i}" for i in range(3)])
    base = {"backend": "postgres", "url": postgres_url}
    catalog, store = open_backend(load_config(data_dir=tmp_path / "a", store={**base, "bm25_first_pass_chunks": 10**9}),
                                  lambda catalog: hash_embedder.dimensions)
    pruned_catalog, pruned = open_backend(load_config(data_dir=tmp_path / "b", store={**base, "bm25_first_pass_chunks": 1}),
                                          lambda catalog: hash_embedder.dimensions)
    try:
        chunks = [_chunk(i, text, document_id=f"d{i % 3}") for i, text in enumerate(texts)]
        store.upsert(chunks, hash_embedder.embed_documents(texts), 1)
        for query in ("zebra common", "zebra apple common", "apple pie common", "filler common zebra"):
            for limit in (1, 2, 3, 5, 10, 40):
                for filters in (None, {"document_id": "d1"}):
                    exact = _ranked(store.search_bm25(query, limit, filters, ALL))
                    found = _ranked(pruned.search_bm25(query, limit, filters, ALL))
                    assert found == exact, (query, limit, filters)
    finally:
        for handle in (store, pruned, catalog, pruned_catalog):
            handle.close()


def test_bm25_scores_at_most_the_configured_candidates(postgres_url: str, tmp_path: Path, hash_embedder: HashEmbedder):
    """Over ``store.bm25_max_candidates``, commoner terms bring no candidates (the rare term's chunks keep their
    exact scores), and a query of common terms only is ranked among that many chunks."""
    texts = [f"common filler {i}" for i in range(200)] + [f"zebra common {'apple ' * i}" for i in range(3)]
    base = {"backend": "postgres", "url": postgres_url}
    catalog, store = open_backend(load_config(data_dir=tmp_path / "a", store=base), lambda catalog: hash_embedder.dimensions)
    capped_catalog, capped = open_backend(load_config(data_dir=tmp_path / "b", store={**base, "bm25_max_candidates": 50}),
                                          lambda catalog: hash_embedder.dimensions)
    try:
        chunks = [_chunk(i, text) for i, text in enumerate(texts)]
        store.upsert(chunks, hash_embedder.embed_documents(texts), 1)
        exact = {chunk.chunk_id: score for chunk, score in store.search_bm25("zebra common", 300, None, ALL)}
        assert len(exact) == len(texts)  # uncapped: every chunk sharing a term
        found = capped.search_bm25("zebra common", 300, None, ALL)
        assert sorted(chunk.text for chunk, _ in found) == sorted(texts[200:])
        assert all(score == pytest.approx(exact[chunk.chunk_id]) for chunk, score in found)
        assert len(capped.search_bm25("common filler", 300, None, ALL)) == 50
    finally:
        for handle in (store, capped, catalog, capped_catalog):
            handle.close()


def test_the_bound_asks_for_the_rarer_terms_a_top_chunk_could_come_from():
    weights, frequencies = {1: 5.0, 2: 2.0, 3: 0.1}, {1: 3, 2: 60, 3: 260}
    order = rarest_first(weights, frequencies)
    assert order == [1, 2, 3]
    assert first_pass(order, frequencies, 1) == 1 and first_pass(order, frequencies, 63) == 2
    assert first_pass(order, frequencies, 10**9) == 3
    ceiling = 2.2  # k1 + 1
    assert terms_needed(order, weights, ceiling, 0.0) == 3  # fewer than k found: every term
    assert terms_needed(order, weights, ceiling, 0.5) == 2  # only term 3 left out: 0.22 < 0.5
    assert terms_needed(order, weights, ceiling, 5.0) == 1  # terms 2 and 3 left out: 4.62 < 5
    assert terms_needed(order, weights, ceiling, 20.0) == 0


def test_hnsw_index_serves_filtered_queries(postgres_url: str, tmp_path: Path, hash_embedder: HashEmbedder):
    catalog, store = open_backend(
        load_config(data_dir=tmp_path, store={"backend": "postgres", "url": postgres_url, "optimize_min_points": 50}),
        lambda catalog: hash_embedder.dimensions)
    assert isinstance(store, PostgresStore)
    try:
        texts = [f"note {i} about topic {i % 7} and item {i}" for i in range(120)]
        chunks = [_chunk(i, text, document_id="even" if i % 2 == 0 else "odd") for i, text in enumerate(texts)]
        store.upsert(chunks, hash_embedder.embed_documents(texts), 1)
        exact = store.search_dense(hash_embedder.embed_queries(["topic 3"])[0], 20, {"document_id": "odd"}, ALL)
        assert store.maybe_optimize() and store.info()["hnsw_index"]
        approximate = store.search_dense(hash_embedder.embed_queries(["topic 3"])[0], 20, {"document_id": "odd"}, ALL)
        assert len(approximate) == 20 and all(chunk.metadata.document_id == "odd" for chunk, _ in approximate)
        assert len({c.chunk_id for c, _ in exact} & {c.chunk_id for c, _ in approximate}) >= 18
        assert not store.maybe_optimize()  # nothing left to do
    finally:
        store.close()
        catalog.close()


def test_new_graph_settings_rebuild_the_hnsw_index_beside_the_one_in_use(postgres_url: str, tmp_path: Path,
                                                                        hash_embedder: HashEmbedder):
    def opened(m: int, ef_construction: int) -> tuple[Any, PostgresStore]:
        catalog, store = open_backend(load_config(data_dir=tmp_path, store={
            "backend": "postgres", "url": postgres_url, "optimize_min_points": 50, "hnsw_m": m,
            "hnsw_ef_construction": ef_construction}), lambda catalog: hash_embedder.dimensions)
        assert isinstance(store, PostgresStore)
        return catalog, store

    texts = [f"note {i} about topic {i % 7} and item {i}" for i in range(120)]
    query = hash_embedder.embed_queries(["topic 3"])[0]
    catalog, store = opened(8, 32)
    try:
        store.upsert([_chunk(i, text) for i, text in enumerate(texts)], hash_embedder.embed_documents(texts), 1)
        exact = {chunk.chunk_id for chunk, _ in store.search_dense(query, 10, None, ALL)}
        assert store.maybe_optimize() and store.info()["hnsw_options"] == ["m=8", "ef_construction=32"]
        assert not store.maybe_optimize()
    finally:
        store.close()
        catalog.close()
    catalog, store = opened(12, 48)  # the user changed the settings: the next optimize rebuilds
    try:
        assert store.maybe_optimize() and store.info()["hnsw_options"] == ["m=12", "ef_construction=48"]
        assert not store.maybe_optimize()
        assert len(exact & {chunk.chunk_id for chunk, _ in store.search_dense(query, 10, None, ALL)}) >= 9
        with store._db.pool.connection() as conn:  # a rebuild killed after dropping the old index, before the rename
            conn.execute(f"ALTER INDEX {HNSW_INDEX} RENAME TO {HNSW_INDEX}_next")
        assert not store.info()["hnsw_index"]
        assert store.maybe_optimize() and store.info()["hnsw_options"] == ["m=12", "ef_construction=48"]
        with store._db.pool.connection() as conn:
            names = [row[0] for row in conn.execute("SELECT indexname FROM pg_indexes WHERE tablename = 'chunks' "
                                                    "AND indexdef LIKE '%hnsw%'").fetchall()]
        assert names == [HNSW_INDEX]
    finally:
        store.close()
        catalog.close()


def test_bad_configuration_is_a_clear_error(postgres_url: str, tmp_path: Path):
    with pytest.raises(ConfigError, match=r"store\.url"):
        open_backend(load_config(data_dir=tmp_path, store={"backend": "postgres"}), lambda catalog: 8)
    config = load_config(data_dir=tmp_path, store={"backend": "postgres", "url": postgres_url})
    catalog, store = open_backend(config, lambda catalog: 8)
    store.close()
    catalog.close()
    with pytest.raises(ConfigError, match="8-dimensional"):
        open_backend(config, lambda catalog: 16)


def test_db_commands_run_the_bundled_server(tmp_path: Path, hash_embedder_by_default, monkeypatch: pytest.MonkeyPatch):
    runner = CliRunner()
    # not under tmp_path: another pytest process resets /tmp/pytest-of-root to 0700, and under root the
    # server runs as an unprivileged user that must traverse the parents of its directory
    folder = Path(tempfile.mkdtemp(prefix="ragstream-test-db-")) / "pg"
    started = runner.invoke(app, ["db", "start", "--dir", str(folder), "--data-dir", str(tmp_path / "index")])
    try:
        assert started.exit_code == 0, started.output
        url = started.stdout.strip().split("RAGSTREAM_STORE__URL=", 1)[1].strip("'")
        status = runner.invoke(app, ["db", "status", "--dir", str(folder)])
        assert status.exit_code == 0 and status.stdout.strip() == url
        monkeypatch.setenv("RAGSTREAM_STORE__BACKEND", "postgres")
        monkeypatch.setenv("RAGSTREAM_STORE__URL", url)
        docs = tmp_path / "docs"
        docs.mkdir()
        (docs / "a.md").write_text("# Pools\n\nThe connection pool keeps ten connections open.")
        assert runner.invoke(app, ["ingest", str(docs), "--data-dir", str(tmp_path / "index")]).exit_code == 0
        found = runner.invoke(app, ["search", "connection pool", "--mode", "bm25", "--data-dir", str(tmp_path / "index")])
        assert found.exit_code == 0 and "connection pool" in found.stdout
    finally:
        assert runner.invoke(app, ["db", "stop", "--dir", str(folder)]).exit_code == 0
    assert runner.invoke(app, ["db", "status", "--dir", str(folder)]).exit_code == 1
    shutil.rmtree(folder.parent, ignore_errors=True)


def _versions(hits: list) -> set[str]:
    return {word for hit in hits for word in ("one", "two") if f"Version {word}:" in hit.chunk.text}


def test_two_indexes_on_one_database_share_documents_and_versions(make_fast_index, postgres_url: str, tmp_path: Path):
    """Two Ragstream instances (as two worker processes would be: own pools, own data_dir) on one database."""
    store = {"backend": "postgres", "url": postgres_url}
    writer = make_fast_index(data_dir=tmp_path / "one", store=store)
    reader = make_fast_index(data_dir=tmp_path / "two", store=store)
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "a.md").write_text("# Pools\n\nVersion one: the connection pool keeps ten connections.")
    writer.ingest([docs])
    [record] = reader.documents()
    assert _versions(reader.search("connection pool", mode="bm25").hits) == {"one"}

    with reader.snapshot() as before:
        (docs / "a.md").write_text("# Pools\n\nVersion two: the connection pool keeps twenty connections.")
        writer.ingest([docs])
        # the reader registered its snapshot in the database: the writer keeps the old version for it
        assert writer.snapshots.waiting() == 1 and reader.catalog.reads.oldest_reader() == before.sequence
        assert _versions(reader.search("connection pool", mode="bm25", snapshot=before).hits) == {"one"}
        assert len(reader.store.chunks_of(record.document_id, record.generation)) == record.chunk_count
        assert writer.snapshots.collect() == 0  # still open
    assert _versions(reader.search("connection pool", mode="bm25").hits) == {"two"}
    assert reader.catalog.reads.oldest_reader() == float("inf")
    assert writer.snapshots.collect() == 1 and reader.store.chunks_of(record.document_id, record.generation) == []
    assert reader.document(record.document_id).generation > record.generation

    writer.delete(record.document_id)
    assert reader.documents() == [] and reader.search("connection pool", mode="bm25").hits == []


def test_recovery_replays_only_intents_of_writers_that_are_gone(postgres_url: str):
    config = StoreConfig(backend="postgres", url=postgres_url)
    writer, starting = postgres_catalog(config), postgres_catalog(config)
    try:
        [generation], [intent] = writer.versions.begin_versions([("a", None)])  # a write in flight in a live process
        assert writer.versions.intents() == [(intent, "a", generation, None)]
        assert starting.versions.intents() == []  # a process starting now must not roll it back
        writer.close()  # the writer dies (its connections close, its owner lock is released)
        assert starting.versions.intents() == [(intent, "a", generation, None)]
    finally:
        starting.close()


def test_a_database_from_before_sync_gets_the_root_column(postgres_url: str):
    import psycopg

    config = StoreConfig(backend="postgres", url=postgres_url)
    postgres_catalog(config).close()
    with psycopg.connect(postgres_url, autocommit=True) as conn:  # the schema before roots existed
        conn.execute("DROP TABLE sync_roots")
        conn.execute("ALTER TABLE documents DROP COLUMN root")
        conn.execute("INSERT INTO documents (document_id, source, title, mime, checksum, generation, chunk_count, "
                     "fingerprint, ingested_at, metadata, size_bytes, pages) VALUES ('old', '/docs/old.md', 'Old', "
                     "'text/markdown', 'c', 1, 1, 'fp', '2026-01-01T00:00:00+00:00', '{}', 1, '[]')")
    catalog = postgres_catalog(config)
    try:
        record = catalog.documents.get("old")
        assert record is not None and record.root is None
        catalog.documents.set_root(["old"], "/docs")
        catalog.roots.record_sync("/docs", "2026-01-02T00:00:00+00:00", "{}")
        assert [(root.root, root.documents) for root in catalog.roots.roots()] == [("/docs", 1)]
    finally:
        catalog.close()
