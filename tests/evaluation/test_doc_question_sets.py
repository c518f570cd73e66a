"""The documentation question sets in ``bench/datasets`` (httpx, FastAPI, Flask, Starlette, PDF
manuals, Python's library reference): well formed, split, loadable.

Each set is BEIR-shaped: corpus.jsonl (one page per line: Markdown pages with ``"mime": "text/markdown"``,
Flask's and Python's reST pages with ``"mime": "text/plain"``, as ragstream reads reST) or, for the PDF
manuals, the PDFs in ``files/`` judged per page (``FILE#pN``), queries.jsonl, and qrels/{dev,test,all}.tsv.
Every judged page exists,
every question is judged in exactly one of dev (for tuning) and test (held out), alternating by sorted id, the
Markdown pages are chunked as Markdown (with header paths) when the evaluation ingests them, and a set with an
answers.json labels every question with sentences found on its judged pages.
"""

from __future__ import annotations

import csv
import functools
import json
import re
from collections.abc import Callable
from pathlib import Path

import pytest

from ragstream import Ragstream, load_config
from ragstream.documents import load_file
from ragstream.documents.chunkers import chunk_document
from ragstream.documents.prose import CODE_BLOCK, readable_sentences
from ragstream.errors import UnsupportedFileTypeError
from ragstream.evaluation.beir import DOC_ID_KEY, FILES_DIR, PAGE_MARK, corpus_document, load_beir

DATASETS = Path(__file__).resolve().parents[2] / "bench" / "datasets"
SETS = {"httpx-docs": "h", "fastapi-docs": "f", "flask-docs": "fl", "starlette-docs": "s",
        "pdf-manuals": "m", "pystdlib-ref": "p"}
PAGE_FORMATS = {"httpx-docs": (".md", "text/markdown"), "fastapi-docs": (".md", "text/markdown"),
                "flask-docs": (".rst", "text/plain"), "starlette-docs": (".md", "text/markdown"),
                "pystdlib-ref": (".rst", "text/plain")}
"""Each corpus set's page suffix and corpus mime: ragstream reads reST as plain text (no reST loader)."""
MARKDOWN_SETS = sorted(name for name in SETS if not (DATASETS / name / FILES_DIR).is_dir())
"""The sets whose pages are lines of corpus.jsonl (the others are a folder of files, read as files)."""
MAX_FILE_BYTES = 3_000_000
MIN_QUESTIONS = 48
_NOT_WORD = re.compile(r"[^0-9a-z]+")
SPLITS = ("dev", "test")


def _corpus(directory: Path) -> list[dict[str, str]]:
    with (directory / "corpus.jsonl").open(encoding="utf-8") as lines:
        return [json.loads(line) for line in lines]


@functools.cache
def _file_pages(directory: Path) -> dict[str, str]:
    """A dataset of files: ``FILE#pN`` -> page N's text as ragstream reads it."""
    pages: dict[str, str] = {}
    for path in sorted((directory / FILES_DIR).iterdir()):
        for page in load_file(path, load_config()).pages:
            pages[f"{path.name}{PAGE_MARK}{page.number}"] = page.text
    return pages


def _page_ids(directory: Path) -> set[str]:
    if (directory / FILES_DIR).is_dir():
        return set(_file_pages(directory))
    return {entry["_id"] for entry in _corpus(directory)}


def _normal(text: str) -> str:
    """As bench/extractive_sentences.py compares a quote: without case, punctuation or spacing."""
    return " ".join(re.sub(r"[^0-9a-z]+", " ", text.casefold()).split())


def _qrels(directory: Path, split: str) -> list[tuple[str, str, int]]:
    with (directory / "qrels" / f"{split}.tsv").open(encoding="utf-8") as handle:
        reader = csv.reader(handle, delimiter="\t")
        assert next(reader) == ["query-id", "corpus-id", "score"]
        return [(query, page, int(score)) for query, page, score in reader]


@pytest.mark.parametrize("name", sorted(SETS))
def test_every_judged_page_exists_and_every_question_is_in_one_split(name: str):
    directory = DATASETS / name
    pages = _page_ids(directory)
    with (directory / "queries.jsonl").open(encoding="utf-8") as lines:
        queries = [json.loads(line) for line in lines]
    ids = [query["_id"] for query in queries]
    assert len(ids) == len(set(ids)) >= MIN_QUESTIONS
    assert all(query_id.startswith(SETS[name]) and query["text"].strip() for query_id, query in zip(ids, queries, strict=True))

    every = _qrels(directory, "all")
    assert {page for _, page, _ in every} <= pages
    assert {score for _, _, score in every} == {1}
    assert {query for query, _, _ in every} == set(ids)

    split_of: dict[str, str] = {}
    for split in SPLITS:
        for query, _, _ in _qrels(directory, split):
            assert split_of.setdefault(query, split) == split, f"{query} is judged in both dev and test"
    assert set(split_of) == set(ids)
    assert sorted(_qrels(directory, "dev") + _qrels(directory, "test")) == sorted(every)
    expected = {query: SPLITS[index % 2] for index, query in enumerate(sorted(ids))}
    assert split_of == expected

    for split in (*SPLITS, "all"):  # what ``ragstream eval --split`` reads
        dataset = load_beir(directory, split)
        assert set(dataset.queries) == {query for query, split_name in split_of.items() if split == "all" or split_name == split}


@pytest.mark.parametrize("name", MARKDOWN_SETS)
def test_the_corpus_is_pages_of_one_format_with_their_licence(name: str):
    directory = DATASETS / name
    corpus = _corpus(directory)
    suffix, mime = PAGE_FORMATS[name]
    assert len({entry["_id"] for entry in corpus}) == len(corpus)
    for entry in corpus:
        assert entry["_id"].endswith(suffix) and entry["mime"] == mime
        assert entry["title"].strip() and entry["text"].strip()
    assert (directory / "SOURCES.md").is_file()
    assert any(path.name.startswith("LICENSE") for path in directory.iterdir())


@pytest.mark.parametrize("name", [name for name in MARKDOWN_SETS if (DATASETS / name / "answers.json").is_file()])
def test_every_question_has_answering_sentences_found_in_its_judged_pages(name: str):
    directory = DATASETS / name
    # a sentence as written (reST pages) or as read (Markdown: link text without its address)
    text = {entry["_id"]: _normal(entry["text"]) + " | " + _normal(" ".join(readable_sentences(CODE_BLOCK.sub("", entry["text"]))))
            for entry in _corpus(directory)}
    judged: dict[str, set[str]] = {}
    for query, page, _ in _qrels(directory, "all"):
        judged.setdefault(query, set()).add(page)
    labels = json.loads((directory / "answers.json").read_text(encoding="utf-8"))["questions"]
    assert sorted(label["query_id"] for label in labels) == sorted(judged)
    for label in labels:
        assert label["dataset"] == name and label["answers"], label["query_id"]
        for sentence in label["answers"]:
            assert any(_normal(sentence) in text[page] for page in judged[label["query_id"]]), (label["query_id"], sentence)



def test_a_rst_page_is_read_as_plain_text_under_its_title():
    entry = next(line for line in _corpus(DATASETS / "flask-docs") if line["_id"] == "deploying/proxy_fix.rst")
    doc = corpus_document("flask-docs", entry)
    assert doc.mime == "text/plain" and doc.title == "Tell Flask it is Behind a Proxy"
    assert doc.text.startswith("Tell Flask it is Behind a Proxy\n\n") and ":doc:`werkzeug:middleware/proxy_fix`" in doc.text


def test_a_library_reference_page_is_titled_without_its_rest_roles():
    entry = next(line for line in _corpus(DATASETS / "pystdlib-ref") if line["_id"] == "library/shutil.rst")
    doc = corpus_document("pystdlib-ref", entry)
    assert doc.mime == "text/plain" and doc.title == "shutil \u2014 High-level file operations"
    assert doc.text.startswith(doc.title + "\n\n:mod:`shutil` --- High-level file operations")
    assert len(chunk_document(doc, load_config().chunking)) > 1


def test_the_pdf_manuals_are_small_licensed_pdfs_whose_answers_are_on_their_gold_pages():
    directory = DATASETS / "pdf-manuals"
    assert not (directory / "corpus.jsonl").exists()  # the files are the corpus
    files = sorted((directory / FILES_DIR).iterdir())
    assert files and all(path.suffix == ".pdf" and path.stat().st_size < MAX_FILE_BYTES for path in files)
    assert (directory / "SOURCES.md").is_file() and any(path.name.startswith("LICENSE") for path in directory.iterdir())
    pages = _file_pages(directory)
    gold: dict[str, set[str]] = {}
    for query, page, _ in _qrels(directory, "all"):
        gold.setdefault(query, set()).add(page)
    labels = json.loads((directory / "answers.json").read_text(encoding="utf-8"))["questions"]
    assert {label["query_id"] for label in labels} == set(gold)
    for label in labels:
        assert label["dataset"] == "pdf-manuals" and label["answers"]
        for answer in label["answers"]:
            assert any(_normal(answer) in _normal(pages[page]) for page in gold[label["query_id"]]), (label, answer)


def test_a_markdown_page_is_chunked_as_markdown_with_header_paths():
    entry = next(line for line in _corpus(DATASETS / "httpx-docs") if line["_id"] == "advanced/timeouts.md")
    doc = corpus_document("httpx-docs", entry)
    assert doc.mime == "text/markdown" and doc.title == "Timeouts"
    assert doc.metadata[DOC_ID_KEY] == "advanced/timeouts.md"
    assert doc.text == entry["text"].strip()  # the page as it is: no title line prepended
    pieces = chunk_document(doc, load_config().chunking)
    assert any(piece.header_path and piece.header_path[-1] == "Fine tuning the configuration" for piece in pieces)


def test_a_plain_corpus_line_keeps_the_beir_behaviour():
    doc = corpus_document("scifact", {"_id": 42, "title": "A claim's source", "text": "The abstract."})
    assert doc.mime == "text/plain" and doc.title == "A claim's source"
    assert doc.text == "A claim's source\n\nThe abstract."
    assert doc.document_id == "scifact:42" and doc.metadata == {DOC_ID_KEY: "42"}


def test_a_markdown_line_without_a_title_takes_its_first_heading():
    doc = corpus_document("site", {"_id": "a.md", "text": "# Setup { #setup }\n\nInstall it.", "mime": "text/markdown"})
    assert doc.title == "Setup"


def test_an_unknown_mime_is_refused_with_its_code():
    with pytest.raises(UnsupportedFileTypeError, match="application/pdf") as caught:
        corpus_document("site", {"_id": "a.pdf", "text": "x", "mime": "application/pdf"})
    assert caught.value.code == "unsupported_file_type"


def test_the_httpx_pages_ingest_as_markdown_and_the_judged_pages_are_found(make_fast_index: Callable[..., Ragstream]):
    """Ingest the real pages as the evaluation does; BM25 finds a judged page near the top for most held-out
    questions (the hash embedder's dense ranks mean nothing; ranx's scoring is left to the slow eval tests)."""
    rs = make_fast_index()
    dataset = load_beir(DATASETS / "httpx-docs", "test")
    report = rs.ingest_documents(dataset.documents())
    assert report.documents_processed == len(_corpus(DATASETS / "httpx-docs")) and not report.documents_failed
    assert {record.mime for record in rs.documents()} == {"text/markdown"}
    found = 0
    for query_id, text in dataset.queries.items():
        hits = rs.search(text, mode="bm25", top_k=20).hits
        pages = list(dict.fromkeys(str(hit.chunk.metadata.extra[DOC_ID_KEY]) for hit in hits))
        assert any(hit.chunk.metadata.header_path for hit in hits)
        found += bool(set(pages[:3]) & set(dataset.qrels[query_id]))
    assert found >= len(dataset.queries) // 2  # far above chance (3 of 23 pages) when ids and qrels line up
