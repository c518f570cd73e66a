"""Symlinks and special files in a folder given to ingest (``ingest.follow_symlinks``), on real links, loops and
FIFOs on disk: the walk follows a file link only inside the folder and skips the rest with a reason; the read
checks again, so a file swapped for a link (or a FIFO) after the walk is refused, not read or waited on; the
``ragstream ingest`` command line in its own process."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
from support.folder_corpus import write_text
from support.link_folders import DEFAULT_SKIPPED, DEFAULT_TAKEN, SECRET_WORD, make_linked_folder, run_cli

from ragstream.config import IngestConfig, load_config
from ragstream.documents.file_access import open_document
from ragstream.documents.loaders import load_file
from ragstream.documents.selection import select_files
from ragstream.errors import NotARegularFileError, OutsideRootError


def _taken(paths: list[Path]) -> list[str]:
    return sorted(path.name for path in paths)


def _skipped(selection) -> dict[str, str]:
    return {Path(entry.source).name: entry.reason for entry in selection.skipped}


def test_a_walk_follows_file_links_inside_the_folder_only_and_says_why_it_skips(tmp_path: Path):
    linked = make_linked_folder(tmp_path)
    selection = select_files([linked.docs], IngestConfig())  # was: OSError ELOOP out of the walk
    assert _taken(selection.files) == sorted(DEFAULT_TAKEN)
    assert _skipped(selection) == DEFAULT_SKIPPED
    real_root = os.path.realpath(linked.docs)
    assert set(selection.within.values()) == {real_root}


def test_the_follow_symlinks_policies(tmp_path: Path):
    linked = make_linked_folder(tmp_path)
    never = select_files([linked.docs], IngestConfig(follow_symlinks="never"))
    assert _taken(never.files) == ["guide.md", "real.md"]
    assert _skipped(never)["alias.md"] == "symlink" and _skipped(never)["passwd.txt"] == "symlink"
    anywhere = select_files([linked.docs], IngestConfig(follow_symlinks="always"))
    assert _taken(anywhere.files) == ["alias.md", "guide.md", "passwd.txt", "real.md", "sibling.md", "to_hidden.md"]
    assert {name: reason for name, reason in _skipped(anywhere).items() if "symlink" in reason} == {
        "loop_a.md": "symlink_loop", "loop_b.md": "symlink_loop", "self.md": "symlink_loop",
        "broken.md": "broken_symlink", "elsewhere": "folder_symlink"}  # loops and folders: never, whatever the policy
    with pytest.raises(ValueError):
        IngestConfig(follow_symlinks="sometimes")


def test_a_link_named_on_its_own_is_the_users_choice(tmp_path: Path):
    linked = make_linked_folder(tmp_path)
    selection = select_files([linked.docs / "sibling.md"], IngestConfig())
    assert selection.files == [linked.docs / "sibling.md"] and selection.within == {}
    doc = load_file(linked.docs / "sibling.md", load_config())
    assert doc.source == str(linked.sibling_secret.resolve()) and SECRET_WORD in doc.pages[0].text


def test_a_fifo_named_on_its_own_fails_without_blocking(tmp_path: Path):
    fifo = tmp_path / "pipe.md"
    os.mkfifo(fifo)
    with pytest.raises(NotARegularFileError) as raised:  # was: open() waited forever for a writer
        load_file(fifo, load_config())
    assert raised.value.code == "not_a_regular_file"


def test_the_read_checks_again_what_the_walk_took(tmp_path: Path):
    """A file swapped between the walk and the read: for a link out of the folder, for a FIFO, or a folder on
    its way swapped for a link elsewhere (real swaps on disk, between the two calls)."""
    linked = make_linked_folder(tmp_path)
    config = load_config()
    selection = select_files([linked.docs], config.ingest)
    within = selection.within
    guide, real, alias = (linked.docs / "guide.md", linked.docs / "inner" / "real.md", linked.docs / "alias.md")
    assert {guide, real, alias} <= set(within)
    assert load_file(alias, config, root=within[alias]).source == str(real.resolve())  # a link inside: followed

    guide.unlink()
    os.symlink(linked.system_secret, guide)
    with pytest.raises(OutsideRootError) as raised:
        load_file(guide, config, root=within[guide])
    assert raised.value.code == "outside_root" and SECRET_WORD not in raised.value.message

    inner = linked.docs / "inner"
    shutil.move(inner, tmp_path / "moved-inner")
    os.symlink(linked.sibling_secret.parent, inner)
    write_text(linked.sibling_secret.parent / "real.md", f"# Real\n\nswapped {SECRET_WORD}\n")
    with pytest.raises(OutsideRootError):
        load_file(real, config, root=within[real])
    with pytest.raises(OutsideRootError):  # the link inside the folder now leads out through the swapped folder
        load_file(alias, config, root=within[alias])

    guide.unlink()
    os.mkfifo(guide)
    with pytest.raises(NotARegularFileError):
        load_file(guide, config, root=within[guide])


def test_never_refuses_a_link_swapped_in_at_the_last_component(tmp_path: Path):
    linked = make_linked_folder(tmp_path)
    guide = linked.docs / "guide.md"
    guide.unlink()
    os.symlink("inner/real.md", guide)  # inside the folder, but never means never
    root = os.path.realpath(linked.docs)
    with pytest.raises(OutsideRootError):
        open_document(guide, root=root, follow="never")
    handle, real = open_document(guide, root=root, follow="inside_root")
    with handle:
        assert real == os.path.realpath(linked.docs / "inner" / "real.md") and handle.read().startswith(b"# Real")


def test_ingest_of_a_swapped_file_reports_it_and_the_rest_lands(make_fast_index, tmp_path: Path):
    """Through the ingestor: one document is committed at a time (write_batch_chunks=1), and after the first one
    the next file the walk took is swapped for a link to outside: it fails with outside_root."""
    linked = make_linked_folder(tmp_path)
    rs = make_fast_index(ingest={"write_batch_chunks": 1})
    swapped: list[str] = []

    def swap(outcome: str, source: str) -> None:
        if not swapped:
            guide = linked.docs / "guide.md"
            guide.unlink()
            os.symlink(linked.system_secret, guide)
            swapped.append(source)

    report = rs.ingest([linked.docs], progress=swap)
    assert Path(swapped[0]).name == "real.md"  # alias.md and inner/real.md are one document; guide.md comes next
    assert [(Path(failure.source).name, failure.code) for failure in report.failures] == [("guide.md", "outside_root")]
    assert not rs.search(SECRET_WORD, mode="bm25").hits


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads files whatever their permissions")
def test_an_unreadable_file_is_skipped_with_its_reason(tmp_path: Path):
    folder = tmp_path / "docs"
    locked = write_text(folder / "locked.md", "# Locked\n")
    write_text(folder / "open.md", "# Open\n")
    locked.chmod(0)
    try:
        selection = select_files([folder], IngestConfig())
    finally:
        locked.chmod(0o600)
    assert _taken(selection.files) == ["open.md"] and _skipped(selection) == {"locked.md": "unreadable"}


def test_cli_ingest_of_a_folder_with_links_loops_and_a_fifo(tmp_path: Path):
    """``ragstream ingest DIR`` as a real process: it ends (no FIFO read, no ELOOP traceback), ingests the
    folder's own files and lists every link and special file it skipped."""
    linked = make_linked_folder(tmp_path)
    data_dir = tmp_path / "index"
    done = run_cli(data_dir, "ingest", str(linked.docs), "--json")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["documents_processed"] == 2 and report["failures"] == []  # guide.md, real.md (alias.md: the same)
    assert {Path(entry["source"]).name: entry["reason"] for entry in report["skipped_files"]} == DEFAULT_SKIPPED
    assert report["files_skipped"]["symlink_outside_root"] == 2 and report["files_skipped"]["symlink_loop"] == 3

    summary = run_cli(data_dir, "ingest", str(linked.docs))
    assert summary.returncode == 0, summary.stderr
    assert "2 symlink to outside the folder" in summary.stdout and "3 symlink loop" in summary.stdout

    search = run_cli(data_dir, "search", SECRET_WORD, "--mode", "bm25", "--json")
    assert search.returncode == 0, search.stderr
    assert json.loads(search.stdout)["hits"] == []
    listed = run_cli(data_dir, "docs", "list", "--json")
    assert listed.returncode == 0, listed.stderr
    assert SECRET_WORD not in listed.stdout and "passwd" not in listed.stdout and "private" not in listed.stdout
