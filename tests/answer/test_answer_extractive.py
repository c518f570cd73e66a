"""The extractive answer reads as sentences: link text and inline code kept, one bullet per quote, no
sentence twice, include references and code-ish brackets handled; on real FastAPI documentation."""

from __future__ import annotations

from pathlib import Path

from ragstream.answer.extractive import extractive_answer, quotes
from ragstream.answer.models import DocumentChunk

DIALECTS = Path(__file__).resolve().parents[1] / "data" / "markdown_dialects"
LABEL = "From the documents:"


def chunk(n: int, text: str) -> DocumentChunk:
    return DocumentChunk(chunk_id=f"c{n}", document_id="d", text=text, relevance_score=0.5, position_in_doc=n,
                         metadata={"title": "T", "section": "S"})


def answer(*texts: str, max_sentences: int = 10) -> list[str]:
    chunks = [chunk(n, text) for n, text in enumerate(texts, start=1)]
    text = extractive_answer(None, chunks, None, label=LABEL, max_sentences=max_sentences, min_chars=20,
                             max_example_chars=1200)
    return text.splitlines()[2:]


def test_link_text_and_inline_code_are_kept() -> None:
    lines = answer("And then you also read how to handle [CORS with the `CORSMiddleware`](../tutorial/cors.md).\n\n"
                   "As **FastAPI** implements the <abbr title=\"Asynchronous Server Gateway Interface\">ASGI</abbr> "
                   "spec, you can use `items[0]` or any [middleware][ref].")
    assert lines == ["- And then you also read how to handle CORS with the `CORSMiddleware`. [1]",
                     "- As FastAPI implements the ASGI spec, you can use `items[0]` or any middleware. [1]"]


def test_list_items_are_single_bullets_and_sentences_are_not_repeated() -> None:
    first = ("## Upload\n\nUsing `UploadFile` has several advantages over `bytes`:\n\n"
             "* It uses a \"spooled\" file:\n    * A file stored in memory up to a maximum size limit.\n"
             "* You can get metadata from the uploaded file.\n")
    overlap = "## Upload\n\n* You can get metadata from the uploaded file.\n- It has a file-like `async` interface.\n"
    lines = answer(first, overlap)
    assert not any(line.startswith(("- *", "- -", "- +")) for line in lines)
    assert lines.count("- You can get metadata from the uploaded file. [1]") == 1
    assert "- It has a file-like `async` interface. [2]" in lines
    assert len(lines) == len(set(lines)) == 5
    assert answer("Note: To receive uploaded files, first install it.", "Info: To receive uploaded files, "
                  "first install it.") == ["- Note: To receive uploaded files, first install it. [1]"]


def test_reference_lines_and_foreign_markers_are_not_quoted() -> None:
    lines = answer("Import `File` from `fastapi`:\n\nIncluded file: `../../docs_src/app.py`\n\n"
                   "Highlight lines hl[18:19,26:27] with x[0] as in the timeouts guide [Timeouts] [3].")
    assert lines == ["- Import `File` from `fastapi`: [1]",
                     "- Highlight lines hl[18:19,26:27] with x[0] as in the timeouts guide. [1]"]


def test_quotes_over_a_real_fastapi_page_read_as_sentences() -> None:
    from ragstream.config import load_config
    from ragstream.documents.chunkers import chunk_document
    from ragstream.documents.loaders import load_file

    config = load_config()
    doc = load_file(DIALECTS / "fastapi-request-files.md", config)
    sentences = [q.sentence for piece in chunk_document(doc, config.chunking) for q in quotes(piece.text, 20, 1200)]
    assert "Note: To receive uploaded files, first install `python-multipart`." in sentences
    assert "It has a file-like `async` interface." in sentences
    assert not any(s.startswith(("*", "-", "Included file:", "#")) or "](" in s or "{*" in s for s in sentences)


def test_an_answer_over_fastapi_docs_cites_clean_titles_and_sections(make_fast_index) -> None:
    rs = make_fast_index()
    report = rs.ingest(sorted(DIALECTS.glob("fastapi-*.md")))
    assert report.documents_processed == len(list(DIALECTS.glob("fastapi-*.md")))
    result = rs.ask("How do I handle CORS with the CORSMiddleware and other ASGI middlewares?")
    body = result.answer.splitlines()[2:]
    assert result.metadata["mode"] == "extractive" and result.metadata["unmatched_citations"] == []
    assert body and len(body) == len(set(body))
    assert not any(line.startswith(("- *", "- -")) or "](" in line or "{*" in line or "///" in line for line in body)
    for citation in result.citations:
        assert "{ #" not in (citation.title or "") + (citation.section or "")
    for document in result.relatedDocs:
        assert "{ #" not in document.title


def test_a_list_continuing_a_sentence_is_quoted_as_that_sentence() -> None:
    # FastAPI docs/en/docs/advanced/strict-content-type.md
    lines = answer("These attacks exploit the fact that browsers allow scripts to send requests without doing any "
                   "CORS preflight check when they:\n\n* don't have a `Content-Type` header (e.g. using `fetch()` "
                   "with a `Blob` body)\n* and don't send any authentication credentials.\n")
    assert lines == ["- These attacks exploit the fact that browsers allow scripts to send requests without doing any "
                     "CORS preflight check when they: don't have a `Content-Type` header (e.g. using `fetch()` with a "
                     "`Blob` body) and don't send any authentication credentials. [1]"]


def test_bullets_kept_by_pdf_and_office_text_are_not_doubled() -> None:
    """A PDF's text layer keeps its bullets (``•``, Symbol-font ``\\uf0b7``, ``▪``): the quote drops them, so the
    answer's own ``- `` is the one bullet a reader sees."""
    lines = answer("Prepare the site before the install:\n• Check the power supply of every rack first.\n"
                   "\uf0b7 Label each cable at both of its ends.\n▪Keep the spare fuses in the marked box.")
    assert lines and all(not line.removeprefix("- ").startswith(("•", "\uf0b7", "▪")) for line in lines), lines
    assert "- Check the power supply of every rack first. [1]" in lines
    assert answer("- 1.5 kg of flour is mixed with the water first.") == [
        "- 1.5 kg of flour is mixed with the water first. [1]"]
