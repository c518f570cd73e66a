"""Real documents from ../shared/data through the whole spine: load, chunk, embed, store, search."""

from __future__ import annotations

from pathlib import Path

import pytest

from ragstream import Ragstream, load_config

pytestmark = pytest.mark.slow  # real data through the real model


@pytest.fixture(scope="module")
def real_index(tmp_path_factory, embedder, shared_data: Path):
    rs = Ragstream(load_config(data_dir=tmp_path_factory.mktemp("real")), embedder=embedder)
    report = rs.ingest([shared_data / "markdown_docs", shared_data / "pdfs"])
    yield rs, report
    rs.close()


def test_every_real_document_lands_with_zero_chunks_lost(real_index, shared_data: Path):
    rs, report = real_index
    markdown = list((shared_data / "markdown_docs").rglob("*.md"))
    pdfs = list((shared_data / "pdfs").glob("*.pdf"))
    mimes = {record.mime for record in rs.documents()}
    assert {"text/markdown", "application/pdf"} <= mimes
    assert report.documents_failed == 0, report.failures
    assert report.documents_processed >= len(markdown) + len(pdfs)
    assert rs.store.count() == report.chunks_written == sum(r.chunk_count for r in rs.documents())


def test_markdown_header_paths_and_code_flags(real_index):
    rs, _ = real_index
    hits = rs.search("passing parameters in URLs query string", top_k=5).hits
    top = hits[0].chunk.metadata
    assert top.source.endswith("quickstart.md")
    assert top.header_path == "QuickStart > Passing Parameters in URLs"
    assert top.section == "Passing Parameters in URLs" and top.title == "QuickStart"
    code_hits = rs.search("httpx.get example", top_k=20, filters={"has_code": True}).hits
    assert code_hits and all("```" in hit.chunk.text or "    " in hit.chunk.text for hit in code_hits)
    for hit in rs.search("httpx client", top_k=30).hits:
        assert hit.chunk.text.count("```") % 2 == 0, "a code fence was split"


def test_pdf_pages_are_kept(real_index):
    rs, _ = real_index
    federal = next(r for r in rs.documents() if r.source.endswith("federal-register-2020-17221.pdf"))
    pages = {chunk.metadata.page for chunk in rs.document_chunks(federal.document_id)}
    assert pages == set(range(1, 16))
    hit = rs.search("Boeing 737 MAX airworthiness directive", filters={"document_id": federal.document_id}).hits[0]
    assert hit.chunk.metadata.page is not None and hit.chunk.metadata.mime == "application/pdf"
