"""Real files from Apache POI's and Apache Tika's test data (tests/data/office/SOURCES.md): what Word, PowerPoint,
Excel, LibreOffice and EPUB writers really produce, read with their structure, and the real protected ones refused."""

from __future__ import annotations

import zipfile

import pytest
from support.office_files import DATA

from ragstream.config import load_config
from ragstream.documents import build_chunks, chunk_document, load_file, mimes
from ragstream.errors import EncryptedDocumentError, UnsupportedFileTypeError
from ragstream.models import Chunk, LoadedDocument

CONFIG = load_config()


def load(name: str) -> LoadedDocument:
    return load_file(DATA / name, CONFIG)


def chunks(doc: LoadedDocument) -> list[Chunk]:
    return build_chunks(doc, chunk_document(doc, CONFIG.chunking), generation=1, created_at="2026-01-01T00:00:00Z")


def paths(doc: LoadedDocument) -> set[str]:
    return {chunk.metadata.header_path for chunk in chunks(doc)}


def test_a_word_essay_keeps_its_outline_and_lists() -> None:
    doc = load("worldview-essay.docx")
    # The core title is Word's default ("Word Document"): the Title paragraph names the document instead.
    assert doc.mime == mimes.DOCX and doc.title == "Personal Worldview Essay"
    assert {"Basics", "Body > Introduction", "Body > Body Paragraphs > Your worldview",
            "Body > Body Paragraphs > The origins of your worldviews", "Body > Conclusion", "Essay Memo"} <= paths(doc)
    basics = next(chunk for chunk in chunks(doc) if chunk.metadata.header_path == "Basics")
    assert "- The essay should be at least 1200 words" in basics.text


def test_a_word_document_with_a_table_nested_in_a_table() -> None:
    doc = load("sample-word-document.docx")
    assert doc.title == "Sample Word Document"
    assert "Heading Level 1 > Heading Level 2 > Heading Level 3" in paths(doc)
    # The second row's cell holds a nested table: its rows are that cell's text, not lost.
    assert ("| This is a table |  |\n| --- | --- |\n|  | Nested table More of our nested table |\n"
            "| The table has things in it |  |") in doc.text


def test_a_macro_enabled_word_file_is_read_and_its_macros_left_alone() -> None:
    with zipfile.ZipFile(DATA / "simple-macro.docm") as package:
        assert "word/vbaProject.bin" in package.namelist(), "the sample really carries a VBA project"
    doc = load("simple-macro.docm")
    assert doc.mime == mimes.DOCX and doc.text == "This is a macro word processing document"


def test_a_powerpoint_deck_has_a_section_per_slide_with_its_notes() -> None:
    doc = load("sample-show.pptx")
    assert doc.mime == mimes.PPTX and doc.title == "SlideShow Sample"
    found = {(chunk.metadata.page, chunk.metadata.header_path): chunk.text for chunk in chunks(doc)}
    assert set(found) == {(1, "Title of the first slide"), (1, "Title of the first slide > Speaker notes"),
                          (2, "This is the second slide"), (2, "This is the second slide > Speaker notes")}
    assert "I am the notes of the first slide" in found[1, "Title of the first slide > Speaker notes"]
    assert "- It has bullet points on it" in found[2, "This is the second slide"]


def test_a_macro_enabled_deck_is_read() -> None:
    doc = load("attachment-test.pptm")
    assert doc.mime == mimes.PPTX and doc.title == "Attachment Test" and [p.number for p in doc.pages] == [1, 2, 3]
    assert "- Black Panther" in doc.pages[2].text


def test_an_excel_workbook_gives_the_values_excel_cached_for_its_formulas() -> None:
    doc = load("data-table-cities.xlsx")
    assert doc.mime == mimes.XLSX and {"Formula", "Table", "PivotTable"} <= paths(doc)
    formula = next(page.text for page in doc.pages if page.text.startswith("# Formula"))
    # Cells such as =BigCity[[#Totals],[Latitude]] give the totals Excel saved.
    assert "| 25.3966666666667 | 70.4666666666667 | 198905700 |" in formula
    assert "Total city proper population in world's 12 largest cities" in formula
    assert "| Shanghai, China | 31.23 | 121.5 | 24256800 |" in doc.text


def test_hidden_sheets_are_skipped_with_a_warning() -> None:
    doc = load("two-sheets-one-hidden.xlsx")
    assert doc.text == "# Sheet2\n\n| Sheet2A1 |\n| --- |"
    assert doc.warnings == ("two-sheets-one-hidden.xlsx: skipped hidden sheets Sheet1 (set ingest.read_hidden_sheets "
                            "to read them)",)
    macro = load("crossref-suffix-generator.xlsm")
    assert macro.mime == mimes.XLSX and paths(macro) == {"Form"}
    assert "Suffix generator instructions" in macro.text and "RANDBETWEEN" not in macro.text


@pytest.mark.parametrize("name", ["password-is-pass.docx", "protected-passtika.xlsx", "tika-encrypted.odt"])
def test_real_password_protected_files_are_encrypted_documents(name: str) -> None:
    with pytest.raises(EncryptedDocumentError, match="password-protected"):
        load(name)


def test_a_legacy_excel_file_is_refused_naming_its_format() -> None:
    with pytest.raises(UnsupportedFileTypeError, match=r"Excel 97-2003 workbook \(\.xls\); save it as \.docx, \.xlsx"):
        load("legacy-excel-97.xls")


def test_an_epub_is_read_chapter_by_chapter_through_the_html_loader() -> None:
    doc = load("tika-epub.epub")
    assert doc.mime == mimes.EPUB and doc.title == "An ePub for Tika" and len(doc.pages) == 3
    assert {"Chapter 1", "Chapter 2 > Subchapter 2.2"} <= paths(doc)
    assert "- First item" in doc.text


def test_opendocument_text_presentation_and_spreadsheet() -> None:
    text = load("tika-odf-ooo3.odt")
    assert text.mime == mimes.ODT and text.title == "Apache Tika" and "Apache Tika Test Document" in paths(text)
    assert "- First item\n- Second item\n- Third item" in text.text
    slides = load("libreoffice-impress.odp")
    assert slides.mime == mimes.ODP and [page.number for page in slides.pages] == [1]
    assert slides.pages[0].text == "# This is\n\nAn example Impress file"
    sheet = load("libreoffice-calc.ods")
    assert sheet.mime == mimes.ODS
    assert sheet.text == ("# Sheet1\n\n| This | is | an | example | spreadsheet |\n| --- | --- | --- | --- | --- |\n"
                          "| 0 | 1 | 2 | 3 | 4 |")


def test_a_csv_export_keeps_its_header_row() -> None:
    doc = load("tika-columnar.csv")
    assert doc.mime == mimes.CSV
    lines = doc.text.split("\n")
    assert lines[0] == ("| Record Number | Square of the Record Number | Description of the Row | Percent Done | "
                        "Percent Increment | date | datetime | time |")
    assert lines[2].startswith("| 0 | 0 | This is row 0 of 10 | 0% |"), "runs of spaces in a cell become one"
