"""``llm.provider = "local"``: a GGUF model served by llama.cpp in a child process ragstream manages (docs/local-models.md).

The child (:mod:`ragstream.providers.local_llm_child`) runs llama.cpp's own OpenAI-compatible HTTP server from the
prebuilt ``xllamacpp`` wheel on 127.0.0.1, so the answering model and the agents reach it through the same
:class:`~ragstream.providers.llm_client.LLMClient` as a remote model: streaming, the deadline, retries, the
circuit breaker, and a client that leaves closing the connection (llama.cpp then stops generating). Why a child
and not in-process: a model that crashes (an illegal instruction, an assertion in llama.cpp, memory running out)
takes down only the child; llama.cpp's server takes over SIGINT/SIGTERM in the process it runs in; and the weights
and KV cache live outside the ragstream process. A dead child is started again on the next call, at most once per
``llm.restart_backoff_seconds``; it exits by itself when its stdin closes, so it never outlives ragstream.

The GGUF embedder (``embedding.provider = "gguf"``, :mod:`ragstream.providers.embedders.gguf`) runs the same child in
embedding mode (``--embedding POOLING``). One :class:`LocalModelServer` serves each (file, context, threads, slots,
mode) in a process (:func:`local_server_for`),
whatever the number of clients; the child starts when the first client is made and the first call waits for it.
"""

from __future__ import annotations

import atexit
import importlib.util
import os
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from ragstream import child_process
from ragstream.config import LLMConfig
from ragstream.errors import ConfigError, LLMUnavailableError, ModelPackageMissingError, ModelUnavailableError
from ragstream.providers.gguf_models import GGUF_MAGIC, QWEN_CODER_FILE, qwen_coder_gguf_path
from ragstream.providers.local_llm_child import READY_PREFIX

CHILD_MODULE = "ragstream.providers.local_llm_child"
STOP_GRACE_SECONDS = 10.0
"""How long a stopped child may take to exit after SIGTERM before it is killed."""
READY_POLL_SECONDS = 0.1
"""How often a caller waiting for the child to load checks that it still runs."""
LOG_TAIL_LINES = 15
LLM_KNOBS = ("llm.start_timeout_seconds", "llm.restart_backoff_seconds")
DEFAULT_MODEL_NAME = "local-model"
"""``llm.model``'s default: for a local model the GGUF file's name is reported instead."""


@dataclass(frozen=True)
class LocalModelSpec:
    """What one model server runs: the file, its context in tokens, CPU threads (0: llama.cpp's choice), slots."""

    model_path: Path
    context: int
    threads: int = 0
    parallel: int = 1
    alias: str = ""
    pooling: str = ""
    """Non-empty: the child serves embeddings (``/v1/embeddings``) pooled this way (mean, cls, last), not chat."""

    def command(self) -> list[str]:
        """The child's command line."""
        command = [sys.executable, "-m", CHILD_MODULE, "--model", str(self.model_path), "--context", str(self.context),
                   "--threads", str(self.threads), "--parallel", str(self.parallel), "--alias", self.alias]
        return command + (["--embedding", self.pooling] if self.pooling else [])


def cache_dir() -> Path:
    """Where the packaged Qwen is joined from its pieces: the user's cache folder for ragstream."""
    if importlib.util.find_spec("platformdirs") is not None:
        import platformdirs

        return Path(platformdirs.user_cache_dir("ragstream", appauthor=False)) / "gguf"
    base = os.environ.get("XDG_CACHE_HOME", "").strip()
    return (Path(base) if base and Path(base).is_absolute() else Path.home() / ".cache") / "ragstream" / "gguf"


def check_gguf(path: Path) -> Path:
    """``path`` resolved, when it is a readable GGUF file; else :class:`ConfigError` saying what is wrong."""
    path = path.expanduser()
    if not path.is_file():
        raise ConfigError(f"llm.model_path {str(path)!r} is not a file: name a GGUF model file")
    try:
        with path.open("rb") as handle:
            magic = handle.read(len(GGUF_MAGIC))
    except OSError as error:
        raise ConfigError(f"llm.model_path {str(path)!r} cannot be read: {error}") from error
    if magic != GGUF_MAGIC:
        raise ConfigError(f"llm.model_path {str(path)!r} is not a GGUF file (it does not start with {GGUF_MAGIC!r})")
    return path.resolve()


def model_file(config: LLMConfig) -> Path:
    """The GGUF file ``config`` names, or the packaged Qwen2.5-Coder-0.5B when none is named; :class:`ConfigError`
    when neither is there."""
    if config.model_path:
        return check_gguf(Path(config.model_path))
    try:
        return qwen_coder_gguf_path(cache_dir())
    except (ModelPackageMissingError, ModelUnavailableError) as error:
        raise ConfigError(f"llm.provider=local needs llm.model_path (a GGUF file), or the packaged {QWEN_CODER_FILE}: "
                          f"{error.message}") from error


def spec_for(config: LLMConfig) -> LocalModelSpec:
    """The model server ``config`` asks for; :class:`ConfigError` when xllamacpp or the model file is missing."""
    if importlib.util.find_spec("xllamacpp") is None:
        raise ConfigError("llm.provider=local needs llama.cpp's prebuilt wheel: pip install 'ragstream[local]'")
    path = model_file(config)
    return LocalModelSpec(path, context=config.context_window, threads=config.threads, parallel=config.parallel,
                          alias=model_name(config, path))


def model_name(config: LLMConfig, path: Path) -> str:
    """The name the local model is reported by: ``llm.model`` when set, else the GGUF file's name."""
    return config.model if config.model != DEFAULT_MODEL_NAME else path.name


def exit_description(returncode: int) -> str:
    """How a process ended, from its return code: ``killed by signal SIGSEGV`` or ``exited with status 1``."""
    name = child_process.signal_name(returncode)
    return f"exited with status {returncode}" if name is None else f"killed by signal {name}"


class LocalModelServer:
    """One child process serving one GGUF model on 127.0.0.1; thread-safe.

    :meth:`base_url` starts the child when it is not running (and its last start is at least ``restart_backoff``
    seconds ago), waits until it listens, and returns ``http://127.0.0.1:PORT/v1``. Failures raise
    :class:`LLMUnavailableError` with the child's exit and the end of its log.
    """

    def __init__(self, spec: LocalModelSpec, *, start_timeout: float, restart_backoff: float,
                 log_path: Path | None = None, knobs: tuple[str, str] = LLM_KNOBS) -> None:
        self.spec = spec
        self.knobs = knobs
        """The config names of ``start_timeout`` and ``restart_backoff``, for the messages."""
        self.start_timeout = start_timeout
        self.restart_backoff = restart_backoff
        self.starts = 0
        self._lock = threading.Lock()
        self._process: subprocess.Popen[bytes] | None = None
        self._ready = threading.Event()
        self._address: str | None = None
        self._started_at = 0.0
        if log_path is None:
            fd, name = tempfile.mkstemp(prefix="ragstream-local-llm-", suffix=".log")
            os.close(fd)
            log_path = Path(name)
        self.log_path = log_path
        """Where the child writes llama.cpp's log (overwritten at each start, removed by :meth:`stop`)."""

    @property
    def process(self) -> subprocess.Popen[bytes] | None:
        """The child of the latest start (``None`` before the first)."""
        return self._process

    def start(self) -> None:
        """Start the child unless it runs (or its last start is too recent); returns at once."""
        with self._lock:
            self._start_locked()

    def base_url(self, timeout: float | None = None) -> str:
        """The running child's OpenAI-compatible base URL, waiting up to ``timeout`` (default ``start_timeout``)
        seconds for it to listen."""
        wait = self.start_timeout if timeout is None else min(timeout, self.start_timeout)
        with self._lock:
            process = self._start_locked()
            ready = self._ready
        waited = child_process.wait_while_alive(ready.wait, process, time.monotonic() + wait, READY_POLL_SECONDS)
        if waited == "exited":
            raise LLMUnavailableError(self._died_message(process, "while loading the model"), attempts=0)
        if waited == "timeout":
            raise LLMUnavailableError(
                f"the local model server (pid {process.pid}) did not load {self.spec.model_path.name} within "
                f"{wait:g}s ({self.knobs[0]} or the call's deadline); its log ends with:\n"
                f"{self.log_tail()}", attempts=0)
        if process.poll() is not None:
            raise LLMUnavailableError(self._died_message(process, "after it started"), attempts=0)
        return f"{self._address}/v1"

    def _start_locked(self) -> subprocess.Popen[bytes]:
        process = self._process
        if process is not None and process.poll() is None:
            return process
        if process is not None:
            since = time.monotonic() - self._started_at
            if since < self.restart_backoff:
                raise LLMUnavailableError(
                    self._died_message(process, f"{since:.1f}s after its start") + "\n(it is started again "
                    f"{self.restart_backoff:g}s after its last start: {self.knobs[1]})", attempts=0)
        with self.log_path.open("wb") as log:
            process = child_process.spawn(self.spec.command(), stderr=log, new_session=True)
        self._process = process
        self._started_at = time.monotonic()
        self._ready = threading.Event()
        self._address = None
        self.starts += 1
        threading.Thread(target=self._read_ready, args=(process, self._ready), daemon=True,
                         name=f"local-llm-{process.pid}").start()
        return process

    def _read_ready(self, process: subprocess.Popen[bytes], ready: threading.Event) -> None:
        """Wait for the child's READY line (then keep its stdout drained)."""
        assert process.stdout is not None
        for raw in process.stdout:
            line = raw.decode(errors="replace").strip()
            if line.startswith(READY_PREFIX) and not ready.is_set():
                with self._lock:
                    if self._process is process:
                        self._address = line[len(READY_PREFIX):].strip().rstrip("/")
                ready.set()

    def _died_message(self, process: subprocess.Popen[bytes], when: str) -> str:
        return (f"the local model server for {self.spec.model_path.name} (pid {process.pid}) "
                f"{exit_description(process.returncode or 0)} {when}; its log ends with:\n{self.log_tail()}")

    def log_tail(self, lines: int = LOG_TAIL_LINES) -> str:
        """The last ``lines`` lines of the child's log (llama.cpp's own)."""
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return ""

    def stop(self) -> None:
        """Stop the child (SIGTERM, then SIGKILL after ``STOP_GRACE_SECONDS``) and remove its log."""
        with self._lock:
            process, self._process = self._process, None
        if process is not None:
            stop_process(process)
        self.log_path.unlink(missing_ok=True)


def stop_process(process: subprocess.Popen[bytes]) -> None:
    """Close the child's stdin and terminate it, killing it if it does not exit in time."""
    child_process.stop(process, STOP_GRACE_SECONDS, terminate=True)
    if process.stdout is not None:
        process.stdout.close()


_servers: dict[LocalModelSpec, LocalModelServer] = {}
_servers_lock = threading.Lock()


def local_server_for(config: LLMConfig) -> LocalModelServer:
    """The process's model server for ``config`` (made, and its child started, on first use)."""
    return server_for(spec_for(config), start_timeout=config.start_timeout_seconds,
                      restart_backoff=config.restart_backoff_seconds)


def server_for(spec: LocalModelSpec, *, start_timeout: float, restart_backoff: float,
               knobs: tuple[str, str] = LLM_KNOBS) -> LocalModelServer:
    """The process's one model server for ``spec`` (made, and its child started, on first use)."""
    with _servers_lock:
        server = _servers.get(spec)
        if server is None:
            server = _servers[spec] = LocalModelServer(spec, start_timeout=start_timeout,
                                                       restart_backoff=restart_backoff, knobs=knobs)
            server.start()
    return server


@atexit.register
def stop_all() -> None:
    """Stop every model server this process started."""
    with _servers_lock:
        servers = list(_servers.values())
        _servers.clear()
    for server in servers:
        server.stop()
