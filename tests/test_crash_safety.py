"""A SIGKILLed ingest leaves every document wholly at its old version or wholly at its new one.

The SIGKILL tests run a child process on the real model (``slow``). The fast tier replays the same
three write steps in process: the step raises instead of killing, the index is reopened and recovered.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from ragstream.store.catalog import Catalog
from ragstream.store.qdrant_edge import QdrantEdgeStore

CHILD = Path(__file__).with_name("crash_child.py")
DOCUMENTS = 6
PARAGRAPHS = 12


def _write_version(folder: Path, version: str) -> None:
    folder.mkdir(exist_ok=True)
    for doc in range(DOCUMENTS):
        paragraphs = [
            f"Paragraph {p} of document {doc} is written in version {version}. "
            f"It describes topic {doc * PARAGRAPHS + p} with enough words to fill a window of text. " * 3
            for p in range(PARAGRAPHS)
        ]
        (folder / f"doc{doc}.txt").write_text("\n\n".join(paragraphs))


def _assert_consistent(rs) -> dict[str, str]:
    """Every document is one whole version; no stray points; returns document -> version."""
    versions = {}
    total = 0
    for record in rs.documents():
        chunks = rs.document_chunks(record.document_id)
        assert len(chunks) == record.chunk_count, f"{record.source}: half-written version"
        found = {tag for chunk in chunks for tag in ("alpha", "beta") if f"version {tag}" in chunk.text}
        assert len(found) == 1, f"{record.source}: mixed versions {found}"
        versions[record.source] = found.pop()
        total += record.chunk_count
    assert rs.store.count() == total, "points of dead generations survived recovery"
    for hit in rs.search("document version topic", top_k=50).hits:
        live = rs.document(hit.chunk.metadata.document_id)
        assert hit.chunk in rs.document_chunks(live.document_id)
    return versions


def _environment(prefix: str, section: dict[str, Any]) -> dict[str, str]:
    """A config section as ``RAGSTREAM_*`` variables (nested sections joined by ``__``)."""
    variables: dict[str, str] = {}
    for key, value in section.items():
        name = f"{prefix}__{key.upper()}"
        variables.update(_environment(name, value) if isinstance(value, dict) else {name: str(value)})
    return variables


def _run_child(data_dir: Path, folder: Path, crash_point: str, kill_after: float | None,
               store: dict[str, Any] | None = None) -> int:
    """Run crash_child.py on the index (``store``: the backend's config section, passed as environment)."""
    env = {**os.environ, **_environment("RAGSTREAM_STORE", store or {})}
    child = subprocess.Popen(
        [sys.executable, str(CHILD), str(data_dir), str(folder), crash_point],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
    )
    assert child.stdout is not None
    line = child.stdout.readline()
    assert line.strip() == "ready", f"child did not start: {line!r} {child.stderr.read() if child.stderr else ''}"
    if kill_after is not None:
        time.sleep(kill_after)
        child.send_signal(signal.SIGKILL)
    return child.wait(timeout=300)


CRASH_POINTS = ["mid_upsert", "before_commit", "before_old_delete"]


def _assert_recovered(reopened, folder, crash_point: str) -> None:
    """After a crash at ``crash_point``: every document wholly one version (the new one only once the
    old one's points were due for deletion), and the interrupted job simply runs again and completes."""
    versions = _assert_consistent(reopened)
    assert len(versions) == DOCUMENTS
    expected_first = "beta" if crash_point == "before_old_delete" else "alpha"
    assert versions[str((folder / "doc0.txt").resolve())] == expected_first
    assert reopened.ingest([folder]).documents_failed == 0
    assert set(_assert_consistent(reopened).values()) == {"beta"}


class _CrashError(Exception):
    """Stands in for the SIGKILL of the child process."""


def _install_crash(monkeypatch: pytest.MonkeyPatch, crash_point: str) -> None:
    """In process, what ``crash_child.py`` does before it kills itself: fail at ``crash_point``."""
    if crash_point == "mid_upsert":
        original = QdrantEdgeStore.upsert

        def upsert_half(self, chunks, vectors, generation):
            half = max(1, len(chunks) // 2)
            original(self, chunks[:half], vectors[:half], generation)
            self.flush()
            raise _CrashError(crash_point)

        monkeypatch.setattr(QdrantEdgeStore, "upsert", upsert_half)
    else:
        name = "commit_documents" if crash_point == "before_commit" else "delete_generation"
        owner = Catalog if crash_point == "before_commit" else QdrantEdgeStore

        def crash(self, *args, **kwargs):
            raise _CrashError(crash_point)

        monkeypatch.setattr(owner, name, crash)


@pytest.mark.parametrize("crash_point", CRASH_POINTS)
def test_interrupted_write_step_recovers_on_reopen(make_fast_index, tmp_path, monkeypatch, crash_point):
    folder, data_dir = tmp_path / "docs", tmp_path / "index"
    _write_version(folder, "alpha")
    rs = make_fast_index(data_dir=data_dir)
    rs.ingest([folder])
    _write_version(folder, "beta")
    _install_crash(monkeypatch, crash_point)
    with pytest.raises(_CrashError):
        rs.ingest([folder])
    monkeypatch.undo()
    rs.close()

    _assert_recovered(make_fast_index(data_dir=data_dir), folder, crash_point)


@pytest.mark.slow
@pytest.mark.parametrize("crash_point", CRASH_POINTS)
def test_sigkill_at_each_write_step(make_index, tmp_path, crash_point, backend):
    folder, data_dir = tmp_path / "docs", tmp_path / "index"
    _write_version(folder, "alpha")
    rs = make_index(data_dir=data_dir, store=backend)
    rs.ingest([folder])
    rs.close()
    _write_version(folder, "beta")

    assert _run_child(data_dir, folder, crash_point, kill_after=None, store=backend) == -signal.SIGKILL

    _assert_recovered(make_index(data_dir=data_dir, store=backend), folder, crash_point)


@pytest.mark.slow
def test_sigkill_at_random_moments(make_index, tmp_path):
    folder, data_dir = tmp_path / "docs", tmp_path / "index"
    _write_version(folder, "alpha")
    rs = make_index(data_dir=data_dir)
    rs.ingest([folder])
    rs.close()
    rng = random.Random(7)
    for version in ["beta", "alpha", "beta", "alpha"]:
        _write_version(folder, version)
        _run_child(data_dir, folder, "none", kill_after=rng.uniform(0.0, 1.5))
        reopened = make_index(data_dir=data_dir)
        _assert_consistent(reopened)
        reopened.close()


@pytest.mark.parametrize("crash_point", CRASH_POINTS)
def test_interrupted_rename_recovers_on_reopen(make_fast_index, tmp_path, monkeypatch, crash_point):
    """A sync's rename stopped at any write step leaves the document at its old source or at its new one,
    whole, never both or neither; the next sync finishes the move (without embedding)."""
    folder, data_dir = tmp_path / "docs", tmp_path / "index"
    _write_version(folder, "alpha")
    rs = make_fast_index(data_dir=data_dir)
    rs.sync([folder])
    (folder / "doc0.txt").rename(folder / "moved.txt")
    _install_crash(monkeypatch, crash_point)
    with pytest.raises(_CrashError):
        rs.sync([folder])
    monkeypatch.undo()
    rs.close()

    reopened = make_fast_index(data_dir=data_dir)
    sources = {Path(source).name for source in _assert_consistent(reopened)}
    expected = "moved.txt" if crash_point == "before_old_delete" else "doc0.txt"
    assert len(sources) == DOCUMENTS and expected in sources
    report = reopened.sync([folder])
    assert report.embedding_count == 0 and report.failures == []
    assert {Path(source).name for source in _assert_consistent(reopened)} == {f"doc{n}.txt" for n in range(1, DOCUMENTS)} | {
        "moved.txt"}
