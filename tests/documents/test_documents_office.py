"""Word, PowerPoint, Excel, CSV/TSV files made with the libraries people write them with: the structure they keep
(headings, slides, sheets, tables with their header row in every chunk) and the bad input they refuse."""

from __future__ import annotations

import io
import zipfile

import pytest
from support.office_files import (
    LONG_TABLE_ROWS,
    deck_pptx,
    encrypted,
    handbook_docx,
    ledger_xlsx,
    lying_sizes,
    many_entries,
    million_row_xlsx,
    openpyxl_xlsx,
    replace_entry,
    zip_bomb,
)

from ragstream.config import RagstreamConfig, load_config
from ragstream.documents import build_chunks, chunk_document, load_bytes, mimes
from ragstream.errors import (
    CorruptDocumentError,
    DocumentTooLargeError,
    EncryptedDocumentError,
    FileTooLargeError,
    UnsupportedFileTypeError,
)
from ragstream.models import Chunk, LoadedDocument

CONFIG = load_config()


def load(data: bytes, name: str, config: RagstreamConfig = CONFIG) -> LoadedDocument:
    return load_bytes(data, name, config, source=f"/docs/{name}")


def chunks(doc: LoadedDocument, config: RagstreamConfig = CONFIG) -> list[Chunk]:
    return build_chunks(doc, chunk_document(doc, config.chunking), generation=1, created_at="2026-01-01T00:00:00Z")


def table_rows(text: str) -> list[str]:
    return [line for line in text.split("\n") if line.startswith("| ")]


def test_docx_headings_become_the_header_path_and_the_title_comes_from_the_core_properties() -> None:
    doc = load(handbook_docx(), "handbook.docx")
    assert doc.mime == mimes.DOCX and doc.title == "Lighthouse Staff Handbook"
    by_section = {chunk.metadata.header_path: chunk for chunk in chunks(doc)}
    assert set(by_section) == {"", "Leave", "Leave > Annual leave", "Rosters"}
    annual = by_section["Leave > Annual leave"]
    assert annual.metadata.section == "Annual leave"
    assert "- Book leave a month ahead\n- Swap shifts only" in annual.text, "list items stay one list"
    rosters = by_section["Rosters"].text
    assert "\\# of keepers per station" in rosters, "a paragraph starting with # is not a heading"
    assert table_rows(rosters)[:2] == ["| Station | Keepers | Relief day |", "| --- | --- | --- |"]


def test_a_long_docx_table_repeats_its_header_row_in_every_chunk() -> None:
    doc = load(handbook_docx(table_rows=LONG_TABLE_ROWS), "handbook.docx")
    with_rows = [chunk for chunk in chunks(doc) if len(table_rows(chunk.text)) > 2]
    assert {chunk.metadata.header_path for chunk in with_rows} == {"Rosters"}
    assert len(with_rows) >= 3, "the table is longer than one chunk"
    for chunk in with_rows:
        rows = table_rows(chunk.text)
        assert rows[:2] == ["| Station | Keepers | Relief day |", "| --- | --- | --- |"]
        assert chunk.text.startswith("# Rosters"), "each chunk repeats its section heading too"
        assert len(chunk.text) <= CONFIG.chunking.chunk_size
    stations = {row.split(" | ")[0] for chunk in with_rows for row in table_rows(chunk.text)[2:]}
    assert stations == {f"| Station {index}" for index in range(LONG_TABLE_ROWS)}


def test_pptx_slides_are_sections_with_their_number_as_page_and_notes_marked() -> None:
    doc = load(deck_pptx(), "briefing.pptx")
    assert doc.mime == mimes.PPTX and doc.title == "Winter Briefing"
    assert [page.number for page in doc.pages] == [1, 2]
    found = {(chunk.metadata.page, chunk.metadata.header_path): chunk.text for chunk in chunks(doc)}
    assert set(found) == {(1, "Storm season"), (1, "Storm season > Speaker notes"), (2, "Fuel stock")}
    assert "- Gales expected from November\n- Double the fuel stock" in found[1, "Storm season"]
    assert "foghorn drill" in found[1, "Storm season > Speaker notes"]
    assert "foghorn" not in found[1, "Storm season"], "notes are their own section"
    assert table_rows(found[2, "Fuel stock"]) == ["| Station | Barrels |", "| --- | --- |", "| Skerryvore | 40 |",
                                                  "| Bell Rock | 35 |"]


def test_xlsx_sheets_are_sections_with_cached_formula_values_and_hidden_sheets_skipped() -> None:
    doc = load(ledger_xlsx(), "ledger.xlsx")
    assert doc.mime == mimes.XLSX and doc.title == "Fuel Ledger"
    assert "Salaries" not in doc.text and "31000" not in doc.text
    assert doc.warnings == ("ledger.xlsx: skipped hidden sheets Salaries (set ingest.read_hidden_sheets to read them)",)
    fuel = next(chunk for chunk in chunks(doc) if chunk.metadata.header_path == "Fuel")
    assert table_rows(fuel.text) == ["| Station | Barrels | Price | Cost |", "| --- | --- | --- | --- |",
                                     "| Skerryvore | 40 | 12.5 | 500 |", "| Bell Rock | 35 | 12.5 | 437.5 |"]
    shown = load(ledger_xlsx(), "ledger.xlsx", load_config(ingest={"read_hidden_sheets": True}))
    assert "| Principal keeper | 31000 |" in shown.text and not shown.warnings


def test_a_long_sheet_is_chunked_by_rows_with_the_header_row_in_every_chunk() -> None:
    doc = load(ledger_xlsx(rows=200), "ledger.xlsx")
    log = [chunk for chunk in chunks(doc) if chunk.metadata.header_path == "Log"]
    assert len(log) >= 5
    for chunk in log:
        assert table_rows(chunk.text)[:2] == ["| Day | Keeper | Entry |", "| --- | --- | --- |"]
    days = {int(row.split(" | ")[0][2:]) for chunk in log for row in table_rows(chunk.text)[2:]}
    assert days == set(range(1, 201))


def test_formulas_without_a_cached_value_give_an_empty_cell_never_a_recalculation() -> None:
    doc = load(openpyxl_xlsx([["a", "b", "sum"], [1, 2, "=A2+B2"]]), "sums.xlsx")
    assert table_rows(doc.text)[2] == "| 1 | 2 |  |", "openpyxl saves no cached value; nothing is recalculated"


def test_csv_dialect_and_encoding_are_sniffed() -> None:
    data = "Station;Keeper;Note\nSkerryvore;José;Relève à 6h\nBell Rock;Anne;\"Fog; heavy\"\n".encode("cp1252")
    doc = load(data, "stations.csv")
    assert doc.mime == mimes.CSV and doc.title == "stations"
    assert table_rows(doc.text) == ["| Station | Keeper | Note |", "| --- | --- | --- |",
                                    "| Skerryvore | José | Relève à 6h |", "| Bell Rock | Anne | Fog; heavy |"]
    tsv = load("Station\tKeeper\nSkerryvore\tJosé\n".encode("utf-16"), "stations.tsv")
    assert tsv.mime == mimes.TSV and table_rows(tsv.text)[2] == "| Skerryvore | José |"


def test_a_long_csv_repeats_its_header_row_in_every_chunk() -> None:
    lines = ["Day,Keeper,Entry"] + [f"{day},Keeper {day % 4},Lamp trimmed and lit at dusk" for day in range(1, 301)]
    pieces = chunks(load("\n".join(lines).encode(), "log.csv"))
    assert len(pieces) >= 5
    assert all(table_rows(chunk.text)[0] == "| Day | Keeper | Entry |" for chunk in pieces)


def test_the_content_decides_the_kind_not_the_name() -> None:
    assert load(ledger_xlsx(), "report.docx").mime == mimes.XLSX, "a .docx that is really a workbook"
    assert load(handbook_docx(), "notes.txt").mime == mimes.DOCX
    assert load(deck_pptx(), "deck.xlsx").mime == mimes.PPTX
    archive = io.BytesIO()
    with zipfile.ZipFile(archive, "w") as plain:
        plain.writestr("readme.txt", "just files")
    with pytest.raises(UnsupportedFileTypeError, match="ZIP archive"):
        load(archive.getvalue(), "bundle.docx")


def test_a_zip_bomb_disguised_as_docx_is_refused_before_it_is_inflated() -> None:
    bomb = zip_bomb(handbook_docx(), inflated_bytes=CONFIG.limits.max_archive_bytes + (1 << 20))
    assert len(bomb) < 1 << 20, "kilobytes on disk"
    with pytest.raises(DocumentTooLargeError, match=r"limits\.max_archive_bytes") as refused:
        load(bomb, "handbook.docx")
    assert refused.value.code == "document_too_large"


def test_a_zip_with_too_many_entries_is_refused() -> None:
    config = load_config(limits={"max_archive_entries": 200})
    with pytest.raises(DocumentTooLargeError, match=r"limits\.max_archive_entries"):
        load(many_entries(ledger_xlsx(), 300), "ledger.xlsx", config)


def test_an_entry_that_inflates_past_its_declared_size_is_corrupt_not_a_bomb() -> None:
    liar = lying_sizes(handbook_docx(), "word/document.xml", declared=100)
    with pytest.raises(CorruptDocumentError):
        load(liar, "handbook.docx")


@pytest.mark.parametrize(("make", "name"), [(handbook_docx, "locked.docx"), (ledger_xlsx, "locked.xlsx"),
                                            (deck_pptx, "locked.pptx")])
def test_password_protected_office_files_are_encrypted_documents(make, name: str) -> None:
    with pytest.raises(EncryptedDocumentError, match="password-protected") as refused:
        load(encrypted(make()), name)
    assert refused.value.code == "encrypted_document"


def test_corrupt_office_files_are_corrupt_documents() -> None:
    whole = handbook_docx()
    with pytest.raises(CorruptDocumentError):
        load(whole[: len(whole) // 2], "truncated.docx")
    with pytest.raises(CorruptDocumentError, match="cannot read the Word document"):
        load(replace_entry(whole, "word/document.xml", b"<w:document><w:body>"), "broken.docx")
    with pytest.raises(CorruptDocumentError, match="cannot read the workbook"):
        load(replace_entry(ledger_xlsx(), "xl/workbook.xml", b"not xml"), "broken.xlsx")
    with pytest.raises(CorruptDocumentError):
        load(replace_entry(deck_pptx(), "ppt/presentation.xml", b"<p:presentation"), "broken.pptx")


def test_a_sheet_of_a_million_rows_is_refused_as_file_too_large() -> None:
    # Reading stops at the first row past the limit: a lower limit keeps the test quick (openpyxl reads ~10k rows/s).
    with pytest.raises(FileTooLargeError, match="more than 10000 rows") as refused:
        load(million_row_xlsx(), "million.xlsx", load_config(limits={"max_table_rows": 10_000}))
    assert refused.value.code == "file_too_large"
    csv_rows = b"n\n" + b"".join(b"%d\n" % n for n in range(1_000_000))
    with pytest.raises(FileTooLargeError, match=r"limits\.max_table_rows"):
        load(csv_rows, "million.csv")


def test_a_row_wider_than_the_column_limit_is_refused() -> None:
    config = load_config(limits={"max_table_columns": 10})
    with pytest.raises(FileTooLargeError, match=r"limits\.max_table_columns"):
        load(",".join(str(n) for n in range(20)).encode(), "wide.csv", config)
    assert load(",".join(str(n) for n in range(10)).encode(), "fits.csv", config).text.count("|") == 22
