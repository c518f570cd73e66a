"""The document list for a real corpus: paging, filter and sort in the catalog, first-ingest and
update times, example questions from the index, over the facade and over HTTP (issue 10)."""

from __future__ import annotations

import sqlite3
import time
import typing
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from support.server_process import RunningServer, running_server

from ragstream import Ragstream
from ragstream.server.documents import SortKey
from ragstream.server.ui import example_questions
from ragstream.store.catalog_base import SORT_COLUMNS
from ragstream.store.factory import sqlite_catalog

DOCS = 30


def _write(root: Path, count: int = DOCS) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    for i in range(count):
        body = "\n\n".join(f"## Part {j}\n\nPart {j} of topic {i}: retries, timeouts and pools." for j in range(1 + i % 4))
        (root / f"note-{i:02d}.md").write_text(f"# Topic {i:02d} handbook\n\n{body}\n", encoding="utf-8")
    return root


@pytest.fixture
def rs(make_fast_index, tmp_path: Path) -> Ragstream:
    index = make_fast_index()
    assert index.ingest([_write(tmp_path / "notes")]).documents_failed == 0
    return index


def test_pages_cover_every_document_once_with_the_total(rs: Ragstream):
    seen: list[str] = []
    for offset in range(0, DOCS, 7):
        page = rs.document_page(offset, 7)
        assert page.total == DOCS
        seen += [record.title for record in page.records]
    assert seen == sorted(seen) and len(seen) == len(set(seen)) == DOCS
    assert rs.document_page(DOCS, 7).records == [] and rs.document_page(0, 0).total == DOCS


def test_filter_by_title_or_file_name_ignores_case(rs: Ragstream):
    page = rs.document_page(0, 50, "TOPIC 1")  # "Topic 10" .. "Topic 19"
    assert page.total == 10 and all(record.title.startswith("Topic 1") for record in page.records)
    by_file = rs.document_page(0, 50, "note-2")
    assert by_file.total == 10 and all("note-2" in record.source for record in by_file.records)
    assert rs.document_page(0, 50, "100%_").total == 0  # LIKE wildcards are matched literally


def test_sort_by_chunks_and_title_both_directions(rs: Ragstream):
    by_chunks = rs.document_page(0, DOCS, sort="chunks", descending=True).records
    counts = [record.chunk_count for record in by_chunks]
    assert counts == sorted(counts, reverse=True) and counts[0] > counts[-1]
    titles = [record.title for record in rs.document_page(0, DOCS, sort="title", descending=True).records]
    assert titles == sorted(titles, reverse=True)
    assert set(typing.get_args(SortKey)) == set(SORT_COLUMNS)  # the route offers exactly what the catalog sorts


def test_an_update_keeps_the_first_ingest_time(rs: Ragstream, tmp_path: Path):
    path = tmp_path / "notes" / "note-03.md"
    before = next(r for r in rs.documents() if r.source.endswith("note-03.md"))
    assert before.first_ingested_at == before.ingested_at
    time.sleep(1.1)  # ingest times have one-second resolution
    path.write_text("# Topic 03 handbook\n\nRewritten: connection pools only.\n", encoding="utf-8")
    assert rs.ingest([path]).documents_processed == 1
    after = rs.document(before.document_id)
    assert after.first_ingested_at == before.first_ingested_at and after.ingested_at > before.ingested_at
    newest = rs.document_page(0, 1, sort="updated", descending=True).records[0]
    assert newest.document_id == before.document_id


def test_catalog_without_first_ingest_column_is_migrated(tmp_path: Path):
    path = tmp_path / "catalog.sqlite3"
    sqlite_catalog(path).close()
    db = sqlite3.connect(path)
    db.execute("ALTER TABLE documents DROP COLUMN first_ingested_at")
    db.execute("INSERT INTO documents (document_id, source, title, mime, checksum, generation, chunk_count, fingerprint, "
               "ingested_at, metadata, size_bytes, pages) VALUES ('d1', 'a.md', 'A', 'text/markdown', 'c', 1, 1, 'f', "
               "'2026-01-02T03:04:05+00:00', '{}', 1, '[]')")
    db.commit()
    db.close()
    catalog = sqlite_catalog(path)
    record = catalog.documents.page(0, 10).records[0]
    assert record.first_ingested_at == record.ingested_at == "2026-01-02T03:04:05+00:00"
    catalog.close()


def test_example_questions_come_from_the_index(rs: Ragstream, make_fast_index, tmp_path: Path):
    titles = rs.example_titles()
    assert len(titles) == rs.config.server.example_questions
    assert all(title.startswith("Topic") for title in titles) and "handbook" in titles[0]
    questions = example_questions(titles)
    assert questions == [f"What do my documents say about {title}?" for title in titles]
    assert example_questions(["Why do retries stop?"]) == ["Why do retries stop?"]  # a title that asks is kept
    empty = make_fast_index(data_dir=tmp_path / "empty")
    assert empty.example_titles() == []


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    with running_server(tmp_path_factory.mktemp("paging-server"), hash_embedder=True,
                        SERVER__DOCUMENTS_PAGE_SIZE="4", SERVER__MAX_DOCUMENTS_PAGE_SIZE="10") as running:
        files = [("files", (path.name, path.read_bytes()))
                 for path in sorted(_write(tmp_path_factory.mktemp("notes"), 12).iterdir())]
        assert httpx.post(f"{running.url}/api/documents", files=files, timeout=120).status_code == 201
        yield running


def test_http_page_filter_sort_and_errors(server: RunningServer):
    url = f"{server.url}/api/documents/page"
    first = httpx.get(url).json()
    assert first["total"] == 12 and first["limit"] == 4 and len(first["items"]) == 4
    assert [item["metadata"]["filename"] for item in first["items"]] == [f"note-{i:02d}.md" for i in range(4)]
    last = httpx.get(url, params={"offset": 8, "sort": "title", "order": "desc"}).json()
    assert [item["title"] for item in last["items"]] == [f"Topic {i:02d} handbook" for i in (3, 2, 1, 0)]
    found = httpx.get(url, params={"q": "note-1", "limit": 10}).json()
    assert found["total"] == 2 and found["q"] == "note-1"
    assert all(item["first_ingested_at"] for item in found["items"])
    for params, code in (({"limit": 11}, "invalid_query"), ({"limit": 0}, "validation_error"),
                         ({"offset": -1}, "validation_error"), ({"offset": 2**64}, "validation_error"),
                         ({"limit": 2**64}, "invalid_query"), ({"sort": "size"}, "validation_error"),
                         ({"order": "up"}, "validation_error"), ({"q": "x" * 201}, "invalid_query")):
        response = httpx.get(url, params=params)
        assert response.status_code == 422 and response.json()["error"]["code"] == code, (params, response.text)
    assert httpx.get(f"{server.url}/api/documents").json()[0]["first_ingested_at"]  # the full list still works


def test_http_ui_settings(server: RunningServer):
    settings = httpx.get(f"{server.url}/api/ui").json()
    assert settings["documents"] == 12 and settings["documents_page_size"] == 4
    assert settings["stage_top_entries"] == 20
    assert len(settings["example_questions"]) == 3 and all("handbook" in q for q in settings["example_questions"])
    assert all(q.startswith("What do my documents say about Topic") for q in settings["example_questions"])
