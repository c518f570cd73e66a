"""What an ingest reports and what it repairs: ``errors`` (the sources that failed) is in every JSON report
(``ragstream ingest --json``, ``POST /api/documents/reindex``), and after a chunking change ``ingest`` and
``sync`` re-embed the documents indexed under the old settings (``ingest.reindex_stale``), naming them in
``reindexed``; with the knob off they stay flagged as stale."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import httpx
from support.index_fixtures import SAMPLES
from support.link_folders import run_cli
from support.server_process import running_server

SMALLER_CHUNKS = {"chunking": {"chunk_size": 500, "chunk_overlap": 100}}
TIMEOUT = 60.0


def _samples(tmp_path: Path) -> Path:
    folder = tmp_path / "docs"
    folder.mkdir()
    for name in ("httpx-quickstart.md", "httpx-timeouts.md", "httpx-exceptions.md"):
        shutil.copy(SAMPLES / name, folder / name)
    return folder


def test_the_cli_json_report_names_the_failed_sources(tmp_path):
    folder = _samples(tmp_path)
    (folder / "empty.md").write_text("")
    done = run_cli(tmp_path / "index", "ingest", str(folder), "--json")
    report = json.loads(done.stdout)
    assert report["errors"] == [str(folder / "empty.md")] and report["documents_processed"] == 3
    assert [failure["source"] for failure in report["failures"]] == report["errors"]
    assert report["reindexed"] == []


def test_the_http_reindex_report_carries_errors(tmp_path):
    with running_server(tmp_path, hash_embedder=True) as server:
        upload = httpx.post(f"{server.url}/api/documents",
                            files={"files": ("timeouts.md", (SAMPLES / "httpx-timeouts.md").read_bytes())},
                            timeout=TIMEOUT)
        assert upload.status_code == 201
        report = httpx.post(f"{server.url}/api/documents/reindex", timeout=TIMEOUT).json()
    assert report["errors"] == [] and report["documents_processed"] == 1 and "reindexed" in report


def test_ingest_and_sync_reembed_stale_documents(make_fast_index, tmp_path):
    folder = _samples(tmp_path)
    data_dir = tmp_path / "index"
    rs = make_fast_index(data_dir=data_dir)
    rs.ingest([folder])
    before = sorted(record.document_id for record in rs.documents())
    rs.close()

    smaller = make_fast_index(data_dir=data_dir, **SMALLER_CHUNKS)
    assert sorted(smaller.stale_documents()) == before
    report = smaller.ingest([folder / "httpx-timeouts.md"])  # one file named: the others are stale too
    assert sorted(report.reindexed) == sorted(set(before) - {report.document_ids[0]}), report
    assert smaller.stale_documents() == [] and report.documents_failed == 0
    assert smaller.store.count() == sum(record.chunk_count for record in smaller.documents())
    smaller.close()

    again = make_fast_index(data_dir=data_dir)  # back to the first chunking; a sync of another folder
    other = tmp_path / "other"
    other.mkdir()
    (other / "fresh.md").write_text("# Fresh\n\nA page synced after the chunking changed.\n")
    synced = again.sync([other])
    assert sorted(synced.reindexed) == before and again.stale_documents() == [] and len(synced.added) == 1


def test_with_reindex_stale_off_stale_documents_are_only_flagged(make_fast_index, tmp_path):
    folder = _samples(tmp_path)
    data_dir = tmp_path / "index"
    rs = make_fast_index(data_dir=data_dir)
    rs.ingest([folder])
    rs.close()
    smaller = make_fast_index(data_dir=data_dir, ingest={"reindex_stale": False}, **SMALLER_CHUNKS)
    fresh = tmp_path / "fresh.md"
    fresh.write_text("# Fresh\n\nA page ingested after the chunking changed.\n")
    report = smaller.ingest([fresh])
    assert report.reindexed == [] and len(smaller.stale_documents()) == 3


def test_the_cli_ingest_reembeds_stale_documents(tmp_path):
    folder = _samples(tmp_path)
    data_dir = tmp_path / "index"
    assert run_cli(data_dir, "ingest", str(folder), "--json").returncode == 0
    fresh = tmp_path / "fresh.md"
    fresh.write_text("# Fresh\n\nA page ingested after the chunking changed.\n")
    done = run_cli(data_dir, "ingest", str(fresh), "--json", CHUNKING__CHUNK_SIZE="500", CHUNKING__CHUNK_OVERLAP="100")
    report = json.loads(done.stdout)
    assert len(report["reindexed"]) == 3 and report["documents_processed"] == 4 and report["errors"] == []
