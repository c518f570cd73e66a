"""``ragstream migrate``: an index copied between backends (qdrant_edge, qdrant in qdrant-client's local
mode, postgres on the bundled PostgreSQL) without re-embedding, resumable after a SIGKILL, verified by
counts and checksums.

Indexes embed with the hash embedder; the migrate child processes never embed (vectors are read
from the source store), so they run without any embedder.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from support.hash_embedder import HashEmbedder
from support.index_fixtures import FAST_DEFAULTS, REPO_ROOT, SAMPLES
from support.qdrant_backend import QdrantTarget
from support.rankings import same_ranking

from ragstream import Ragstream, load_config
from ragstream.migration import IN_PROGRESS, MigrationError

QUERIES = ["How do I configure a timeout for requests?", "AsyncClient streaming responses",
           "what exceptions can httpx raise", "topic 17 of the corpus"]
MODES = ("bm25", "dense", "hybrid")


def _open(data_dir: Path, embedder: HashEmbedder, **overrides) -> Ragstream:
    return Ragstream(load_config(data_dir=data_dir, **{**FAST_DEFAULTS, **overrides}), embedder=embedder)


def _qdrant_local(folder: Path) -> dict:
    return {"store": {"backend": "qdrant", "url": str(folder / "qdrant")}}


def _corpus(folder: Path, documents: int) -> Path:
    folder.mkdir()
    for doc in range(documents):
        paragraphs = [f"Paragraph {p} of file {doc} describes topic {doc * 3 + p} of the corpus, with words to index. " * 4
                      for p in range(6)]
        (folder / f"doc{doc:02d}.txt").write_text("\n\n".join(paragraphs))
    return folder


def _results(rs: Ragstream) -> dict[tuple[str, str], list[tuple[str, float]]]:
    return {(query, mode): [(hit.chunk.chunk_id, hit.score) for hit in rs.search(query, mode=mode, top_k=10).hits]
            for query in QUERIES for mode in MODES}


def _assert_same_index(copy: Ragstream, original: Ragstream, results: dict) -> None:
    assert [r.model_dump() for r in copy.documents()] == [r.model_dump() for r in original.documents()]
    for record in original.documents():
        assert copy.document_chunks(record.document_id) == original.document_chunks(record.document_id)
    assert sum(1 for expected in results.values() if expected) >= len({mode for _, mode in results})
    copied = _results(copy)
    for key, expected in results.items():
        same_ranking(copied[key], expected)


def test_round_trip_edge_to_qdrant_to_edge(tmp_path: Path, hash_embedder: HashEmbedder):
    source = _open(tmp_path / "source", hash_embedder)
    assert source.ingest([SAMPLES, _corpus(tmp_path / "corpus", 8)]).documents_failed == 0
    source.catalog.conversations.add_turn("conv-1", "m-1", "what is a pool timeout?", "The time to wait for a connection [1].",
                            "2026-01-01T00:00:00+00:00", keep=10)
    source.catalog.conversations.add_turn("conv-1", "m-2", "and connect?", "Cut short", "2026-01-01T00:00:01+00:00", keep=10,
                            incomplete=True)
    results = _results(source)

    report = source.migrate(f"qdrant:{tmp_path / 'on-qdrant'}")
    assert report.ok and report.documents_copied == len(source.documents()) == 13
    assert report.chunks_copied == source.store.count() and report.embeddings_copied == report.chunks_copied
    assert report.turns_copied == 2 and report.vectors_compared == report.chunks_copied
    assert {check.name for check in report.checks} == {"documents", "chunks", "embedding cache", "conversation turns",
                                                       "answer feedback"}
    source_conversation = source.conversation("conv-1")

    on_qdrant = _open(tmp_path / "on-qdrant", hash_embedder, **_qdrant_local(tmp_path / "on-qdrant"))
    assert on_qdrant.stats()["backend"] == "qdrant" and on_qdrant.catalog.settings.setting(IN_PROGRESS) == 0
    _assert_same_index(on_qdrant, source, results)
    assert on_qdrant.conversation("conv-1") == source_conversation
    assert on_qdrant.stale_documents() == []

    back = on_qdrant.migrate(str(tmp_path / "back"))
    assert back.ok and back.documents_copied == 13
    on_qdrant.close()
    round_trip = _open(tmp_path / "back", hash_embedder)
    assert round_trip.stats()["backend"] == "qdrant_edge"
    _assert_same_index(round_trip, source, results)
    assert round_trip.conversation("conv-1") == source_conversation
    # the embedding cache came along: a reindex of the copy finds every passage vector cached
    reindexed = round_trip.reindex()
    assert reindexed.embedding_count == 0 and reindexed.embedding_cache_hits == sum(r.chunk_count for r in source.documents())
    round_trip.close()
    source.close()


def test_migrate_to_qdrant_by_url_and_back(tmp_path: Path, hash_embedder: HashEmbedder, qdrant: QdrantTarget):
    """The target as a user names it: ``qdrant:FOLDER`` (local mode) or the server's URL with a
    collection and a data directory for the catalog; the copy opens with the matching config. The
    server's API key comes from the configured ``store.qdrant.api_key``."""
    source = _open(tmp_path / "source", hash_embedder,
                   **({"store": {"qdrant": {"api_key": qdrant.api_key}}} if qdrant.api_key else {}))
    source.ingest([SAMPLES])
    results = _results(source)
    if qdrant.kind == "local":
        report = source.migrate(f"qdrant:{tmp_path / 'copy'}")
        overrides = _qdrant_local(tmp_path / "copy")
    else:
        report = source.migrate(qdrant.url, target_dir=tmp_path / "copy", collection=qdrant.collection)
        overrides = qdrant.overrides()
    assert report.ok
    copy = _open(tmp_path / "copy", hash_embedder, **overrides)
    _assert_same_index(copy, source, results)
    assert copy.migrate(str(tmp_path / "back")).ok
    copy.close()
    source.close()


def test_round_trip_through_postgres(tmp_path: Path, hash_embedder: HashEmbedder, postgres_url: str):
    """edge -> postgres -> qdrant (local mode) -> edge: each copy verified; the copy on postgres has the
    same documents, chunks and dense ranking (its BM25 uses the true average length, so BM25 and hybrid
    rankings are its own), and the final copy ranks like the original in every mode."""
    source = _open(tmp_path / "source", hash_embedder)
    assert source.ingest([SAMPLES, _corpus(tmp_path / "corpus", 4)]).documents_failed == 0
    source.catalog.conversations.add_turn("conv-1", "m-1", "pool timeout?", "Time to wait [1].", "2026-01-01T00:00:00+00:00", keep=10)
    results = _results(source)
    assert source.migrate(postgres_url).ok
    on_postgres = _open(tmp_path / "pg", hash_embedder, store={"backend": "postgres", "url": postgres_url})
    assert on_postgres.stats()["backend"] == "postgres"
    assert [r.model_dump() for r in on_postgres.documents()] == [r.model_dump() for r in source.documents()]
    for query in QUERIES:
        same_ranking(_results(on_postgres)[(query, "dense")], results[(query, "dense")])
    assert on_postgres.conversation("conv-1") == source.conversation("conv-1")

    assert on_postgres.migrate(f"qdrant:{tmp_path / 'on-qdrant'}").ok
    on_qdrant = _open(tmp_path / "on-qdrant", hash_embedder, **_qdrant_local(tmp_path / "on-qdrant"))
    assert on_qdrant.migrate(str(tmp_path / "back")).ok
    on_qdrant.close()
    on_postgres.close()
    back = _open(tmp_path / "back", hash_embedder)
    _assert_same_index(back, source, results)
    assert back.conversation("conv-1") == source.conversation("conv-1")
    back.close()
    source.close()


def test_an_unrelated_non_empty_target_is_refused(tmp_path: Path, hash_embedder: HashEmbedder):
    source = _open(tmp_path / "source", hash_embedder)
    source.ingest([SAMPLES / "httpx-async.md"])
    other = _open(tmp_path / "other", hash_embedder)
    other.ingest([SAMPLES / "httpx-timeouts.md"])
    other.close()
    with pytest.raises(MigrationError, match="already holds 1 documents and was not made by ragstream migrate"):
        source.migrate(str(tmp_path / "other"))
    with pytest.raises(MigrationError, match="is the index being migrated"):
        source.migrate(str(tmp_path / "source"))
    with pytest.raises(MigrationError, match="keeps its catalog in a data directory"):
        source.migrate("http://127.0.0.1:6333")
    source.close()


def test_verification_finds_missing_points_and_a_rerun_repairs_them(tmp_path: Path, hash_embedder: HashEmbedder):
    source = _open(tmp_path / "source", hash_embedder)
    source.ingest([SAMPLES])
    target_dir = tmp_path / "copy"
    assert source.migrate(str(target_dir)).ok
    target = _open(target_dir, hash_embedder)
    victim = target.documents()[0]
    target.store.delete_generation(victim.document_id, victim.generation)  # a store that lost points behind the catalog
    target.close()

    from ragstream.migration import Migration, MigrationReport, Side

    target = _open(target_dir, hash_embedder)
    check = Migration(Side(source.catalog, source.store), Side(target.catalog, target.store), source.config.store.migrate,
                      vector_size=hash_embedder.dimensions)
    report = MigrationReport(target=str(target_dir))
    check.verify(source.documents(), report)
    assert not report.ok
    [chunks] = [item for item in report.checks if item.name == "chunks"]
    assert chunks.target_count == chunks.source_count - victim.chunk_count
    target.close()

    repaired = source.migrate(str(target_dir))
    assert repaired.ok and repaired.documents_copied == 1 and repaired.documents_already_there == len(source.documents()) - 1
    source.close()


def _migrate_child(source: Path, target: str, env: dict[str, str]) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-m", "ragstream", "migrate", "--to", target, "--data-dir", str(source)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=REPO_ROOT)


def _wait_for(child: subprocess.Popen[str], ready: Callable[[str], bool]) -> list[str]:
    assert child.stderr is not None
    seen = []
    for line in child.stderr:
        seen.append(line.rstrip())
        if ready(line):
            return seen
    raise AssertionError(f"the migrate process ended first (exit {child.wait()}): {seen}")


@pytest.mark.parametrize("target_backend", ["qdrant", "postgres"])
def test_a_killed_migration_resumes_and_verifies(tmp_path: Path, hash_embedder: HashEmbedder, target_backend: str,
                                                 request: pytest.FixtureRequest):
    source_dir = tmp_path / "source"
    source = _open(source_dir, hash_embedder)
    assert source.ingest([_corpus(tmp_path / "corpus", 40)]).documents_failed == 0
    results = _results(source)
    documents = len(source.documents())
    source.close()  # the child opens the index

    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT), "RAGSTREAM_STORE__MIGRATE__BATCH_CHUNKS": "6",
           **{f"RAGSTREAM_{section.upper()}__{key.upper()}": str(value)
              for section, values in FAST_DEFAULTS.items() for key, value in values.items()}}
    if target_backend == "qdrant":
        target, overrides, modes = f"qdrant:{tmp_path / 'target'}", _qdrant_local(tmp_path / "target"), MODES
    else:  # postgres ranks BM25 with the true average chunk length: only dense rankings are comparable
        target = request.getfixturevalue("postgres_url")
        overrides, modes = {"store": {"backend": "postgres", "url": target}}, ("dense",)
    child = _migrate_child(source_dir, target, env)

    def mid_copy(line: str) -> bool:
        parts = line.split()
        if len(parts) == 2 and parts[0] == "documents":
            done, total = map(int, parts[1].split("/"))
            return 0 < done < total
        return False

    _wait_for(child, mid_copy)
    child.send_signal(signal.SIGKILL)  # a real kill, mid-copy: intents, points and catalog as they are
    assert child.wait(timeout=60) == -signal.SIGKILL

    partial = _open(tmp_path / "target", hash_embedder, **overrides)  # opening it recovers the killed batch
    copied = len(partial.documents())
    assert 0 < copied < documents and partial.catalog.settings.setting(IN_PROGRESS) == 1
    assert partial.catalog.versions.intents() == []
    for record in partial.documents():  # what the target committed is whole; recovery removed the rest
        assert len(partial.document_chunks(record.document_id)) == record.chunk_count
    assert partial.store.count() == sum(record.chunk_count for record in partial.documents())
    partial.close()

    resumed = _migrate_child(source_dir, target, env)
    out, err = resumed.communicate(timeout=600)
    assert resumed.returncode == 0, err
    assert f"{copied} already in the target" in out and "verified" in out
    for part in ("documents", "chunks", "embedding cache", "conversation turns"):
        assert part in out

    source = _open(source_dir, hash_embedder)
    copy = _open(tmp_path / "target", hash_embedder, **overrides)
    _assert_same_index(copy, source, {key: value for key, value in results.items() if key[1] in modes})
    copy.close()
    source.close()


def test_synced_roots_come_along(tmp_path: Path, hash_embedder: HashEmbedder):
    source = _open(tmp_path / "source", hash_embedder)
    folder = _corpus(tmp_path / "corpus", 3)
    assert len(source.sync([folder]).added) == 3
    assert source.migrate(str(tmp_path / "copy")).ok
    copy = _open(tmp_path / "copy", hash_embedder)
    assert [r.model_dump() for r in copy.documents()] == [r.model_dump() for r in source.documents()]
    assert {record.root for record in copy.documents()} == {str(folder.resolve())}
    assert [(root.root, root.documents, root.last_summary) for root in copy.roots()] == [
        (root.root, root.documents, root.last_summary) for root in source.roots()]
    (folder / "doc00.txt").rename(folder / "renamed.txt")
    assert [Path(moved.source).name for moved in copy.sync([folder]).renamed] == ["renamed.txt"]
    copy.close()
    source.close()
