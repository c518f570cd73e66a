"""Readers see, for every document, exactly the version committed when their request started.

Every version of a test document carries its marker ``[d<doc>v<version>]`` in every sentence, so
a chunk names the version it came from. The deterministic tests read at each step of a write (the
exact claim: what was committed when the snapshot was taken); the threaded ones run one writer
re-ingesting three documents against four reader threads (search, retrieve, ask, document + chunks)
for a bounded time, with real components and real threads, and check that no response mixes versions,
none is older than the version committed when the request started, and none is half a document.
"""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

import httpx
from support.server_process import running_server

from ragstream import Ragstream
from ragstream.documents.chunk_builder import chunk_id_for
from ragstream.models import Chunk, DocumentRecord
from ragstream.store.qdrant_edge import QdrantEdgeStore
from ragstream.store.sqlite_catalog import SqliteDocuments

DOCUMENTS = 3
MARKER = re.compile(r"\[d(\d+)v(\d+)\]")
QUERY = "paragraph document marker spring weather topic"
QUESTION = "What does paragraph 2 of document 1 say about the weather in spring?"
WRITER_SECONDS = 4.0
"""How long the writer re-ingests in the threaded tests (bounded; they take about this long)."""
READERS = 4
TOP_K = 50
HTTP_TIMEOUT = httpx.Timeout(120.0)
MIN_VERSIONS = 3
"""The writer must have committed at least this many versions for the run to prove anything."""


def _write_version(folder: Path, version: int) -> None:
    """Version ``version`` of every document; the paragraph count (so the chunk count) varies by version."""
    folder.mkdir(exist_ok=True)
    for doc in range(DOCUMENTS):
        tag = f"[d{doc}v{version}]"
        paragraphs = [
            f"Paragraph {p} of document {doc} {tag} talks about topic {doc * 10 + p} {tag}. "
            f"It also says the weather in spring is mild {tag} and the marker repeats {tag}. " * 2
            for p in range(6 + 2 * (version % 3))
        ]
        (folder / f"doc{doc}.txt").write_text("\n\n".join(paragraphs))


def _versions(texts: Iterable[str]) -> dict[int, set[int]]:
    """document number -> the versions named in ``texts``."""
    found: dict[int, set[int]] = {}
    for text in texts:
        for doc, version in MARKER.findall(text):
            found.setdefault(int(doc), set()).add(int(version))
    return found


@dataclass
class _Writer:
    """Re-ingests every document, version after version, and records what it committed.

    ``ingest(version)`` writes version ``version`` of every document (in process or over HTTP);
    ``records()`` lists the live documents.
    """

    ingest: Callable[[int], None]
    records: Callable[[], list[DocumentRecord]]
    seconds: float
    committed: int = 0
    """The last version whose ingest returned (every document is at it or later)."""
    attempting: int = 0
    """The version being written (committed at the earliest when its ingest returns)."""
    generations: dict[tuple[str, int], tuple[int, int]] = field(default_factory=dict)
    """(document_id, generation) -> (version, chunk_count) of every committed version."""
    error: BaseException | None = None

    def record(self, version: int) -> None:
        for record in self.records():
            self.generations[(record.document_id, record.generation)] = (version, record.chunk_count)

    def run(self) -> None:
        try:
            deadline = time.monotonic() + self.seconds
            version = self.committed
            # at least MIN_VERSIONS whatever the machine's load (a slow machine writes longer, not less)
            while time.monotonic() < deadline or version < MIN_VERSIONS:
                version += 1
                self.attempting = version
                self.ingest(version)
                self.record(version)
                self.committed = version
        except BaseException as error:
            self.error = error

    def window(self) -> tuple[int, int]:
        """The versions one of which is committed now: (last returned, being written)."""
        return self.committed, self.attempting

    def through(self, start: tuple[int, int]) -> tuple[int, int]:
        """The versions a request that read ``start`` before it began may see when it ends: from the one
        committed at its start up to the one being written now. (A reader thread paused between reading
        ``start`` and taking its snapshot for longer than one version write may take it after the next
        commit; the write steps themselves are checked deterministically below.)"""
        return start[0], self.attempting

    def chunk_versions(self) -> dict[str, tuple[int, int]]:
        """chunk_id -> (document number, version) of every committed chunk."""
        numbers = {record.document_id: int(re.findall(r"doc(\d+)", record.source)[-1]) for record in self.records()}
        return {chunk_id_for(document_id, generation, index): (numbers[document_id], version)
                for (document_id, generation), (version, count) in self.generations.items() for index in range(count)}


def _in_process_writer(rs: Ragstream, folder: Path) -> _Writer:
    def ingest(version: int) -> None:
        _write_version(folder, version)
        report = rs.ingest([folder])
        assert report.documents_processed == DOCUMENTS, report

    return _Writer(ingest, rs.documents, WRITER_SECONDS)


@dataclass
class _Tally:
    """What the readers saw."""

    responses: dict[str, int] = field(default_factory=dict)
    with_results: dict[str, int] = field(default_factory=dict)
    mixed: list[str] = field(default_factory=list)
    outside: list[str] = field(default_factory=list)
    incomplete: list[str] = field(default_factory=list)
    answers: list[tuple[tuple[int, int], list[str]]] = field(default_factory=list)
    errors: list[BaseException] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def check(self, kind: str, window: tuple[int, int], versions: dict[int, set[int]]) -> None:
        """One response: each document at one version, and that version committed at the start."""
        low, high = window
        with self.lock:
            self.responses[kind] = self.responses.get(kind, 0) + 1
            if versions:
                self.with_results[kind] = self.with_results.get(kind, 0) + 1
            for doc, seen in versions.items():
                if len(seen) > 1:
                    self.mixed.append(f"{kind}: document {doc} versions {sorted(seen)}")
                elif not low <= min(seen) <= high:
                    self.outside.append(f"{kind}: document {doc} version {min(seen)}, committed at start {low}..{high}")

    def assert_clean(self, *kinds: str) -> None:
        """No mix, no version but the one committed at the start, no half document; each kind got results."""
        assert self.mixed == [], self.mixed[:5]
        assert self.outside == [], self.outside[:5]
        assert self.incomplete == [], self.incomplete[:5]
        for kind in kinds:
            assert self.with_results.get(kind, 0) > 0, f"{kind} never got results: {self.responses}"


Reader = Callable[[_Writer, _Tally], None]


def _run(writer: _Writer, readers: list[Reader]) -> _Tally:
    """Version 0, then the writer for its time against ``readers`` (each looping until it stops)."""
    writer.ingest(0)
    writer.record(0)
    tally = _Tally()
    done = threading.Event()

    def loop(read: Callable[[_Writer, _Tally], None]) -> None:
        while not done.is_set():
            try:
                read(writer, tally)
            except BaseException as error:
                tally.errors.append(error)
                return

    threads = [threading.Thread(target=loop, args=(read,), daemon=True) for read in readers]
    for thread in threads:
        thread.start()
    writer.run()
    done.set()
    for thread in threads:
        thread.join(60)
    assert writer.error is None, writer.error
    assert not tally.errors, tally.errors
    assert writer.committed >= MIN_VERSIONS, f"the writer committed only {writer.committed} versions"
    return tally


def _searcher(rs: Ragstream) -> Reader:
    def read(writer: _Writer, tally: _Tally) -> None:
        window = writer.window()
        result = rs.search(QUERY, top_k=TOP_K)
        tally.check("search", writer.through(window), _versions(hit.chunk.text for hit in result.hits))

    return read


def _retriever(rs: Ragstream) -> Reader:
    def read(writer: _Writer, tally: _Tally) -> None:
        window = writer.window()
        context = rs.retrieve(QUERY, "consistency", max_chunks=TOP_K, min_relevance=0.0)
        tally.check("retrieve", writer.through(window), _versions(chunk.text for chunk in context.document_chunks))

    return read


def _asker(rs: Ragstream) -> Reader:
    def read(writer: _Writer, tally: _Tally) -> None:
        window = writer.window()
        answer = rs.ask(QUESTION)
        with tally.lock:  # checked at the end, when every committed chunk id is known
            tally.answers.append((writer.through(window), answer.metadata["context_chunk_ids"]))

    return read


def _document_reader(rs: Ragstream) -> Reader:
    def read(writer: _Writer, tally: _Tally) -> None:
        for record in rs.documents():
            window = writer.window()
            found = rs.document_with_chunks(record.document_id)
            _check_document(tally, writer.through(window), *found)

    return read


def _check_document(tally: _Tally, window: tuple[int, int], record: DocumentRecord, chunks: list[Chunk]) -> None:
    """The record and its chunks: one version, all of its chunks, in order."""
    if len(chunks) != record.chunk_count or [c.metadata.chunk_index for c in chunks] != list(range(len(chunks))):
        with tally.lock:
            tally.incomplete.append(f"{record.source}: record says {record.chunk_count} chunks, got {len(chunks)}")
    tally.check("document", window, _versions(chunk.text for chunk in chunks))


def _check_answer_contexts(writer: _Writer, tally: _Tally) -> None:
    """The answers' context chunk ids, mapped to (document, version) through the committed generations."""
    by_id = writer.chunk_versions()
    for window, ids in tally.answers:
        tally.outside.extend(f"ask: chunk {chunk_id} of no committed version" for chunk_id in ids if chunk_id not in by_id)
        versions: dict[int, set[int]] = {}
        for doc, version in (by_id[chunk_id] for chunk_id in ids if chunk_id in by_id):
            versions.setdefault(doc, set()).add(version)
        tally.check("ask", window, versions)


# -- one writer against reader threads ---------------------------------------------------------------


def test_concurrent_readers_see_only_the_version_committed_at_their_start(make_fast_index, tmp_path):
    rs = make_fast_index()
    writer = _in_process_writer(rs, tmp_path / "docs")
    tally = _run(writer, [_searcher(rs), _retriever(rs), _asker(rs), _document_reader(rs)])
    _check_answer_contexts(writer, tally)
    tally.assert_clean("search", "retrieve", "ask", "document")
    assert rs.snapshots.open_count() == 0 and rs.snapshots.waiting() == 0
    assert rs.store.count() == sum(record.chunk_count for record in rs.documents()), "replaced versions left behind"


def test_document_with_chunks_is_one_version_under_a_writer(make_fast_index, tmp_path):
    rs = make_fast_index()
    tally = _run(_in_process_writer(rs, tmp_path / "docs"), [_document_reader(rs)] * READERS)
    tally.assert_clean("document")


# -- each step of a write, deterministically ---------------------------------------------------------


def _search_versions(rs: Ragstream, **kwargs) -> tuple[dict[int, set[int]], int]:
    hits = rs.search(QUERY, top_k=200, **kwargs).hits
    return _versions(hit.chunk.text for hit in hits), len(hits)


def test_a_reader_at_each_write_step_sees_the_committed_version(make_fast_index, tmp_path, monkeypatch):
    rs = make_fast_index()
    folder = tmp_path / "docs"
    _write_version(folder, 0)
    rs.ingest([folder])
    old_chunks = sum(record.chunk_count for record in rs.documents())
    seen: dict[str, tuple[dict[int, set[int]], int]] = {}
    upsert, commit = QdrantEdgeStore.upsert, SqliteDocuments.commit_documents

    def upsert_then_read(self, *args, **kwargs):
        upsert(self, *args, **kwargs)
        seen["new points written"] = _search_versions(rs)

    def commit_then_read(self, versions):
        sequence = commit(self, versions)
        seen["switched, old points still there"] = _search_versions(rs)
        return sequence

    monkeypatch.setattr(QdrantEdgeStore, "upsert", upsert_then_read)
    monkeypatch.setattr(SqliteDocuments, "commit_documents", commit_then_read)
    _write_version(folder, 1)
    rs.ingest([folder])

    everything_at = {version: {doc: {version} for doc in range(DOCUMENTS)} for version in (0, 1)}
    assert seen["new points written"] == (everything_at[0], old_chunks)
    new_chunks = sum(record.chunk_count for record in rs.documents())
    assert seen["switched, old points still there"] == (everything_at[1], new_chunks)


def test_an_open_snapshot_keeps_its_versions_until_it_closes(make_fast_index, tmp_path):
    rs = make_fast_index()
    folder = tmp_path / "docs"
    _write_version(folder, 0)
    rs.ingest([folder])
    old_chunks = sum(record.chunk_count for record in rs.documents())
    doc0 = next(record for record in rs.documents() if record.source.endswith("doc0.txt"))
    with rs.snapshot() as before:
        _write_version(folder, 1)
        rs.ingest([folder])
        rs.delete(doc0.document_id)
        assert rs.snapshots.waiting() == DOCUMENTS + 1  # three replaced versions, one deleted: kept for `before`
        assert _search_versions(rs, snapshot=before) == ({doc: {0} for doc in range(DOCUMENTS)}, old_chunks)
        assert _search_versions(rs)[0] == {doc: {1} for doc in range(1, DOCUMENTS)}
    assert rs.snapshots.waiting() == 0
    assert rs.store.count() == sum(record.chunk_count for record in rs.documents())
    assert rs.catalog.versions.intents() == []


def test_a_crash_while_old_versions_wait_for_a_reader_recovers(make_fast_index, tmp_path):
    folder, data_dir = tmp_path / "docs", tmp_path / "index"
    rs = make_fast_index(data_dir=data_dir)
    _write_version(folder, 0)
    rs.ingest([folder])
    reader = rs.snapshots.open()
    reader.__enter__()  # a reader that never finishes: the process dies first
    _write_version(folder, 1)
    rs.ingest([folder])
    assert rs.snapshots.waiting() == DOCUMENTS
    rs.close()

    reopened = make_fast_index(data_dir=data_dir)
    assert reopened.catalog.versions.intents() == []
    assert reopened.store.count() == sum(record.chunk_count for record in reopened.documents())
    assert _search_versions(reopened)[0] == {doc: {1} for doc in range(DOCUMENTS)}


# -- over HTTP, against a real server process ----------------------------------------------------------


def _http_writer(api: httpx.Client, folder: Path) -> _Writer:
    def ingest(version: int) -> None:
        _write_version(folder, version)
        files = [("files", (path.name, path.read_bytes())) for path in sorted(folder.iterdir())]
        response = api.post("/api/documents", files=files)
        assert response.status_code == 201, response.text
        assert {item["status"] for item in response.json()["files"]} == {"ingested"}

    return _Writer(ingest, lambda: _records(api), WRITER_SECONDS)


def _records(api: httpx.Client) -> list[DocumentRecord]:
    response = api.get("/api/documents")
    assert response.status_code == 200, response.text
    return [DocumentRecord.model_validate(item) for item in response.json()]


def _http_readers(api: httpx.Client) -> list[Reader]:
    def post(path: str, body: dict) -> dict:
        response = api.post(path, json=body)
        assert response.status_code == 200, response.text
        return response.json()

    def search(writer: _Writer, tally: _Tally) -> None:
        window = writer.window()
        hits = post("/api/search", {"query": QUERY, "top_k": TOP_K})["hits"]
        tally.check("search", writer.through(window), _versions(hit["chunk"]["text"] for hit in hits))

    def retrieve(writer: _Writer, tally: _Tally) -> None:
        window = writer.window()
        context = post("/api/retrieve", {"query": QUERY, "max_chunks": TOP_K, "min_relevance": 0.0})
        tally.check("retrieve", writer.through(window), _versions(chunk["text"] for chunk in context["document_chunks"]))

    def query(writer: _Writer, tally: _Tally) -> None:
        window = writer.window()
        answer = post("/api/query", {"query": QUESTION})
        with tally.lock:
            tally.answers.append((writer.through(window), answer["metadata"]["context_chunk_ids"]))

    def document(writer: _Writer, tally: _Tally) -> None:
        for record in _records(api):
            window = writer.window()
            response = api.get(f"/api/documents/{record.document_id}", params={"include_chunks": "true"})
            assert response.status_code == 200, response.text
            body = response.json()
            chunks = [Chunk.model_validate(chunk) for chunk in body["chunks"]]
            _check_document(tally, writer.through(window), DocumentRecord.model_validate(body["document"]), chunks)

    return [search, retrieve, query, document]


def test_http_readers_see_one_committed_version(tmp_path):
    with running_server(tmp_path, hash_embedder=True) as server, \
            httpx.Client(base_url=server.url, timeout=HTTP_TIMEOUT) as api:
        writer = _http_writer(api, tmp_path / "docs")
        tally = _run(writer, _http_readers(api))
        _check_answer_contexts(writer, tally)
    tally.assert_clean("search", "retrieve", "ask", "document")
