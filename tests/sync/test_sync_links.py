"""``Ragstream.sync`` and ``ragstream sync`` (as a real process) on folders holding real symlinks, symlink loops
and a FIFO (``ingest.follow_symlinks``), and on folders first ingested with ``ingest``: a sync makes the index match
the folder whoever ingested its documents."""

from __future__ import annotations

import json
import os
from pathlib import Path

from support.folder_corpus import write_text
from support.hash_embedder import HashEmbedder
from support.index_fixtures import FAST_DEFAULTS
from support.link_folders import DEFAULT_SKIPPED, SECRET_WORD, make_linked_folder, run_cli

from ragstream import Ragstream, load_config


def _open(tmp_path: Path, embedder: HashEmbedder, **overrides: object) -> Ragstream:
    config = load_config(data_dir=tmp_path / "index", **{**FAST_DEFAULTS, **overrides})
    return Ragstream(config, embedder=embedder)


def _names(sources: list[str]) -> list[str]:
    return sorted(Path(source).name for source in sources)


def _documents(rs: Ragstream) -> list[str]:
    return _names([record.source for record in rs.documents()])


def _leaked(rs: Ragstream) -> bool:
    return bool(rs.search(SECRET_WORD, mode="bm25").hits)


def test_sync_follows_links_only_inside_the_root_and_loops_do_not_stop_it(tmp_path: Path, hash_embedder: HashEmbedder):
    linked = make_linked_folder(tmp_path)
    with _open(tmp_path, hash_embedder) as rs:
        report = rs.sync([linked.docs])  # was: OSError ELOOP, nothing synced
        assert _names(report.added) == ["guide.md", "real.md"] and report.failures == []
        assert {Path(entry.source).name: entry.reason for entry in report.skipped_files} == DEFAULT_SKIPPED
        assert _documents(rs) == ["guide.md", "real.md"] and not _leaked(rs)
        root = str(linked.docs.resolve())
        assert {record.source for record in rs.documents()} <= {str((linked.docs / "guide.md").resolve()),
                                                                 str((linked.docs / "inner" / "real.md").resolve())}
        assert {record.root for record in rs.documents()} == {root}
        assert rs.sync([linked.docs]).changes == 0


def test_documents_a_link_brought_in_go_when_the_policy_no_longer_follows_it(tmp_path: Path,
                                                                               hash_embedder: HashEmbedder):
    linked = make_linked_folder(tmp_path)
    with _open(tmp_path, hash_embedder, ingest={"follow_symlinks": "always"}) as rs:
        assert "passwd" in _names(rs.sync([linked.docs]).added) and _leaked(rs)  # what a sync did before
    with _open(tmp_path, hash_embedder) as rs:
        report = rs.sync([linked.docs])
        assert _names(report.removed) == ["note.md", "passwd", "secret.md"]
        assert not _leaked(rs) and _documents(rs) == ["guide.md", "real.md"]


def test_a_file_swapped_for_a_link_during_a_sync_is_not_read(tmp_path: Path, hash_embedder: HashEmbedder):
    """One document committed at a time; after the first, a file the sync already compared is swapped for a link
    to outside: reading it is refused (outside_root), the rest lands."""
    folder = tmp_path / "docs"
    write_text(folder / "a.md", "# A\n\nAnchors hold ships in the harbour.\n")
    write_text(folder / "b.md", "# B\n\nBuoys mark the channel.\n")
    secret = write_text(tmp_path / "secret.txt", f"{SECRET_WORD} credentials\n")
    swapped: list[str] = []

    def swap(outcome: str, source: str) -> None:
        if not swapped:
            (folder / "b.md").unlink()
            os.symlink(secret, folder / "b.md")
            swapped.append(source)

    with _open(tmp_path, hash_embedder, ingest={"write_batch_chunks": 1}) as rs:
        report = rs.sync([folder], progress=swap)
        assert _names(report.added) == ["a.md"]
        assert [(Path(failure.source).name, failure.code) for failure in report.failures] == [("b.md", "outside_root")]
        assert not _leaked(rs)


def test_sync_removes_what_ingest_put_there(tmp_path: Path, hash_embedder: HashEmbedder):
    folder = tmp_path / "docs"
    for name in ("one.md", "two.md", "three.md", "four.md", "five.md"):
        write_text(folder / name, f"# {name}\n\nThe {name[:-3]} page about harbour pilots.\n")
    write_text(folder / "drafts" / "draft.md", "# Draft\n\nAn unfinished draft about zeppelins.\n")
    with _open(tmp_path, hash_embedder) as rs:
        rs.ingest([folder])
        (folder / "five.md").unlink()
        write_text(folder / ".ragstreamignore", "drafts/\n")
        report = rs.sync([folder])  # was: 5 adopted, 0 removed; five.md and the draft stayed searchable
        assert _names(report.adopted) == ["four.md", "one.md", "three.md", "two.md"]
        assert _names(report.removed) == ["draft.md", "five.md"] and report.added == []
        assert _documents(rs) == ["four.md", "one.md", "three.md", "two.md"]
        assert not rs.search("zeppelins", mode="bm25").hits

        # a file ingested later, outside any sync, is the root's too once gone
        write_text(folder / "six.md", "# Six\n\nSix lighthouses line the coast.\n")
        rs.ingest([folder / "six.md"])
        (folder / "six.md").unlink()
        assert _names(rs.sync([folder]).removed) == ["six.md"]


def test_a_renamed_file_ingested_before_is_relinked_by_the_first_sync(tmp_path: Path, hash_embedder: HashEmbedder):
    folder = tmp_path / "docs"
    write_text(folder / "old.md", "# Old\n\nTide tables for the estuary.\n")
    with _open(tmp_path, hash_embedder) as rs:
        rs.ingest([folder])
        (folder / "old.md").rename(folder / "new.md")
        report = rs.sync([folder])
        assert [(Path(moved.previous_source).name, Path(moved.source).name) for moved in report.renamed] == [
            ("old.md", "new.md")]
        assert report.embedding_count == 0 and _documents(rs) == ["new.md"]


def test_cli_sync_of_links_and_of_an_ingested_folder(tmp_path: Path):
    """``ragstream ingest`` then ``ragstream sync`` as real processes, as the issue's commands ran."""
    linked = make_linked_folder(tmp_path)
    data_dir = tmp_path / "index"
    done = run_cli(data_dir, "sync", str(linked.docs))
    assert done.returncode == 0, done.stderr
    lines = done.stdout.strip().splitlines()
    assert lines[0].startswith("synced 1 root: 2 added, 0 changed, 0 renamed, 0 removed"), done.stdout
    assert lines[1].startswith("skipped 8 links and special files: 3 symlink loop, 2 symlink to outside the folder")
    assert "Traceback" not in done.stderr
    search = run_cli(data_dir, "search", SECRET_WORD, "--mode", "bm25", "--json")
    assert search.returncode == 0 and json.loads(search.stdout)["hits"] == []

    folder = tmp_path / "plain"
    for name in ("one.md", "two.md", "three.md", "four.md", "five.md"):
        write_text(folder / name, f"# {name}\n\nThe {name[:-3]} note about mooring lines.\n")
    ingested = run_cli(data_dir, "ingest", str(folder))
    assert ingested.returncode == 0 and ingested.stdout.startswith("processed 5"), ingested.stdout
    (folder / "five.md").unlink()
    synced = run_cli(data_dir, "sync", str(folder), "--json")
    assert synced.returncode == 0, synced.stderr
    report = json.loads(synced.stdout)
    assert _names(report["removed"]) == ["five.md"] and len(report["adopted"]) == 4
    listed = run_cli(data_dir, "docs", "list", "--json")
    assert "five.md" not in listed.stdout and "four.md" in listed.stdout
