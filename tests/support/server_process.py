"""Start ``ragstream serve`` as a real process on a free port and wait until it answers.

With ``hash_embedder=True`` the process embeds with :class:`hash_embedder.HashEmbedder` (and the
bi-encoder ReRanker) instead of loading the real model: the fast tier's server.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx

STARTUP_SECONDS = 120.0
POLL_SECONDS = 0.25
STOP_SECONDS = 20.0
LOOPBACK = "127.0.0.1"
SERVE = "from ragstream.cli import app; app()"
TESTS_DIR = Path(__file__).resolve().parents[1]
SERVE_WITH_HASH_EMBEDDER = (
    f"import sys; sys.path.insert(0, {str(TESTS_DIR)!r}); from support import hash_embedder; hash_embedder.install_as_default(); "
    + SERVE
)
HASH_SITE = Path(__file__).resolve().parent / "hash_site"
"""A ``sitecustomize`` that installs the hash embedder in every process: how the worker processes of
``serve --workers N`` (which run none of the command line's code) get it."""
FAST_SETTINGS = {"RERANKER__BACKEND": "none"}
"""``RAGSTREAM_*`` settings of a hash-embedder server (index_fixtures.FAST_DEFAULTS as environment)."""


@dataclass(frozen=True)
class RunningServer:
    """A live server: its base URL (over loopback), data dir, log file and process."""

    url: str
    data_dir: Path
    log: Path
    process: subprocess.Popen | None = None

    def log_text(self) -> str:
        return self.log.read_text(errors="replace")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind((LOOPBACK, 0))
        return sock.getsockname()[1]


def serve_command(host: str, port: int, *, hash_embedder: bool = False, workers: int | None = None,
                  args: Sequence[str] = ()) -> list[str]:
    code = SERVE_WITH_HASH_EMBEDDER if hash_embedder else SERVE
    more = ["--workers", str(workers)] if workers else []
    return [sys.executable, "-c", code, "serve", "--host", host, "--port", str(port), *more, *args]


def server_env(data_dir: Path, **settings: str) -> dict[str, str]:
    """The environment with a fresh data dir and ``RAGSTREAM_*`` settings (e.g. SERVER__API_KEY)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAGSTREAM_")}
    env["RAGSTREAM_DATA_DIR"] = str(data_dir)
    env.update({f"RAGSTREAM_{key}": value for key, value in settings.items()})
    return env


@contextmanager
def running_server(tmp: Path, host: str = LOOPBACK, *, hash_embedder: bool = False, data_dir: Path | None = None,
                   workers: int | None = None, args: Sequence[str] = (), upload_faults: bool = False,
                   **settings: str) -> Iterator[RunningServer]:
    """``ragstream serve --host host`` on a free port with its own data dir (``tmp/data`` unless given);
    stopped afterwards (unless the test killed it already).

    ``hash_embedder=True``: the server embeds with the hash embedder (fast tier), not the real model.
    ``workers``: ``serve --workers N`` (the worker processes get the hash embedder through :data:`HASH_SITE`).
    ``args``: more options of ``serve`` (e.g. ``--watch FOLDER``).
    ``upload_faults``: marked uploads raise a bug's exception in the server (:mod:`support.upload_faults`).
    """
    port = free_port()
    tmp.mkdir(parents=True, exist_ok=True)
    data_dir, log = data_dir or tmp / "data", tmp / "server.log"
    env = server_env(data_dir, **({**FAST_SETTINGS, **settings} if hash_embedder else settings))
    if hash_embedder and workers:
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(HASH_SITE), env.get("PYTHONPATH")]))
        env["RAGSTREAM_TEST_HASH_EMBEDDER"] = "1"
    if upload_faults:
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(HASH_SITE), env.get("PYTHONPATH")]))
        env["RAGSTREAM_TEST_UPLOAD_FAULTS"] = "1"
    with log.open("wb") as out:
        process = subprocess.Popen(serve_command(host, port, hash_embedder=hash_embedder, workers=workers, args=args),
                                   env=env, stdout=out, stderr=subprocess.STDOUT)
    server = RunningServer(url=f"http://{LOOPBACK}:{port}", data_dir=data_dir, log=log, process=process)
    try:
        _wait_ready(server, process)
        yield server
    finally:
        process.terminate()
        try:
            process.wait(STOP_SECONDS)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def _wait_ready(server: RunningServer, process: subprocess.Popen) -> None:
    deadline = time.monotonic() + STARTUP_SECONDS
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"server exited with {process.returncode}:\n{server.log_text()}")
        try:
            if httpx.get(f"{server.url}/healthz", timeout=POLL_SECONDS * 4).status_code == 200:
                return
        except httpx.TransportError:
            pass
        time.sleep(POLL_SECONDS)
    raise RuntimeError(f"server did not start in {STARTUP_SECONDS} s:\n{server.log_text()}")
