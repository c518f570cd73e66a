"""Run a real OpenAI-compatible LLM server (llama-cpp-python) on 127.0.0.1 for tests.

Not a test module: ``conftest.py`` builds the ``smollm2_server`` and ``qwen_server`` fixtures
with :func:`llama_server_fixture`. Each yields a base URL like ``http://127.0.0.1:PORT/v1``.

Tests using them skip when ``llama_cpp`` is not importable, the model package is missing or fails its
sha256 pin (``ragstream/providers/gguf_models.py``), or the server does not come up; set
``RAGSTREAM_REQUIRE_LLAMA=1`` (e.g. in CI) to fail instead.

A server that dies while the session runs (a llama.cpp built for instructions the CPU lacks dies by
SIGILL on its first chat request) fails the test it died in at teardown, and every later test that
uses it at setup, naming its exit signal and the end of its log (:func:`llama_servers_alive`), rather
than leaving them to fail with "Connection refused".
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from ragstream.errors import ModelPackageMissingError, ModelUnavailableError
from ragstream.providers.gguf_models import qwen_coder_gguf_path, smollm2_gguf_path

STARTUP_TIMEOUT_SECONDS = 180.0
Command = Callable[[Path, int], list[str]]
"""The server's command line for a model and port (default: ``python -m llama_cpp.server``)."""
REQUIRE_ENV = "RAGSTREAM_REQUIRE_LLAMA"
LOG_TAIL_LINES = 15
SYSTEM_INFO_SECONDS = 60.0
PORTABLE_CMAKE_ARGS = "-DGGML_NATIVE=OFF -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON"
"""How README.md's test command builds llama.cpp: for any x86-64 CPU with AVX2 (2013 on), not this one's."""
_running: dict[str, tuple[subprocess.Popen[bytes], Path]] = {}
"""The servers the fixtures started, by fixture name, with their log files."""


def _unavailable(reason: str) -> None:
    """Skip (or fail when ``RAGSTREAM_REQUIRE_LLAMA=1``) with ``reason``."""
    if os.environ.get(REQUIRE_ENV) == "1":
        pytest.fail(reason, pytrace=False)
    pytest.skip(reason)


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


def exit_description(returncode: int) -> str:
    """How a process ended, from its return code: ``killed by signal SIGILL`` or ``exited with status 1``."""
    if returncode >= 0:
        return f"exited with status {returncode}"
    try:
        name = signal.Signals(-returncode).name
    except ValueError:
        name = str(-returncode)
    return f"killed by signal {name}"


def died_message(name: str, process: subprocess.Popen[bytes], log_path: Path) -> str:
    """Why the server behind fixture ``name`` is gone: its exit, a hint for SIGILL, and its log's last lines."""
    returncode = process.returncode if process.returncode is not None else 0
    message = f"{name}: the llama.cpp server (pid {process.pid}) {exit_description(returncode)}"
    if returncode == -signal.SIGILL:
        message += (f" (an illegal instruction: this llama.cpp build uses instructions the CPU cannot run; build: "
                    f"{_llama_system_info()}; reinstall it portably: CMAKE_ARGS=\"{PORTABLE_CMAKE_ARGS}\" pip install "
                    f"--no-cache-dir --force-reinstall --no-deps 'llama-cpp-python[server]=={_llama_version()}')")
    return f"{message}; its log ends with:\n{_log_tail(log_path)}"


def _llama_system_info() -> str:
    """The CPU features the installed llama.cpp was built for (asked in a child process: it may crash)."""
    code = "import llama_cpp; print(llama_cpp.llama_print_system_info().decode().strip())"
    try:
        info = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=SYSTEM_INFO_SECONDS)
    except subprocess.TimeoutExpired:
        return "unknown (the query timed out)"
    return info.stdout.strip() or f"unknown ({exit_description(info.returncode)})"


def _llama_version() -> str:
    try:
        return importlib.metadata.version("llama-cpp-python")
    except importlib.metadata.PackageNotFoundError:
        return "VERSION"


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
    chat_format: str | None = None,
    n_ctx: int = 2048,
    timeout: float = STARTUP_TIMEOUT_SECONDS,
    command: Command | None = None,
) -> tuple[subprocess.Popen[bytes], str]:
    """Start ``python -m llama_cpp.server`` and wait until ``GET /v1/models`` answers 200.

    Returns the process and its base URL. Raises ``RuntimeError`` (with the server log tail) when
    the server exits or does not answer within ``timeout`` seconds. A port taken between
    :func:`free_port` and the server's bind is retried on a new port (3 tries).
    """
    for _ in range(3):
        try:
            return _start_once(model, log_path, chat_format, n_ctx, timeout, command)
        except _PortTakenError:
            continue
    raise RuntimeError("llama server found no free port in 3 tries")


class _PortTakenError(Exception):
    pass


def _start_once(
    model: Path, log_path: Path, chat_format: str | None, n_ctx: int, timeout: float, command: Command | None
) -> tuple[subprocess.Popen[bytes], str]:
    port = free_port()
    cmd = command(model, port) if command else [
        sys.executable, "-m", "llama_cpp.server",
        "--model", str(model),
        "--host", "127.0.0.1",
        "--port", str(port),
        "--n_threads", "1",
        "--n_ctx", str(n_ctx),
    ]  # fmt: skip
    if chat_format and not command:
        cmd += ["--chat_format", chat_format]
    with log_path.open("wb") as log:
        process = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
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
    stop_llama_server(process)
    raise RuntimeError(f"llama server did not answer within {timeout:.0f}s:\n{_log_tail(log_path)}")


def stop_llama_server(process: subprocess.Popen[bytes]) -> None:
    """Terminate the server, killing it if it does not exit within 10 s."""
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=10)


def llama_server_fixture(
    name: str,
    model: Callable[[pytest.FixtureRequest], Path],
    *,
    chat_format: str | None = None,
    scope: Any = "session",
    command: Command | None = None,
) -> Any:
    """A pytest fixture called ``name`` that serves ``model(request)`` and yields its base URL (``command``:
    another server command line, for the tests of this module)."""

    @pytest.fixture(scope=scope, name=name)
    def _server(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
        for module in ("llama_cpp", "uvicorn", "sse_starlette"):  # the last two: the [server] extra
            if importlib.util.find_spec(module) is None:
                _unavailable(f"{module} is not installed: pip install 'llama-cpp-python[server]'")
        try:
            model_path = model(request)
        except (ModelPackageMissingError, ModelUnavailableError) as error:  # absent, or failing its sha256 pin
            _unavailable(str(error))
        log_path = tmp_path_factory.mktemp(f"{name}-log") / "server.log"
        try:
            process, base_url = start_llama_server(model_path, log_path, chat_format=chat_format, command=command)
        except RuntimeError as error:
            _unavailable(f"{name}: {error}")
        _running[name] = (process, log_path)
        try:
            yield base_url
        finally:
            _running.pop(name, None)
            stop_llama_server(process)

    return _server


def _smollm2(request: pytest.FixtureRequest) -> Path:
    return smollm2_gguf_path()


def _qwen(request: pytest.FixtureRequest) -> Path:
    # Joined once into pytest's cache dir (.pytest_cache/d/ragstream-gguf) and reused across runs.
    cache = request.config.cache
    cache_dir = cache.mkdir("ragstream-gguf") if cache is not None else request.config.rootpath / ".pytest_cache"
    return qwen_coder_gguf_path(Path(cache_dir))


smollm2_server = llama_server_fixture("smollm2_server", _smollm2)
qwen_server = llama_server_fixture("qwen_server", _qwen)
