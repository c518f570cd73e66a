"""A SIGKILLed ingest leaves every document wholly at its old version or wholly at its new one.

The SIGKILL tests run a child process on the real model (``slow``): killed at each of three crash points, and
killed by the parent at random moments inside the ingest's write steps (the child names each step as it
begins). The fast tier replays the three crash points in process: the step raises instead of killing, the
index is reopened and recovered. Where an ingest stops is written once, in ``crash_steps.py``.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, NoReturn

import pytest
from support.crash_steps import COMMIT_STEP, CRASH_POINTS, install_crash

TESTS_DIR = Path(__file__).resolve().parent
CHILD = "support.crash_child"
"""The child, run as ``python -m support.crash_child`` with the tests folder on ``PYTHONPATH``."""
DOCUMENTS = 6
PARAGRAPHS = 12
VERSIONS = ("alpha", "beta", "gamma", "delta", "kappa", "sigma", "omega", "lambda")
"""Version tags, none a part of another: a chunk's text says ``version TAG.``."""
CHILD_SECONDS = 300
MAX_KILL_DELAY_SECONDS = 0.02
"""How long after the chosen write step began the parent sends SIGKILL: well within the write phase."""


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
        found = {tag for chunk in chunks for tag in VERSIONS if f"version {tag}." in chunk.text}
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


def _start_child(data_dir: Path, folder: Path, mode: str, log: Path,
                 store: dict[str, Any] | None = None) -> subprocess.Popen[str]:
    """Start crash_child.py on the index and wait until it has loaded the model (``store``: the backend's config
    section, passed as environment; the child's stderr goes to ``log``)."""
    env = {**os.environ, **_environment("RAGSTREAM_STORE", store or {}),
           "PYTHONPATH": os.pathsep.join(filter(None, [str(TESTS_DIR), os.environ.get("PYTHONPATH")]))}
    with log.open("w") as errors:
        child = subprocess.Popen([sys.executable, "-m", CHILD, str(data_dir), str(folder), mode],
                                 stdout=subprocess.PIPE, stderr=errors, text=True, env=env)
    assert child.stdout is not None
    line = child.stdout.readline()
    if line.strip() != "ready":
        child.kill()
        child.wait(timeout=CHILD_SECONDS)
        pytest.fail(f"child did not start: {line!r}\n{log.read_text()}")
    return child


def _run_child(data_dir: Path, folder: Path, crash_point: str, log: Path, store: dict[str, Any] | None = None) -> int:
    """Run crash_child.py until it kills itself at ``crash_point``; its exit code."""
    child = _start_child(data_dir, folder, crash_point, log, store)
    child.communicate(timeout=CHILD_SECONDS)
    return child.returncode


def _run_steps_child(data_dir: Path, folder: Path, log: Path, kill_at_step: int | None = None,
                     delay: float = 0.0) -> tuple[int, list[str]]:
    """Run crash_child.py in ``steps`` mode; with ``kill_at_step``, SIGKILL it ``delay`` seconds after its
    ``kill_at_step``-th write step began (unless it finished first). Its exit code and every line it printed
    after ``ready``."""
    child = _start_child(data_dir, folder, "steps", log)
    assert child.stdout is not None
    lines: list[str] = []
    if kill_at_step is not None:
        steps = 0
        while steps < kill_at_step:
            line = child.stdout.readline()
            if not line:
                break  # it finished before that many steps
            lines.append(line.strip())
            steps += line.startswith("step ")
        if steps == kill_at_step:
            time.sleep(delay)
            child.send_signal(signal.SIGKILL)  # nothing happens when it has exited meanwhile
    rest, _ = child.communicate(timeout=CHILD_SECONDS)
    return child.returncode, lines + rest.splitlines()


def _steps(lines: list[str]) -> list[str]:
    return [line.removeprefix("step ") for line in lines if line.startswith("step ")]


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


def _crash(crash_point: str) -> NoReturn:
    raise _CrashError(crash_point)


def _install_crash(monkeypatch: pytest.MonkeyPatch, rs, crash_point: str) -> None:
    """In process, what ``crash_child.py`` does before it kills itself: fail at ``crash_point``."""
    install_crash(type(rs.store), type(rs.catalog.documents), crash_point, _crash, monkeypatch.setattr)


@pytest.mark.parametrize("crash_point", CRASH_POINTS)
def test_interrupted_write_step_recovers_on_reopen(make_fast_index, tmp_path, monkeypatch, crash_point):
    folder, data_dir = tmp_path / "docs", tmp_path / "index"
    _write_version(folder, "alpha")
    rs = make_fast_index(data_dir=data_dir)
    rs.ingest([folder])
    _write_version(folder, "beta")
    _install_crash(monkeypatch, rs, crash_point)
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

    assert _run_child(data_dir, folder, crash_point, tmp_path / "child.log", store=backend) == -signal.SIGKILL

    _assert_recovered(make_index(data_dir=data_dir, store=backend), folder, crash_point)


@pytest.mark.slow
def test_sigkill_at_random_moments(make_index, tmp_path):
    """Each run writes a new version of every document. The first runs to its end and must exit cleanly; it
    counts the write steps of such an ingest. Each later run is SIGKILLed a random moment after a randomly
    chosen write step began (the child loaded the model before, so the kill lands in the ingest's writes, not in
    a model load): every document is then wholly at the version before or at the new one. The kills land on
    both sides of the commit."""
    folder, data_dir, log = tmp_path / "docs", tmp_path / "index", tmp_path / "child.log"
    _write_version(folder, VERSIONS[0])
    rs = make_index(data_dir=data_dir)
    rs.ingest([folder])
    rs.close()
    sources = {str(path.resolve()) for path in folder.iterdir()}

    _write_version(folder, VERSIONS[1])
    code, lines = _run_steps_child(data_dir, folder, log)
    assert code == 0 and lines[-1] == "finished", (code, lines, log.read_text())
    steps = len(_steps(lines))
    assert _steps(lines).count("upsert") == _steps(lines).count("delete_generation") == DOCUMENTS, lines
    reopened = make_index(data_dir=data_dir)
    assert _assert_consistent(reopened) == dict.fromkeys(sources, VERSIONS[1])
    reopened.close()

    rng = random.Random(7)
    current = dict.fromkeys(sources, VERSIONS[1])
    kills: list[tuple[str, bool]] = []  # the last step begun before each kill, and whether the commit had begun
    for version in VERSIONS[2:]:
        _write_version(folder, version)
        at_step = rng.randrange(1, steps + 1)
        code, lines = _run_steps_child(data_dir, folder, log, at_step, rng.uniform(0.0, MAX_KILL_DELAY_SECONDS))
        begun = _steps(lines)
        if code == 0:  # it finished before the kill landed: then it finished cleanly
            assert lines[-1] == "finished", lines
        else:
            assert code == -signal.SIGKILL, (code, log.read_text())
            assert "finished" not in lines and len(begun) >= at_step, lines
            kills.append((begun[-1], COMMIT_STEP in begun))
        reopened = make_index(data_dir=data_dir)
        now = _assert_consistent(reopened)
        assert set(now) == sources
        assert all(now[source] in (current[source], version) for source in sources), (current, now, version)
        current = now
        reopened.close()
    assert len(kills) >= len(VERSIONS[2:]) - 1, f"most kills must land inside the ingest: {kills}"
    assert any(commit for _, commit in kills) and any(not commit for _, commit in kills), kills


@pytest.mark.parametrize("crash_point", CRASH_POINTS)
def test_interrupted_rename_recovers_on_reopen(make_fast_index, tmp_path, monkeypatch, crash_point):
    """A sync's rename stopped at any write step leaves the document at its old source or at its new one,
    whole, never both or neither; the next sync finishes the move (without embedding)."""
    folder, data_dir = tmp_path / "docs", tmp_path / "index"
    _write_version(folder, "alpha")
    rs = make_fast_index(data_dir=data_dir)
    rs.sync([folder])
    (folder / "doc0.txt").rename(folder / "moved.txt")
    _install_crash(monkeypatch, rs, crash_point)
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
