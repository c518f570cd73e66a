"""Upsert, skip-unchanged, embedding cache, delete, reindex and persistence on the real embedded store."""

from __future__ import annotations

import shutil
from pathlib import Path

from support.index_fixtures import SAMPLES


def _copy_samples(tmp_path: Path) -> Path:
    folder = tmp_path / "docs"
    folder.mkdir()
    for name in ("httpx-quickstart.md", "httpx-timeouts.md", "httpx-exceptions.md"):
        shutil.copy(SAMPLES / name, folder / name)
    return folder


def _live_point_count(rs) -> int:
    return sum(len(rs.document_chunks(record.document_id)) for record in rs.documents())


def test_zero_chunks_lost_and_unchanged_documents_skipped(make_fast_index, tmp_path):
    folder = _copy_samples(tmp_path)
    rs = make_fast_index()
    first = rs.ingest([folder])
    assert first.documents_processed == 3 and first.documents_failed == 0
    records = rs.documents()
    assert first.chunks_written == sum(r.chunk_count for r in records) == rs.store.count() == _live_point_count(rs)

    again = rs.ingest([folder])
    assert again.documents_processed == 0 and again.documents_skipped == 3
    assert again.embedding_count == 0 and again.chunks_written == 0
    assert rs.store.count() == first.chunks_written


def test_changed_document_is_replaced_and_unchanged_chunks_come_from_the_cache(make_fast_index, tmp_path):
    folder = _copy_samples(tmp_path)
    rs = make_fast_index()
    rs.ingest([folder])
    target = folder / "httpx-timeouts.md"
    doc_id = next(r.document_id for r in rs.documents() if r.source.endswith("httpx-timeouts.md"))
    old = rs.document(doc_id)

    target.write_text(target.read_text() + "\n\n## Brand new section\n\nZebra-striped timeouts are new here.\n")
    report = rs.ingest([target])
    assert report.documents_processed == 1
    new = rs.document(doc_id)
    assert new.generation != old.generation and new.checksum != old.checksum
    assert report.embedding_cache_hits >= 1, "unchanged chunks must not be re-embedded"
    assert report.embedding_count < new.chunk_count
    assert rs.store.chunks_of(doc_id, old.generation) == []
    assert rs.store.count() == _live_point_count(rs)
    hit = rs.search("zebra-striped timeouts", mode="bm25").hits[0]
    assert hit.chunk.metadata.document_id == doc_id


def test_delete_purges_every_chunk(make_fast_index, tmp_path):
    folder = _copy_samples(tmp_path)
    rs = make_fast_index()
    rs.ingest([folder])
    doc_id = rs.documents()[0].document_id
    before = rs.store.count()
    chunk_count = rs.document(doc_id).chunk_count
    rs.delete(doc_id)
    assert rs.store.count({"document_id": doc_id}) == 0
    assert rs.store.count() == before - chunk_count
    assert all(hit.chunk.metadata.document_id != doc_id for hit in rs.search("httpx request", top_k=50).hits)


def test_reindex_after_chunking_change(make_fast_index, tmp_path):
    folder = _copy_samples(tmp_path)
    data_dir = tmp_path / "index"
    rs = make_fast_index(data_dir=data_dir)
    rs.ingest([folder])
    before = {r.document_id: r for r in rs.documents()}
    rs.close()

    smaller = make_fast_index(data_dir=data_dir, chunking={"chunk_size": 500, "chunk_overlap": 100})
    assert sorted(smaller.stale_documents()) == sorted(before)
    report = smaller.reindex()
    assert report.documents_processed == len(before) and report.documents_failed == 0
    assert smaller.stale_documents() == []
    after = {r.document_id: r for r in smaller.documents()}
    assert sum(r.chunk_count for r in after.values()) > sum(r.chunk_count for r in before.values())
    assert smaller.store.count() == sum(r.chunk_count for r in after.values())
    # Unchanged files are now up to date under the new settings: a plain ingest skips them.
    assert smaller.ingest([folder]).documents_skipped == len(before)


def test_index_persists_across_restarts(make_fast_index, tmp_path):
    folder = _copy_samples(tmp_path)
    data_dir = tmp_path / "index"
    rs = make_fast_index(data_dir=data_dir)
    rs.ingest([folder])
    expected = [hit.chunk.chunk_id for hit in rs.search("configure timeouts").hits]
    rs.close()
    reopened = make_fast_index(data_dir=data_dir)
    assert [hit.chunk.chunk_id for hit in reopened.search("configure timeouts").hits] == expected


def test_bad_files_are_reported_and_do_not_stop_the_batch(make_fast_index, tmp_path):
    folder = _copy_samples(tmp_path)
    (folder / "broken.pdf").write_bytes(b"%PDF-1.4\n" + b"\x00garbage" * 50)
    (folder / "picture.txt").write_bytes(b"\x89PNG\r\n\x1a\n" + bytes(range(256)))
    (folder / "empty.md").write_text("   \n")
    rs = make_fast_index()
    report = rs.ingest([folder, tmp_path / "missing.md"])
    assert report.documents_processed == 3
    failed = {Path(f.source).name: f.code for f in report.failures}
    assert failed["broken.pdf"] == "corrupt_document"
    assert failed["picture.txt"] == "corrupt_document", "a PNG by its content (read by OCR), but a broken one"
    assert failed["empty.md"] == "empty_document"
    assert "missing.md" in failed


def test_a_second_process_gets_a_clear_error_while_the_index_is_open(make_fast_index, tmp_path):
    import subprocess
    import sys

    data_dir = tmp_path / "index"
    rs = make_fast_index(data_dir=data_dir)
    rs.ingest([SAMPLES / "httpx-timeouts.md"])
    script = (
        "import sys\n"
        "from ragstream import Ragstream, load_config\n"
        "from ragstream.errors import VectorDBUnavailableError\n"
        f"try:\n    Ragstream(load_config(data_dir={str(data_dir)!r}))\n"
        "except VectorDBUnavailableError as error:\n    print(error.code, error.message)\n    sys.exit(3)\n"
    )
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert result.returncode == 3, result.stderr
    assert "vector_db_unavailable" in result.stdout and "another ragstream process" in result.stdout
    assert rs.search("timeout").hits, "the first process keeps working"


def test_hnsw_index_is_built_once_the_store_is_big_enough(make_fast_index, tmp_path):
    folder = _copy_samples(tmp_path)
    exact = make_fast_index(data_dir=tmp_path / "exact")
    exact.ingest([folder])
    optimized = make_fast_index(data_dir=tmp_path / "optimized", store={"optimize_min_points": 10, "optimize_min_new_points": 10})
    optimized.ingest([folder])
    assert optimized.store.info()["points"] >= 10
    assert optimized.store.maybe_optimize() is False, "already optimized after ingest"
    query = "connection pool limits"
    exact_texts = [h.chunk.text for h in exact.search(query, mode="dense").hits]
    assert [h.chunk.text for h in optimized.search(query, mode="dense").hits] == exact_texts
