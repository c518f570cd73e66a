"""Folder ingest takes documents: include/exclude globs, ignore files, hidden entries, on real files."""

from __future__ import annotations

from pathlib import Path

import pytest
from support.folder_corpus import IMAGES, MARKDOWN_PAGES, NOT_DOCUMENTS, make_docs_folder

from ragstream.config import IngestConfig, load_config
from ragstream.documents.selection import select_files


def _names(paths: list[Path], root: Path) -> set[str]:
    return {path.relative_to(root).as_posix() for path in paths}


def test_default_selection_takes_document_types_only(tmp_path: Path):
    root = make_docs_folder(tmp_path / "docs")
    selection = select_files([root], IngestConfig())
    assert _names(selection.files, root) == set(MARKDOWN_PAGES)
    skipped = {Path(entry.source).relative_to(root).as_posix(): entry.reason for entry in selection.skipped}
    assert skipped == dict.fromkeys((*NOT_DOCUMENTS, *IMAGES), "not_a_document")


def test_ignore_files_nest_like_git(tmp_path: Path):
    root = make_docs_folder(tmp_path / "docs")
    (root / ".gitignore").write_text("# build output\nsite/\n*.draft.md\n")
    (root / "site").mkdir()
    (root / "site" / "index.html").write_text("<html><body>built</body></html>")
    (root / "notes.draft.md").write_text("# Draft\n")
    (root / "guide" / ".ragstreamignore").write_text("retries.md\n!keep.draft.md\n")
    (root / "guide" / "keep.draft.md").write_text("# Kept\n")
    (root / ".cache").mkdir()
    (root / ".cache" / "page.md").write_text("# Cached\n")

    selection = select_files([root], IngestConfig())
    assert _names(selection.files, root) == {"index.md", "guide/timeouts.md", "guide/keep.draft.md"}
    reasons = {Path(entry.source).relative_to(root).as_posix(): entry.reason for entry in selection.skipped}
    assert reasons["site"] == "ignored", "an ignored folder counts once and is not walked"
    assert reasons["notes.draft.md"] == reasons["guide/retries.md"] == "ignored"
    assert reasons[".cache"] == "hidden"
    assert ".gitignore" not in reasons and "guide/.ragstreamignore" not in reasons


def test_include_and_exclude_globs(tmp_path: Path):
    root = make_docs_folder(tmp_path / "docs")
    (root / "README.MD").write_text("# Upper-case suffix\n")
    config = IngestConfig(include=["*.md", "*.svg"], exclude=["guide/", "icon.svg"])
    selection = select_files([root], config)
    assert _names(selection.files, root) == {"README.MD", "index.md", "img/architecture.drawio.svg"}
    reasons = {Path(entry.source).relative_to(root).as_posix(): entry.reason for entry in selection.skipped}
    assert reasons["guide"] == reasons["img/icon.svg"] == "excluded"


def test_a_file_named_on_its_own_is_always_taken(tmp_path: Path):
    root = make_docs_folder(tmp_path / "docs")
    script = root / "js" / "custom.js"
    assert select_files([script], IngestConfig()).files == [script]


def test_globs_come_from_a_config_file_and_the_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    config_file = tmp_path / "ragstream.toml"
    config_file.write_text('[ingest]\ninclude = ["*.rst"]\nignore_files = [".docsignore"]\n')
    config = load_config(config_file, data_dir=tmp_path / "index")
    assert config.ingest.include == ["*.rst"] and config.ingest.ignore_files == [".docsignore"]
    monkeypatch.setenv("RAGSTREAM_INGEST__EXCLUDE", '["drafts/"]')
    assert load_config(data_dir=tmp_path / "index").ingest.exclude == ["drafts/"]


def test_ingesting_a_mixed_folder_indexes_only_the_markdown(make_fast_index, tmp_path: Path):
    root = make_docs_folder(tmp_path / "docs")
    rs = make_fast_index()
    report = rs.ingest([root])
    assert report.documents_processed == len(MARKDOWN_PAGES) and report.documents_failed == 0
    assert report.files_skipped == {"not_a_document": len(NOT_DOCUMENTS) + len(IMAGES)}
    assert {Path(record.source).relative_to(root).as_posix() for record in rs.documents()} == set(MARKDOWN_PAGES)
    assert {record.mime for record in rs.documents()} == {"text/markdown"}
    assert rs.store.count() == sum(record.chunk_count for record in rs.documents())
    hits = rs.search("timeout diagram request client server", mode="bm25").hits
    assert hits and all(hit.chunk.metadata.mime == "text/markdown" for hit in hits)


def test_named_svg_script_and_stylesheet_files_fail_as_unsupported_and_named_images_are_read_by_ocr(
        make_fast_index, tmp_path: Path):
    root = make_docs_folder(tmp_path / "docs")
    rs = make_fast_index()
    named = [root / name for name in (*NOT_DOCUMENTS, *IMAGES)]
    report = rs.ingest(named)
    assert report.documents_processed == 0 and report.documents_failed == len(named)
    codes = {Path(failure.source).name: failure.code for failure in report.failures}
    assert {codes[Path(name).name] for name in NOT_DOCUMENTS} == {"unsupported_file_type"}
    # A named image is read by OCR (the ocr extra is installed for the tests): the blank logo has no text, the
    # photo is a JPEG header without an image.
    assert codes["logo.png"] == "empty_document" and codes["photo.jpg"] == "corrupt_document"
    assert rs.documents() == []
