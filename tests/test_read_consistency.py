"""Readers see, for every document, exactly the version committed when their request started.

Every version of a test document carries its marker ``[d<doc>v<version>]`` in every sentence, so
a chunk names the version it came from. The deterministic tests read at each step of a write; the
threaded ones run one writer re-ingesting three documents against four reader threads (search,
retrieve, ask, document + chunks) for a bounded time, with real components and real threads.
"""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

from ragstream import Ragstream
from ragstream.documents.chunk_builder import chunk_id_for
from ragstream.store.catalog import Catalog
from ragstream.store.qdrant_edge import QdrantEdgeStore

DOCUMENTS = 3
MARKER = re.compile(r"\[d(\d+)v(\d+)\]")
QUERY = "paragraph document marker spring weather topic"
QUESTION = "What does paragraph 2 of document 1 say about the weather in spring?"
WRITER_SECONDS = 6.0
"""How long the writer re-ingests in the threaded tests (bounded; they take about this long)."""
READERS = 4
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
    """Re-ingests every document, version after version, and records what it committed."""

    rs: Ragstream
    folder: Path
    seconds: float
    committed: int = 0
    """The last version whose ingest returned (every document is at it or later)."""
    attempting: int = 0
    """The version being written (committed at the earliest when its ingest returns)."""
    generations: dict[tuple[str, int], tuple[int, int]] = field(default_factory=dict)
    """(document_id, generation) -> (version, chunk_count) of every committed version."""
    error: BaseException | None = None

    def record(self, version: int) -> None:
        for record in self.rs.documents():
            self.generations[(record.document_id, record.generation)] = (version, record.chunk_count)

    def run(self) -> None:
        try:
            deadline = time.monotonic() + self.seconds
            version = self.committed
            while time.monotonic() < deadline:
                version += 1
                self.attempting = version
                _write_version(self.folder, version)
                report = self.rs.ingest([self.folder])
                assert report.documents_processed == DOCUMENTS, report
                self.record(version)
                self.committed = version
        except BaseException as error:
            self.error = error

    def window(self) -> tuple[int, int]:
        """The versions one of which is committed now: (last returned, being written)."""
        return self.committed, self.attempting

    def chunk_versions(self) -> dict[str, tuple[int, int]]:
        """chunk_id -> (document number, version) of every committed chunk."""
        by_id: dict[str, tuple[int, int]] = {}
        for (document_id, generation), (version, count) in self.generations.items():
            source = next(r.source for r in self.rs.documents() if r.document_id == document_id)
            doc = int(re.findall(r"doc(\d+)", source)[-1])
            for index in range(count):
                by_id[chunk_id_for(document_id, generation, index)] = (doc, version)
        return by_id


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


def _run(rs: Ragstream, folder: Path, readers: list[Callable[[_Writer, _Tally], None]]) -> tuple[_Writer, _Tally]:
    """The writer for WRITER_SECONDS against ``readers`` (each looping until the writer stops)."""
    _write_version(folder, 0)
    rs.ingest([folder])
    writer = _Writer(rs, folder, WRITER_SECONDS)
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
    return writer, tally


def _search(writer: _Writer, tally: _Tally) -> None:
    window = writer.window()
    result = writer.rs.search(QUERY, top_k=50)
    tally.check("search", window, _versions(hit.chunk.text for hit in result.hits))


def _retrieve(writer: _Writer, tally: _Tally) -> None:
    window = writer.window()
    context = writer.rs.retrieve(QUERY, "consistency", max_chunks=50, min_relevance=0.0)
    tally.check("retrieve", window, _versions(chunk.text for chunk in context.document_chunks))


def _ask(writer: _Writer, tally: _Tally) -> None:
    window = writer.window()
    answer = writer.rs.ask(QUESTION)
    with tally.lock:  # checked at the end, when every committed chunk id is known
        tally.answers.append((window, answer.metadata["context_chunk_ids"]))


def _document(writer: _Writer, tally: _Tally) -> None:
    for record in writer.rs.documents():
        window = writer.window()
        found, chunks = writer.rs.document_with_chunks(record.document_id)
        if len(chunks) != found.chunk_count or [c.metadata.chunk_index for c in chunks] != list(range(len(chunks))):
            with tally.lock:
                tally.incomplete.append(f"{found.source}: record says {found.chunk_count} chunks, got {len(chunks)}")
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
    writer, tally = _run(rs, tmp_path / "docs", [_search, _retrieve, _ask, _document])
    _check_answer_contexts(writer, tally)
    tally.assert_clean("search", "retrieve", "ask", "document")
    assert rs.snapshots.open_count() == 0 and rs.snapshots.waiting() == 0
    assert rs.store.count() == sum(record.chunk_count for record in rs.documents()), "replaced versions left behind"


def test_document_with_chunks_is_one_version_under_a_writer(make_fast_index, tmp_path):
    rs = make_fast_index()
    _, tally = _run(rs, tmp_path / "docs", [_document] * READERS)
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
    upsert, commit = QdrantEdgeStore.upsert, Catalog.commit_documents

    def upsert_then_read(self, *args, **kwargs):
        upsert(self, *args, **kwargs)
        seen["new points written"] = _search_versions(rs)

    def commit_then_read(self, versions):
        sequence = commit(self, versions)
        seen["switched, old points still there"] = _search_versions(rs)
        return sequence

    monkeypatch.setattr(QdrantEdgeStore, "upsert", upsert_then_read)
    monkeypatch.setattr(Catalog, "commit_documents", commit_then_read)
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
    assert rs.catalog.intents() == []


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
    assert reopened.catalog.intents() == []
    assert reopened.store.count() == sum(record.chunk_count for record in reopened.documents())
    assert _search_versions(reopened)[0] == {doc: {1} for doc in range(DOCUMENTS)}
