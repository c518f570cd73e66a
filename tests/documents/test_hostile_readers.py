"""Hostile documents, made in the test, through the readers, the Python API, ``ragstream ingest`` in a child
process and the upload endpoint of a real server: each fails alone with its documented code (or is read whole),
and the good files beside them land.

The cases: OpenDocument text nested 5,000 levels deep; odd zip entries (flagged encrypted, Deflate64, a broken
deflate stream) in ``[Content_Types].xml``, ``mimetype``, ``content.xml`` and an EPUB's package file; a 50 MiB
one-line CSV; a 200 KB .docx of 1.85 million paragraphs; HTML and EPUB nested 40,000 deep; a PNG declaring
50,000 x 50,000 pixels; a Word table nested in a cell and a run with an unresolved entity (their text kept).
"""

from __future__ import annotations

import json
import logging
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import pytest
from support import hostile_files as hostile
from support.office_files import handbook_docx
from support.required import EXTRAS, unavailable
from support.server_process import FAST_SETTINGS, SERVE_WITH_HASH_EMBEDDER, RunningServer, running_server, server_env

from ragstream.config import load_config
from ragstream.documents import load_bytes
from ragstream.documents.ocr import ocr_installed
from ragstream.errors import CorruptDocumentError, DocumentError, DocumentTooLargeError

CLI_SECONDS = 600
DEEP = 5000
DEEP_MARKUP = 40_000


def _odt_entry(entry: str, how: str) -> Callable[[], bytes]:
    return lambda: hostile.odd_entry(hostile.deep_odt(3), entry, how)


def _docx_entry(entry: str, how: str) -> Callable[[], bytes]:
    return lambda: hostile.odd_entry(handbook_docx(), entry, how)


def _epub_entry(entry: str, how: str) -> Callable[[], bytes]:
    return lambda: hostile.odd_entry(hostile.epub([b"<html><body><p>The lamp.</p></body></html>"]), entry, how)


# File name -> (maker, the code its ingest fails with).
REFUSED: dict[str, tuple[Callable[[], bytes], str]] = {
    "deep-spans.odt": (lambda: hostile.deep_odt(DEEP, "span"), "document_too_large"),
    "deep-lists.odt": (lambda: hostile.deep_odt(DEEP, "list"), "document_too_large"),
    "deep-sections.odt": (lambda: hostile.deep_odt(DEEP, "section"), "document_too_large"),
    "encrypted-types.docx": (_docx_entry("[Content_Types].xml", "encrypted"), "encrypted_document"),
    "deflate64-types.docx": (_docx_entry("[Content_Types].xml", "deflate64"), "corrupt_document"),
    "broken-types.docx": (_docx_entry("[Content_Types].xml", "corrupt"), "corrupt_document"),
    "broken-document.docx": (_docx_entry("word/document.xml", "corrupt"), "corrupt_document"),
    "encrypted-mimetype.odt": (_odt_entry("mimetype", "encrypted"), "encrypted_document"),
    "deflate64-mimetype.odt": (_odt_entry("mimetype", "deflate64"), "corrupt_document"),
    "deflate64-content.odt": (_odt_entry("content.xml", "deflate64"), "corrupt_document"),
    "broken-content.odt": (_odt_entry("content.xml", "corrupt"), "corrupt_document"),
    "encrypted-content.odt": (_odt_entry("content.xml", "encrypted"), "encrypted_document"),
    "broken-package.epub": (_epub_entry("OEBPS/book.opf", "corrupt"), "corrupt_document"),
    "deflate64-chapter.epub": (_epub_entry("OEBPS/c0.xhtml", "deflate64"), "corrupt_document"),
    "one-line.csv": (hostile.one_line_csv, "file_too_large"),
    "many-paragraphs.docx": (hostile.many_paragraphs_docx, "document_too_large"),
}
# File name -> (maker, words its text holds).
READ: dict[str, tuple[Callable[[], bytes], str]] = {
    "nested-table.docx": (hostile.nested_table_docx, "Anne Brodie midnight lantern"),
    "entity.docx": (hostile.entity_docx, "after the entity foghorn"),
    "deep-divs.html": (lambda: hostile.nested_html(DEEP_MARKUP), "The lamp is lit at dusk."),
    "deep-divs.epub": (lambda: hostile.epub([hostile.nested_html(DEEP_MARKUP)]), "The lamp is lit at dusk."),
    "good.docx": (handbook_docx, "twenty-eight days of annual leave"),
}
HUGE_PNG = "huge.png"  # named on its own: folder ingest takes no images by default


@pytest.fixture(scope="module")
def hostile_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("hostile") / "docs"
    folder.mkdir()
    for name, (make, _) in {**REFUSED, **READ}.items():
        (folder / name).write_bytes(make())
    (folder.parent / HUGE_PNG).write_bytes(hostile.huge_png())
    return folder


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    with running_server(tmp_path_factory.mktemp("hostile-server"), hash_embedder=True) as running:
        yield running


def _expected_failures() -> dict[str, str]:
    expected = {name: code for name, (_, code) in REFUSED.items()}
    if ocr_installed():
        expected[HUGE_PNG] = "document_too_large"
    return expected


def _given(folder: Path) -> list[Path]:
    return [folder, *([folder.parent / HUGE_PNG] if ocr_installed() else [])]


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_each_hostile_file_is_refused_with_its_code(name: str, hostile_folder: Path) -> None:
    with pytest.raises(DocumentError) as refused:
        load_bytes((hostile_folder / name).read_bytes(), name, load_config(), source=name)
    assert refused.value.code == REFUSED[name][1], refused.value.message


def test_an_image_of_50000_by_50000_pixels_is_too_large(hostile_folder: Path) -> None:
    if not ocr_installed():
        unavailable("images are read only with the ocr extra (ocr_unavailable without it)", EXTRAS)
    with pytest.raises(DocumentTooLargeError, match=r"ocr\.max_image_pixels"):
        load_bytes((hostile_folder.parent / HUGE_PNG).read_bytes(), HUGE_PNG, load_config(), source=HUGE_PNG)


def test_each_hostile_file_fails_alone_through_the_python_api(make_fast_index, hostile_folder: Path) -> None:
    rs = make_fast_index()
    report = rs.ingest(_given(hostile_folder))
    assert {Path(failure.source).name: failure.code for failure in report.failures} == _expected_failures()
    assert report.documents_processed == len(READ)
    for name, (_, words) in READ.items():
        hits = rs.search(words, mode="bm25", top_k=3).hits
        assert any(Path(hit.chunk.metadata.source).name == name and words in hit.chunk.text for hit in hits), name


def test_each_hostile_file_fails_alone_through_the_cli(hostile_folder: Path, tmp_path: Path) -> None:
    env = server_env(tmp_path / "index", **FAST_SETTINGS)
    command = [sys.executable, "-c", SERVE_WITH_HASH_EMBEDDER, "ingest", *map(str, _given(hostile_folder)), "--json"]
    result = subprocess.run(command, env=env, capture_output=True, text=True, timeout=CLI_SECONDS)
    assert result.returncode == 0, result.stderr[-3000:]
    assert "Traceback" not in result.stderr
    report = json.loads(result.stdout)
    assert {Path(failure["source"]).name: failure["code"] for failure in report["failures"]} == _expected_failures()
    assert report["documents_processed"] == len(READ)


@pytest.mark.parametrize(("name", "status"), [
    ("deep-spans.odt", 413), ("broken-content.odt", 422), ("encrypted-mimetype.odt", 422), ("deflate64-types.docx", 422),
])
def test_an_upload_of_a_hostile_file_answers_its_error_not_a_500(name: str, status: int, hostile_folder: Path,
                                                                 server: RunningServer) -> None:
    with httpx.Client(base_url=server.url, timeout=60) as api:
        response = api.post("/api/documents", files=[("files", (name, (hostile_folder / name).read_bytes()))])
        assert response.status_code == status, response.text
        assert response.json()["error"]["code"] == REFUSED[name][1]
        assert "Traceback" not in server.log_text()


def test_a_word_table_nested_in_a_cell_and_the_text_after_an_entity_are_kept() -> None:
    config = load_config()
    nested = load_bytes(hostile.nested_table_docx(), "nested.docx", config, source="nested.docx").text
    assert "| Skerryvore | Keeper Watch Anne Brodie midnight lantern |" in nested
    entity = load_bytes(hostile.entity_docx(), "entity.docx", config, source="entity.docx").text
    assert entity.startswith("Before the entity") and entity.endswith("after the entity foghorn")


@pytest.mark.parametrize(("name", "make"), [
    ("deep.html", lambda: hostile.nested_html(DEEP_MARKUP)),
    ("deep.epub", lambda: hostile.epub([hostile.nested_html(DEEP_MARKUP)])),
    ("shapes.pptx", lambda: hostile.many_shapes_pptx(300)),
])
def test_html_epub_and_pptx_reading_is_bounded_in_time(name: str, make: Callable[[], bytes]) -> None:
    # A bound far below what any file takes: the first look at the clock (after 256 tags or shapes) refuses it.
    config = load_config(limits={"max_read_seconds": 1e-9})
    with pytest.raises(DocumentTooLargeError, match=r"limits\.max_read_seconds"):
        load_bytes(make(), name, config, source=name)


def test_the_xml_bounds_are_settings() -> None:
    data = hostile.deep_odt(40, "section")
    assert "lighthouse" in load_bytes(data, "d.odt", load_config(), source="d.odt").text
    with pytest.raises(DocumentTooLargeError, match=r"limits\.max_xml_depth"):
        load_bytes(data, "d.odt", load_config(limits={"max_xml_depth": 32}), source="d.odt")
    paragraphs = hostile.many_paragraphs_docx(2000)
    assert load_bytes(paragraphs, "p.docx", load_config(), source="p.docx").text.count("x") == 2000
    with pytest.raises(DocumentTooLargeError, match=r"limits\.max_xml_elements"):
        load_bytes(paragraphs, "p.docx", load_config(limits={"max_xml_elements": 5000}), source="p.docx")


def test_a_spreadsheet_is_read_within_its_xml_bounds() -> None:
    rows = [b"<table:table-row><table:table-cell><text:p>k%d</text:p></table:table-cell></table:table-row>" % n
            for n in range(3000)]
    text = load_bytes(hostile.ods(rows), "log.ods", load_config(), source="log.ods").text
    assert text.startswith("# Log\n\n| k0 |") and "| k2999 |" in text
    empty = [b"<table:table-row>" + b"<table:table-cell/>" * 100 + b"</table:table-row>"] * 300
    with pytest.raises(DocumentTooLargeError, match=r"limits\.max_xml_elements"):
        load_bytes(hostile.ods(empty), "empty.ods", load_config(limits={"max_xml_elements": 5000}), source="e.ods")
    deep = [b"<table:table-row><table:table-cell><text:p>" + b"<text:span>" * DEEP + b"x" + b"</text:span>" * DEEP
            + b"</text:p></table:table-cell></table:table-row>"]
    with pytest.raises(DocumentTooLargeError, match=r"limits\.max_xml_depth"):
        load_bytes(hostile.ods(deep), "deep.ods", load_config(), source="deep.ods")


def test_a_csv_row_is_refused_by_its_columns_before_it_is_built() -> None:
    wide = b"a,b\n" + b'"one, quoted",' * 1500 + b"x\n"
    with pytest.raises(DocumentError) as refused:
        load_bytes(wide, "wide.csv", load_config(), source="wide.csv")
    assert refused.value.code == "file_too_large" and "limits.max_table_columns" in refused.value.message
    quoted = b"a,b\n" + b'"' + b"x," * 5000 + b'",y\n'  # one quoted field holding 5,000 commas: two columns
    assert "| a | b |" in load_bytes(quoted, "quoted.csv", load_config(), source="quoted.csv").text


def test_a_reader_failing_unexpectedly_is_a_corrupt_document_logged_with_its_traceback(
        monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    # A bug in a reader cannot be produced by a file once the readers handle every file we know of: the reader is
    # replaced by one that fails as a bug would.
    from ragstream.documents.office import docx

    def broken(data: bytes, bounds: object) -> None:
        raise ZeroDivisionError("a bug")

    monkeypatch.setattr(docx, "read_docx", broken)
    with caplog.at_level(logging.ERROR, logger="ragstream.documents"), pytest.raises(CorruptDocumentError):
        load_bytes(handbook_docx(), "bug.docx", load_config(), source="bug.docx")
    assert any(record.exc_info and record.exc_info[0] is ZeroDivisionError for record in caplog.records)
