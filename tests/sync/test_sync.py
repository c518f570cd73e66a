"""``Ragstream.sync`` and ``ragstream sync`` on a real folder of real files and a real index (Qdrant Edge +
SQLite on disk, the hash embedder): adds, edits, deletes, renames without embedding again, exclusions,
temporary files, users' documents, missing roots, the catalog migration, and the CLI's summary and report.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
from support.folder_corpus import write_text
from support.hash_embedder import CountingEmbedder, HashEmbedder
from support.index_fixtures import FAST_DEFAULTS
from typer.testing import CliRunner

from ragstream import Ragstream, load_config
from ragstream.cli import app
from ragstream.documents.loaders import default_document_id
from ragstream.errors import DocumentNotFoundError, RootNotFoundError

runner = CliRunner()



@pytest.fixture
def folder(tmp_path: Path) -> Path:
    """A small documentation folder: Markdown, text and HTML, a subfolder, and editors' temporary files."""
    docs = tmp_path / "docs"
    write_text(docs / "guide.md", "# Timeouts guide\n\nSet a read timeout so a stalled server never blocks the client.\n")
    write_text(docs / "notes.txt", "Connection pools keep sockets open between requests to the same host.\n")
    write_text(docs / "ops" / "retries.md", "# Retries\n\nRetry idempotent requests with exponential backoff and jitter.\n")
    write_text(docs / "drafts" / "idea.md", "# Idea\n\nA draft about zeppelin caching that is not ready.\n")
    write_text(docs / "site.html", "<html><head><title>Proxies</title></head><body><p>Route traffic through a proxy "
                               "with authentication.</p></body></html>")
    for temporary in (".#guide.md", "guide.md~", ".guide.md.swp", "4913", "~$report.md", ".~lock.notes.txt#"):
        write_text(docs / temporary, "an editor's scratch: zeppelin lockfile\n")
    return docs


def _open(tmp_path: Path, embedder: HashEmbedder, **overrides: object) -> Ragstream:
    config = load_config(data_dir=tmp_path / "index", **{**FAST_DEFAULTS, **overrides})
    return Ragstream(config, embedder=embedder)


def _sources(rs: Ragstream) -> set[str]:
    return {Path(record.source).name for record in rs.documents()}


def _top_source(rs: Ragstream, query: str) -> str:
    hits = rs.search(query, mode="bm25", top_k=1).hits
    return Path(hits[0].chunk.metadata.source).name if hits else ""


def test_sync_adds_edits_removes_and_renames_without_embedding_again(tmp_path: Path, folder: Path):
    embedder = CountingEmbedder()
    with _open(tmp_path, embedder) as rs:
        first = rs.sync([folder])
        assert sorted(Path(source).name for source in first.added) == ["guide.md", "idea.md", "notes.txt",
                                                                        "retries.md", "site.html"]
        assert first.removed == [] and first.failures == []
        skipped = {Path(entry.source).name: entry.reason for entry in first.skipped_files}
        assert skipped["~$report.md"] == "temporary"  # an Office owner file would pass ingest.include
        assert {".#guide.md", "guide.md~", ".guide.md.swp", "4913", ".~lock.notes.txt#"} <= set(skipped)
        assert not rs.search("lockfile", mode="bm25").hits
        root = str(folder.resolve())
        assert {record.root for record in rs.documents()} == {root}
        assert first.summary().startswith("synced 1 root: 5 added, 0 changed, 0 renamed, 0 removed, 0 unchanged")

        again = rs.sync([folder])
        assert again.changes == 0 and again.unchanged == 5 and again.embedding_count == 0

        # edit one file, delete another
        write_text(folder / "guide.md", "# Timeouts guide\n\nA connect timeout of five seconds; quokka marker.\n")
        (folder / "ops" / "retries.md").unlink()
        edited = rs.sync([folder])
        assert [Path(source).name for source in edited.changed] == ["guide.md"]
        assert [Path(source).name for source in edited.removed] == ["retries.md"]
        assert _top_source(rs, "quokka marker") == "guide.md"
        assert not rs.search("exponential backoff jitter", mode="bm25").hits
        with pytest.raises(DocumentNotFoundError):
            rs.document(default_document_id(str((folder / "ops" / "retries.md").resolve())))

        # rename (and move) a file: its document follows without a single passage embedded, even with the
        # embedding cache emptied (a re-ingest would have to run the model again)
        old_source = str((folder / "notes.txt").resolve())
        old = rs.document(default_document_id(old_source))
        rs.catalog.connection.db.execute("DELETE FROM embeddings")  # type: ignore[attr-defined]
        before = embedder.passages
        (folder / "notes.txt").rename(folder / "ops" / "pooling.txt")
        moved = rs.sync([folder])
        assert embedder.passages == before and moved.embedding_count == 0 and moved.embedding_cache_hits == 0
        [renamed] = moved.renamed
        assert (renamed.previous_source, Path(renamed.source).name) == (old_source, "pooling.txt")
        assert moved.added == [] and moved.removed == [] and moved.changed == []
        record = rs.document(renamed.document_id)
        assert (record.source, record.title, record.chunk_count, record.checksum) == (
            renamed.source, "pooling", old.chunk_count, old.checksum)
        assert record.first_ingested_at == old.first_ingested_at and record.root == root
        with pytest.raises(DocumentNotFoundError):
            rs.document(old.document_id)
        hit = rs.search("connection pools sockets", mode="bm25", top_k=1).hits[0]
        assert hit.chunk.metadata.source == renamed.source and hit.chunk.metadata.document_id == renamed.document_id
        assert [chunk.metadata.title for chunk in rs.document_chunks(renamed.document_id)] == ["pooling"]
        assert rs.store.count({"document_id": old.document_id}) == 0  # the old version's points are gone
        dense = rs.search("connection pools sockets", mode="dense", top_k=1).hits[0]
        assert dense.chunk.metadata.source == renamed.source  # its vector came along

        assert _sources(rs) == {"guide.md", "idea.md", "pooling.txt", "site.html"}


def test_files_now_excluded_are_removed(tmp_path: Path, folder: Path, hash_embedder: HashEmbedder):
    with _open(tmp_path, hash_embedder) as rs:
        rs.sync([folder])
        write_text(folder / ".ragstreamignore", "drafts/\n")
        report = rs.sync([folder])
        assert [Path(source).name for source in report.removed] == ["idea.md"]
        assert any(entry.reason == "ignored" for entry in report.skipped_files)
    with _open(tmp_path, hash_embedder, ingest={"exclude": ["*.html"]}) as rs:
        report = rs.sync([folder])
        assert [Path(source).name for source in report.removed] == ["site.html"]
        assert _sources(rs) == {"guide.md", "notes.txt", "retries.md"}
    with _open(tmp_path, hash_embedder, ingest={"include": ["*.md"]}) as rs:
        assert [Path(source).name for source in rs.sync([folder]).removed] == ["notes.txt"]


def test_sync_leaves_users_documents_alone_and_adopts_shared_ones(tmp_path: Path, folder: Path):
    embedder = CountingEmbedder()
    with _open(tmp_path, embedder) as rs:
        rs.ingest([folder / "guide.md"], owner="alice")        # a user's document whose file is in the folder
        rs.ingest([folder / "notes.txt"])                       # ingested by the CLI before any sync: shared
        before = embedder.passages
        report = rs.sync([folder])
        assert [Path(source).name for source in report.adopted] == ["notes.txt"]
        assert embedder.passages - before == 3  # idea, retries, site: the adopted file is not embedded again
        assert any("alice" in warning for warning in report.warnings)
        alice = rs.document(default_document_id(str((folder / "guide.md").resolve())))
        assert alice.owner == "alice" and alice.root is None

        (folder / "guide.md").unlink()
        (folder / "notes.txt").unlink()
        report = rs.sync([folder])
        assert [Path(source).name for source in report.removed] == ["notes.txt"]
        assert rs.document(alice.document_id, user="alice").owner == "alice"  # never removed by a sync


def test_a_missing_root_removes_nothing_and_forget_removes_it(tmp_path: Path, folder: Path, hash_embedder: HashEmbedder):
    with _open(tmp_path, hash_embedder) as rs:
        rs.sync([folder])
        root = str(folder.resolve())
        folder.rename(tmp_path / "elsewhere")  # an unmounted disk looks the same
        report = rs.sync([folder])
        assert [(failure.code, failure.source) for failure in report.failures] == [("root_not_found", root)]
        assert len(rs.documents()) == 5
        assert [root_record.root for root_record in rs.roots()] == [root]

        with pytest.raises(RootNotFoundError):
            rs.forget_root(tmp_path / "never-synced")
        forgotten = rs.forget_root(folder)
        assert len(forgotten.removed) == 5 and rs.documents() == [] and rs.roots() == []


def test_roots_registry_keeps_the_last_sync(tmp_path: Path, folder: Path, hash_embedder: HashEmbedder):
    with _open(tmp_path, hash_embedder) as rs:
        rs.sync([folder])
        (folder / "site.html").unlink()
        rs.sync([folder])
        [root] = rs.roots()
        assert (root.root, root.documents, root.watched_until) == (str(folder.resolve()), 4, None)
        assert json.loads(root.last_summary) == {"added": 0, "changed": 0, "renamed": 0, "removed": 1, "unchanged": 4,
                                                 "adopted": 0, "failed": 0, "failures": []}
        assert root.last_sync_at is not None


def test_an_index_from_before_sync_opens_and_its_documents_are_adopted(tmp_path: Path, folder: Path,
                                                                       hash_embedder: HashEmbedder):
    with _open(tmp_path, hash_embedder) as rs:
        rs.ingest([folder])
    with sqlite3.connect(tmp_path / "index" / "catalog.sqlite3") as db:  # the schema before roots existed
        db.execute("DROP INDEX documents_root")
        db.execute("ALTER TABLE documents DROP COLUMN root")
        db.execute("DROP TABLE sync_roots")
    with _open(tmp_path, hash_embedder) as rs:
        assert {record.root for record in rs.documents()} == {None}
        report = rs.sync([folder])
        assert len(report.adopted) == 5 and report.embedding_count == 0 and report.added == []
        roots = {Path(record.source).name: record.root for record in rs.documents()}
        assert roots.pop("~$report.md") is None  # ingest took the Office owner file; sync neither adopts nor removes it
        assert set(roots.values()) == {str(folder.resolve())}


def test_a_file_that_cannot_be_read_is_reported_and_the_rest_lands(tmp_path: Path, folder: Path,
                                                                   hash_embedder: HashEmbedder):
    write_text(folder / "empty.md", "   \n")
    (folder / "broken.pdf").write_bytes(b"%PDF-1.7\nnot really a pdf")
    with _open(tmp_path, hash_embedder) as rs:
        report = rs.sync([folder])
        assert sorted(failure.code for failure in report.failures) == ["corrupt_document", "empty_document"]
        assert len(report.added) == 5
        assert json.loads(rs.roots()[0].last_summary)["failed"] == 2


def test_cli_sync_prints_one_line_and_json(tmp_path: Path, folder: Path, monkeypatch: pytest.MonkeyPatch,
                                           hash_embedder_by_default: HashEmbedder):
    monkeypatch.setenv("RAGSTREAM_DATA_DIR", str(tmp_path / "index"))
    result = runner.invoke(app, ["sync", str(folder)])
    assert result.exit_code == 0, result.output
    assert result.stdout.strip().startswith("synced 1 root: 5 added, 0 changed, 0 renamed, 0 removed")
    assert len(result.stdout.strip().splitlines()) == 1

    (folder / "guide.md").rename(folder / "handbook.md")
    result = runner.invoke(app, ["sync", str(folder), "--json"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert [Path(item["source"]).name for item in report["renamed"]] == ["handbook.md"]
    assert report["embedding_count"] == 0 and report["roots"] == [str(folder.resolve())]

    verbose = runner.invoke(app, ["sync", str(folder), "--verbose"])
    assert verbose.exit_code == 0 and "0 added" in verbose.stdout

    missing = runner.invoke(app, ["sync", str(tmp_path / "nope")])
    assert missing.exit_code == 1 and "root_not_found" in missing.stdout

    forgot = runner.invoke(app, ["sync", "--forget", str(folder), "--json"])
    assert forgot.exit_code == 0, forgot.output
    assert len(json.loads(forgot.stdout)["removed"]) == 5


def test_sync_on_postgres_renames_and_removes_the_same_way(tmp_path: Path, folder: Path, postgres_url: str):
    embedder = CountingEmbedder()
    with _open(tmp_path, embedder, store={"backend": "postgres", "url": postgres_url}) as rs:
        assert len(rs.sync([folder]).added) == 5
        before = embedder.passages
        (folder / "guide.md").rename(folder / "ops" / "timeouts.md")
        (folder / "site.html").unlink()
        report = rs.sync([folder])
        assert [Path(moved.source).name for moved in report.renamed] == ["timeouts.md"]
        assert [Path(source).name for source in report.removed] == ["site.html"]
        assert embedder.passages == before
        hit = rs.search("stalled server read timeout", mode="dense", top_k=1).hits[0]
        assert Path(hit.chunk.metadata.source).name == "timeouts.md"
        assert [(root.root, root.documents) for root in rs.roots()] == [(str(folder.resolve()), 4)]


def test_office_files_sync_like_any_other(tmp_path: Path):
    """The formats ingest reads come with sync: a Word handbook, a deck and a sheet are added, moved without
    embedding again and removed; Office's ``~$`` owner file beside an open document never counts."""
    from support.office_files import deck_pptx, handbook_docx, ledger_xlsx

    folder = tmp_path / "office"
    folder.mkdir()
    (folder / "handbook.docx").write_bytes(handbook_docx())
    (folder / "deck.pptx").write_bytes(deck_pptx())
    (folder / "ledger.xlsx").write_bytes(ledger_xlsx())
    (folder / "~$handbook.docx").write_bytes(b"\x05ragstream-dev" + bytes(148))  # Word's lock while it is open
    embedder = CountingEmbedder()
    with _open(tmp_path, embedder) as rs:
        report = rs.sync([folder])
        assert sorted(Path(source).name for source in report.added) == ["deck.pptx", "handbook.docx", "ledger.xlsx"]
        assert report.failures == [] and "temporary" in report.model_dump()["skipped_files"][0]["reason"]
        before = embedder.passages
        (folder / "handbook.docx").rename(folder / "policies.docx")
        (folder / "deck.pptx").unlink()
        moved = rs.sync([folder])
        assert [Path(item.source).name for item in moved.renamed] == ["policies.docx"]
        assert [Path(source).name for source in moved.removed] == ["deck.pptx"]
        assert embedder.passages == before
        assert _sources(rs) == {"policies.docx", "ledger.xlsx"}
