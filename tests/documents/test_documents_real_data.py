"""Loading and chunking the real httpx Markdown docs and real PDFs."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from ragstream.config import ChunkingConfig, RagstreamConfig
from ragstream.documents import build_chunks, chunk_document, load_file
from ragstream.models import Chunk

pytestmark = pytest.mark.slow  # real data: the httpx docs and PDFs beside the repo

CONFIG = RagstreamConfig()
CREATED_AT = "2025-01-01T00:00:00+00:00"


def chunks_of(path: Path, config: RagstreamConfig = CONFIG) -> list[Chunk]:
    doc = load_file(path, config)
    return build_chunks(doc, chunk_document(doc, config.chunking), generation=1, created_at=CREATED_AT)


def httpx_docs(shared_data: Path) -> list[Path]:
    docs = sorted((shared_data / "markdown_docs" / "httpx" / "docs").rglob("*.md"))
    if not docs:
        pytest.skip("no httpx Markdown docs under shared/data/markdown_docs/httpx/docs")
    return docs


@pytest.mark.parametrize("strategy", ["auto", "split_when_needed"])
def test_every_httpx_doc_chunks_without_splitting_code_fences(shared_data: Path, strategy: str) -> None:
    config = RagstreamConfig(chunking=ChunkingConfig(strategy=strategy, max_chunk_tokens=512))
    for path in httpx_docs(shared_data):
        chunks = chunks_of(path, config)
        assert chunks, path
        for chunk in chunks:
            assert chunk.text.count("```") % 2 == 0, f"{path.name} chunk {chunk.metadata.chunk_index} splits a fence"
            assert chunk.metadata.mime == "text/markdown"
        assert [c.metadata.chunk_index for c in chunks] == list(range(len(chunks)))


def test_every_httpx_doc_respects_chunk_size(shared_data: Path) -> None:
    for path in httpx_docs(shared_data):
        for chunk in chunks_of(path):
            assert len(chunk.text) <= CONFIG.chunking.chunk_size, path.name


def test_quickstart_header_paths_and_code_flags(shared_data: Path) -> None:
    chunks = chunks_of(shared_data / "markdown_docs" / "httpx" / "docs" / "quickstart.md")
    paths = {c.metadata.header_path for c in chunks}
    assert "QuickStart > Passing Parameters in URLs" in paths
    assert "QuickStart > Streaming Responses" in paths
    params = next(c for c in chunks if c.metadata.header_path == "QuickStart > Passing Parameters in URLs")
    assert params.text.startswith("## Passing Parameters in URLs")
    assert params.metadata.section == "Passing Parameters in URLs"
    assert params.metadata.has_code and "```" in params.text
    assert params.metadata.title == "QuickStart"


def test_prose_chunks_have_no_code(shared_data: Path) -> None:
    chunks = chunks_of(shared_data / "markdown_docs" / "httpx" / "docs" / "code_of_conduct.md")
    assert chunks and not any(c.metadata.has_code for c in chunks)
    assert not any(c.metadata.has_equations for c in chunks)


def test_federal_register_pdf_has_pages_1_to_15(shared_data: Path) -> None:
    path = shared_data / "pdfs" / "federal-register-2020-17221.pdf"
    doc = load_file(path, CONFIG)
    assert doc.mime == "application/pdf"
    assert [page.number for page in doc.pages] == list(range(1, 16))
    chunks = build_chunks(doc, chunk_document(doc, CONFIG.chunking), generation=1, created_at=CREATED_AT)
    assert sorted({c.metadata.page for c in chunks}) == list(range(1, 16))
    assert all(len(c.text) <= CONFIG.chunking.chunk_size for c in chunks)
    assert any("Boeing" in c.text for c in chunks if c.metadata.page == 1)


def test_multicolumn_pdf_has_3_pages(shared_data: Path) -> None:
    chunks = chunks_of(shared_data / "pdfs" / "multicolumn.pdf")
    assert sorted({c.metadata.page for c in chunks}) == [1, 2, 3]
    assert chunks[0].metadata.title == "Two-Column Document with Lorem Ipsum"


def test_pdf_metadata_title_is_used(shared_data: Path) -> None:
    assert load_file(shared_data / "pdfs" / "google-doc-document.pdf", CONFIG).title == "PDF Example Document"


@pytest.mark.parametrize(("name", "title"), [
    ("google-doc-document.pdf", "PDF Example Document"),  # metadata
    ("multicolumn.pdf", "Two-Column Document with Lorem Ipsum"),  # display line (17 pt over 10 pt body)
    ("federal-register-2020-17221.pdf", "Proposed Rules"),  # display line, not the sidebar's first line
    ("pdflatex-outline.pdf", "pdflatex-outline"),  # a "Contents" page and a many-entry outline: the file name
    ("002-trivial-libre-office-writer.pdf", "Lorem ipsum dolor sit amet, consetetur sadipscing elitr, sed diam "
     "nonumy eirmod tempor"),  # one type size: the first line
])
def test_every_pdf_gets_a_sensible_title(shared_data: Path, name: str, title: str) -> None:
    assert load_file(shared_data / "pdfs" / name, CONFIG).title == title


def test_httpx_titles_and_header_paths_carry_no_dialect_markup(shared_data: Path) -> None:
    for path in httpx_docs(shared_data):
        for chunk in chunks_of(path):
            for leak in ("{ #", "!!!", "<!--"):
                assert leak not in chunk.metadata.title + chunk.metadata.header_path, (path.name, leak)
            assert "!!! " not in chunk.text.split("```")[0], path.name


def test_split_when_needed_keeps_each_pdf_page_whole(shared_data: Path) -> None:
    config = RagstreamConfig(chunking=ChunkingConfig(strategy="split_when_needed"))
    chunks = chunks_of(shared_data / "pdfs" / "federal-register-2020-17221.pdf", config)
    assert [c.metadata.page for c in chunks] == list(range(1, 16))


def test_pdf_renamed_txt_loads_as_pdf(shared_data: Path, tmp_path: Path) -> None:
    renamed = tmp_path / "notes.txt"
    shutil.copyfile(shared_data / "pdfs" / "multicolumn.pdf", renamed)
    doc = load_file(renamed, CONFIG)
    assert doc.mime == "application/pdf"
    assert [page.number for page in doc.pages] == [1, 2, 3]
