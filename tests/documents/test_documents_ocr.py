"""Scanned PDFs and images read by OCR with the packaged PP-OCRv4 models: pages made by rendering text to images
(as a scanner would), a real scan from Apache Tika's test data, the bounds on pages and time, and the error that
names the ``ocr`` extra when it is missing. OCR takes about a second a page on 2 cores: those tests are ``slow``."""

from __future__ import annotations

import io
import sys

import pytest
from pypdf import PdfReader, PdfWriter
from support.office_files import DATA, SCAN_LINES, image_bytes, scanned_pdf, text_image

from ragstream.config import RagstreamConfig, load_config
from ragstream.documents import build_chunks, chunk_document, load_bytes, load_file, mimes
from ragstream.errors import CorruptDocumentError, DocumentTooLargeError, EmptyDocumentError, OcrUnavailableError
from ragstream.models import LoadedDocument

CONFIG = load_config()
TEXT_PDF = DATA.parent.parent.parent / "ragstream" / "samples" / "docs" / "federal-register-2020-17221.pdf"
SECOND_PAGE = ("Second page of the keepers' report", "Bell Rock reported calm seas all week.")


def load(data: bytes, name: str, config: RagstreamConfig = CONFIG) -> LoadedDocument:
    return load_bytes(data, name, config, source=f"/scans/{name}")


def words(text: str) -> set[str]:
    return set(text.replace(".", " ").split())


def with_text_page_first(scan: bytes) -> bytes:
    """The first page of a real text PDF, then the pages of ``scan``."""
    writer = PdfWriter()
    writer.add_page(PdfReader(TEXT_PDF).pages[0])
    for page in PdfReader(io.BytesIO(scan)).pages:
        writer.add_page(page)
    buffer = io.BytesIO()
    writer.write(buffer)
    return buffer.getvalue()


@pytest.mark.slow
def test_a_scanned_pdf_is_read_by_ocr_and_its_pages_marked() -> None:
    doc = load(scanned_pdf([text_image(), text_image(SECOND_PAGE)]), "report.pdf")
    assert doc.mime == mimes.PDF and [(page.number, page.ocr) for page in doc.pages] == [(1, True), (2, True)]
    assert {"Skerryvore", "relit", "March", "consumption"} <= words(doc.pages[0].text)
    assert "Bell Rock reported calm seas all week" in doc.pages[1].text
    assert doc.title == SCAN_LINES[0], "a scan without metadata is titled by its first line"
    pieces = build_chunks(doc, chunk_document(doc, CONFIG.chunking), generation=1, created_at="2026-01-01T00:00:00Z")
    assert pieces and all(chunk.metadata.ocr for chunk in pieces)
    assert [chunk.metadata.page for chunk in pieces] == [1, 2]


@pytest.mark.slow
def test_only_the_pages_without_a_text_layer_are_read_by_ocr() -> None:
    doc = load(with_text_page_first(scanned_pdf([text_image()])), "mixed.pdf")
    assert [(page.number, page.ocr) for page in doc.pages] == [(1, False), (2, True)]
    assert "Federal Register" in doc.pages[0].text and "Skerryvore" in doc.pages[1].text


@pytest.mark.slow
def test_a_real_scan_and_real_images() -> None:
    scan = load_file(DATA / "tika-ocr-scan.pdf", CONFIG)
    assert [page.ocr for page in scan.pages] == [True] and "Happy New Year 2003" in scan.text
    png = load_file(DATA / "tika-ocr.png", CONFIG)
    assert png.mime == mimes.PNG and png.text == "This file contains some words." and png.pages[0].ocr
    jpeg = load_file(DATA / "tika-ocr.jpg", CONFIG)
    assert jpeg.mime == mimes.JPEG and "OCR" in jpeg.text and "Tika" in jpeg.text


@pytest.mark.slow
def test_generated_images_and_a_two_page_tiff() -> None:
    png = load(image_bytes(text_image(), "PNG"), "memo.png")
    assert png.mime == mimes.PNG and "Skerryvore" in png.text and png.pages[0].number is None
    buffer = io.BytesIO()
    text_image().save(buffer, "TIFF", save_all=True, append_images=[text_image(SECOND_PAGE)])
    tiff = load(buffer.getvalue(), "fax.tif")
    assert tiff.mime == mimes.TIFF and [(page.number, page.ocr) for page in tiff.pages] == [(1, True), (2, True)]
    assert "Bell Rock" in tiff.pages[1].text


@pytest.mark.slow
def test_a_500_page_scan_is_bounded_by_ocr_max_pages() -> None:
    page = text_image(("Page of the long logbook",), size=(620, 200))
    config = load_config(ocr={"max_pages": 2})
    doc = load(scanned_pdf([page] * 500), "logbook.pdf", config)
    assert [page.number for page in doc.pages] == [1, 2]
    assert doc.warnings == ("logbook.pdf: 498 scanned page(s) left unread by OCR (pages 3-500), stopped by "
                            "ocr.max_pages = 2",)


@pytest.mark.slow
def test_the_time_bound_stops_after_the_page_under_way() -> None:
    config = load_config(ocr={"max_seconds_per_document": 0.001})
    doc = load(scanned_pdf([text_image(), text_image(SECOND_PAGE), text_image()]), "report.pdf", config)
    assert [page.number for page in doc.pages] == [1], "the first page is always read, then the time is up"
    assert "stopped by ocr.max_seconds_per_document = 0.001" in doc.warnings[0]


@pytest.mark.slow
def test_low_confidence_text_is_dropped() -> None:
    strict = load_config(ocr={"min_confidence": 1.0})
    with pytest.raises(EmptyDocumentError, match="OCR found no text"):
        load(scanned_pdf([text_image()]), "report.pdf", strict)


def test_oversized_and_broken_images_are_refused_before_ocr() -> None:
    config = load_config(ocr={"max_image_pixels": 1000})
    with pytest.raises(DocumentTooLargeError, match=r"ocr\.max_image_pixels"):
        load(image_bytes(text_image(size=(100, 100)), "PNG"), "big.png", config)
    with pytest.raises(CorruptDocumentError, match="cannot decode the image"):
        load(image_bytes(text_image(size=(100, 100)), "JPEG")[:200], "cut.jpg")


def test_without_the_ocr_extra_the_error_names_it(monkeypatch: pytest.MonkeyPatch) -> None:
    # The test environment has the extra installed: hiding its package is the only way to be without it here.
    monkeypatch.setitem(sys.modules, "rapidocr_onnxruntime", None)
    with pytest.raises(OcrUnavailableError, match=r"pip install 'ragstream\[ocr\]'") as refused:
        load(scanned_pdf([text_image(size=(300, 100))]), "report.pdf")
    assert refused.value.code == "ocr_unavailable"
    with pytest.raises(OcrUnavailableError, match=r"ragstream\[ocr\]"):
        load(image_bytes(text_image(size=(300, 100)), "PNG"), "memo.png")
    mixed = load(with_text_page_first(scanned_pdf([text_image(size=(300, 100))])), "mixed.pdf")
    assert [page.number for page in mixed.pages] == [1]
    assert mixed.warnings == ("mixed.pdf: 1 page(s) without a text layer were not read: OCR is not installed",)


def test_ocr_turned_off_in_config() -> None:
    off = load_config(ocr={"enabled": False})
    with pytest.raises(OcrUnavailableError, match=r"ocr\.enabled = false"):
        load(scanned_pdf([text_image(size=(300, 100))]), "report.pdf", off)
