"""A folder of office files, a CSV and a scanned PDF, with bad files among them, through the Python API, the CLI
and the upload endpoint of a real server process: the good files land with their structure, each bad one fails
alone with its error code."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from support.office_files import (
    DATA,
    deck_pptx,
    encrypted,
    handbook_docx,
    ledger_xlsx,
    replace_entry,
    scanned_pdf,
    text_image,
    zip_bomb,
)
from support.polling import finished_job
from support.server_process import RunningServer, running_server
from typer.testing import CliRunner

from ragstream.cli import app
from ragstream.documents import mimes

GOOD = {"handbook.docx": mimes.DOCX, "briefing.pptx": mimes.PPTX, "ledger.xlsx": mimes.XLSX, "stations.csv": mimes.CSV}
BAD = {"bomb.docx": "document_too_large", "locked.xlsx": "encrypted_document", "broken.pptx": "corrupt_document",
       "million.csv": "file_too_large"}
STATIONS_CSV = "Station;Keeper;Fog signal\nSkerryvore;José;horn every 90 s\nBell Rock;Anne;bell\n".encode("cp1252")
BOMB_BYTES = 300 << 20  # past the default limits.max_archive_bytes (256 MiB)


def write_folder(root: Path) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    files = {
        "handbook.docx": handbook_docx(), "briefing.pptx": deck_pptx(), "ledger.xlsx": ledger_xlsx(),
        "stations.csv": STATIONS_CSV, "bomb.docx": zip_bomb(handbook_docx(), inflated_bytes=BOMB_BYTES),
        "locked.xlsx": encrypted(ledger_xlsx()),
        "broken.pptx": replace_entry(deck_pptx(), "ppt/presentation.xml", b"<p:presentation"),
        "million.csv": b"n\n" + b"".join(b"%d\n" % n for n in range(1_000_000)),
    }
    for name, data in files.items():
        (root / name).write_bytes(data)
    return root


def test_the_python_api_ingests_the_good_files_and_reports_each_bad_one(make_fast_index, tmp_path: Path) -> None:
    rs = make_fast_index()
    report = rs.ingest([write_folder(tmp_path / "docs")])
    assert report.documents_processed == len(GOOD) and report.documents_failed == len(BAD)
    assert {Path(failure.source).name: failure.code for failure in report.failures} == BAD
    assert report.files_skipped == {}, "every office type is a document type of folder ingest"
    assert any("skipped hidden sheets Salaries" in warning for warning in report.warnings)
    assert {Path(doc.source).name: doc.mime for doc in rs.documents()} == GOOD
    notes = rs.search("foghorn drill keepers", mode="bm25", filters={"mime": mimes.PPTX}).hits[0].chunk.metadata
    assert (notes.page, notes.header_path, notes.title) == (1, "Storm season > Speaker notes", "Winter Briefing")
    leave = rs.search("annual leave days", mode="bm25").hits[0].chunk.metadata
    assert (leave.header_path, leave.title) == ("Leave > Annual leave", "Lighthouse Staff Handbook")
    fuel = rs.search("barrels Skerryvore cost", mode="bm25", filters={"mime": mimes.XLSX}).hits[0].chunk
    assert fuel.metadata.header_path == "Fuel" and "| Skerryvore | 40 | 12.5 | 500 |" in fuel.text
    signal = rs.search("fog signal horn", mode="bm25", filters={"mime": mimes.CSV}).hits[0].chunk
    assert "| Skerryvore | José | horn every 90 s |" in signal.text


@pytest.mark.slow
def test_a_scanned_pdf_is_searchable_and_its_chunks_marked_ocr(make_fast_index, tmp_path: Path) -> None:
    folder = tmp_path / "scans"
    folder.mkdir()
    (folder / "report.pdf").write_bytes(scanned_pdf([text_image()]))
    (folder / "tika-ocr-scan.pdf").write_bytes((DATA / "tika-ocr-scan.pdf").read_bytes())
    rs = make_fast_index()
    report = rs.ingest([folder])
    assert report.documents_processed == 2 and not report.failures
    hits = rs.search("Skerryvore lamp relit", mode="bm25", filters={"ocr": True}).hits
    assert hits and hits[0].chunk.metadata.ocr and hits[0].chunk.metadata.page == 1
    assert rs.search("Happy New Year", mode="bm25", filters={"ocr": True}).hits
    assert not rs.search("Skerryvore lamp relit", mode="bm25", filters={"ocr": False}).hits


runner = CliRunner()


def test_the_cli_ingests_a_folder_of_office_files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                  hash_embedder_by_default) -> None:
    monkeypatch.setenv("RAGSTREAM_DATA_DIR", str(tmp_path / "index"))
    folder = write_folder(tmp_path / "docs")
    result = runner.invoke(app, ["ingest", str(folder), "--json"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert report["documents_processed"] == len(GOOD)
    assert {Path(failure["source"]).name: failure["code"] for failure in report["failures"]} == BAD
    summary = runner.invoke(app, ["ingest", str(folder), "--verbose"])
    assert "encrypted_document" in summary.stdout and "password-protected" in summary.stdout
    found = runner.invoke(app, ["search", "foghorn drill", "--mode", "bm25", "--filter", f"mime={mimes.PPTX}", "--json"])
    assert found.exit_code == 0, found.output
    assert json.loads(found.stdout)["hits"][0]["chunk"]["metadata"]["header_path"] == "Storm season > Speaker notes"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    with running_server(tmp_path_factory.mktemp("formats"), hash_embedder=True) as running:
        yield running


def test_the_upload_endpoint_takes_office_files_and_refuses_the_bad_ones(server: RunningServer, tmp_path: Path) -> None:
    folder = write_folder(tmp_path / "docs")
    small = [name for name in (*GOOD, *BAD) if name != "million.csv"]
    files = [("files", (name, (folder / name).read_bytes())) for name in small]
    with httpx.Client(base_url=server.url, timeout=httpx.Timeout(180.0)) as api:
        response = api.post("/api/documents", files=files)
        assert response.status_code == 201, response.text
        results = {item["filename"]: item for item in response.json()["files"]}
        assert {name for name, item in results.items() if item["status"] == "ingested"} == set(GOOD)
        assert {name: results[name]["error"]["code"] for name in BAD if name in small} == {
            name: code for name, code in BAD.items() if name in small}
        assert any("Salaries" in warning for warning in results["ledger.xlsx"]["warnings"])
        assert all(results[name]["chunks"] >= 1 for name in GOOD)
        hits = api.post("/api/search", json={"query": "foghorn drill", "mode": "bm25"}).json()["hits"]
        assert hits[0]["chunk"]["metadata"]["page"] == 1
        assert hits[0]["chunk"]["metadata"]["header_path"] == "Storm season > Speaker notes"
        only_bad = api.post("/api/documents", files=[("files", ("locked.xlsx", (folder / "locked.xlsx").read_bytes()))])
        assert only_bad.status_code == 422 and only_bad.json()["error"]["code"] == "encrypted_document"
        # Megabytes go to a background job (server.background_ingest_bytes): the million rows fail there; a job whose
        # every file failed ends failed.
        big = api.post("/api/documents", files=[("files", ("million.csv", (folder / "million.csv").read_bytes()))])
        assert big.status_code == 202, big.text
        job = finished_job(api, big.json()["id"])
        assert job["state"] == "failed" and job["files"][0]["error"]["code"] == "file_too_large"
        page = api.get("/ui/documents.html")
        assert page.status_code == 200 and ".docx" in page.text and ".xlsx" in page.text and ".csv" in page.text




def test_the_upload_label_names_every_format_the_picker_accepts() -> None:
    """The Documents page's upload label names each kind of file its picker offers (office files, EPUB and images
    are read, not only PDF, Markdown, HTML and text)."""
    import re

    import ragstream

    page = (Path(ragstream.__file__).parent / "server" / "static" / "documents.html").read_text(encoding="utf-8")
    label = re.search(r'<label for="files">Files <span class="muted">\(([^)]*)\)', page)
    accept = re.search(r'<input id="files"[^>]* accept="([^"]+)"', page)
    assert label and accept
    families = {"pdf": "PDF", "md": "Markdown", "markdown": "Markdown", "txt": "text", "rst": "reST", "html": "HTML",
                "htm": "HTML", "docx": "Word", "docm": "Word", "pptx": "PowerPoint", "pptm": "PowerPoint",
                "xlsx": "Excel", "xlsm": "Excel", "csv": "CSV", "tsv": "TSV", "odt": "OpenDocument",
                "odp": "OpenDocument", "ods": "OpenDocument", "epub": "EPUB", "png": "images", "jpg": "images",
                "jpeg": "images", "tif": "images", "tiff": "images"}
    for extension in accept.group(1).split(","):
        assert families[extension.lstrip(".")] in label.group(1), extension
