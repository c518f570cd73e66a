"""Run a real OpenAI-compatible LLM server (llama-cpp-python) on 127.0.0.1 for tests.

Not a test module: ``conftest.py`` builds the ``smollm2_server`` and ``qwen_server`` fixtures
with :func:`llama_server_fixture`. Each yields a base URL like ``http://127.0.0.1:PORT/v1``.

Tests using them skip when ``llama_cpp`` is not importable, the model package is missing, or the
server does not come up; set ``RAGSTREAM_REQUIRE_LLAMA=1`` (e.g. in CI) to fail instead.
"""

from __future__ import annotations

import importlib.util
import os
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from ragstream.errors import ModelPackageMissingError
from ragstream.providers.gguf_models import qwen_coder_gguf_path, smollm2_gguf_path

STARTUP_TIMEOUT_SECONDS = 180.0
REQUIRE_ENV = "RAGSTREAM_REQUIRE_LLAMA"


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


def _log_tail(path: Path, lines: int = 15) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return ""


def start_llama_server(
    model: Path,
    log_path: Path,
    *,
    chat_format: str | None = None,
    n_ctx: int = 2048,
    timeout: float = STARTUP_TIMEOUT_SECONDS,
) -> tuple[subprocess.Popen[bytes], str]:
    """Start ``python -m llama_cpp.server`` and wait until ``GET /v1/models`` answers 200.

    Returns the process and its base URL. Raises ``RuntimeError`` (with the server log tail) when
    the server exits or does not answer within ``timeout`` seconds. A port taken between
    :func:`free_port` and the server's bind is retried on a new port (3 tries).
    """
    for _ in range(3):
        try:
            return _start_once(model, log_path, chat_format, n_ctx, timeout)
        except _PortTakenError:
            continue
    raise RuntimeError("llama server found no free port in 3 tries")


class _PortTakenError(Exception):
    pass


def _start_once(
    model: Path, log_path: Path, chat_format: str | None, n_ctx: int, timeout: float
) -> tuple[subprocess.Popen[bytes], str]:
    port = free_port()
    cmd = [
        sys.executable, "-m", "llama_cpp.server",
        "--model", str(model),
        "--host", "127.0.0.1",
        "--port", str(port),
        "--n_threads", "1",
        "--n_ctx", str(n_ctx),
    ]  # fmt: skip
    if chat_format:
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
            raise RuntimeError(f"llama server exited with {process.returncode}:\n{tail}")
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
) -> Any:
    """A pytest fixture called ``name`` that serves ``model(request)`` and yields its base URL."""

    @pytest.fixture(scope=scope, name=name)
    def _server(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
        for module in ("llama_cpp", "uvicorn", "sse_starlette"):  # the last two: the [server] extra
            if importlib.util.find_spec(module) is None:
                _unavailable(f"{module} is not installed: pip install 'llama-cpp-python[server]'")
        try:
            model_path = model(request)
        except ModelPackageMissingError as error:
            _unavailable(str(error))
        log_path = tmp_path_factory.mktemp(f"{name}-log") / "server.log"
        try:
            process, base_url = start_llama_server(model_path, log_path, chat_format=chat_format)
        except RuntimeError as error:
            _unavailable(f"{name}: {error}")
        try:
            yield base_url
        finally:
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
