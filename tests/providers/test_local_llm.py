"""``llm.provider = "local"``: a GGUF model in a child process ragstream manages, reached over the same
OpenAI-compatible path as a remote model (ragstream/providers/local_llm.py).

The fast tests need no model: a file that is not GGUF, a missing file, and a GGUF header with nothing behind it
(a real model server process that fails to load it). The slow ones run the packaged SmolLM2-135M.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import httpx
import pytest
from support.required import packaged_model, require_xllamacpp

from ragstream.config import LLMConfig
from ragstream.errors import ConfigError, LLMUnavailableError
from ragstream.providers.gguf_models import GGUF_MAGIC, smollm2_gguf_path
from ragstream.providers.llm_client import LLMClient
from ragstream.providers.local_llm import LocalModelServer, LocalModelSpec, model_file, spec_for, stop_process

WAIT_SECONDS = 120.0
POLL_SECONDS = 0.2


def _wait_until(condition, what: str) -> None:
    ends = time.monotonic() + WAIT_SECONDS
    while not condition():
        if time.monotonic() > ends:
            raise AssertionError(f"{what}: not within {WAIT_SECONDS:g}s")
        time.sleep(POLL_SECONDS)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # a zombie (exited, not yet reaped by its parent) is gone too
        return Path(f"/proc/{pid}/stat").read_text().split(") ", 1)[1][0] != "Z"
    except (OSError, IndexError):
        return True


# -- configuration (fast) ------------------------------------------------------------------------------------


def test_a_local_model_enables_the_llm_without_a_base_url():
    assert LLMConfig(provider="local").enabled
    assert not LLMConfig().enabled


def test_a_missing_model_file_is_a_config_error(tmp_path: Path):
    with pytest.raises(ConfigError, match="is not a file"):
        model_file(LLMConfig(provider="local", model_path=str(tmp_path / "absent.gguf")))


def test_a_file_that_is_not_gguf_is_a_config_error(tmp_path: Path):
    path = tmp_path / "weights.bin"
    path.write_bytes(b"PK\x03\x04 not a model")
    with pytest.raises(ConfigError, match="not a GGUF file"):
        model_file(LLMConfig(provider="local", model_path=str(path)))


def test_the_model_is_reported_by_its_file_name_unless_named(tmp_path: Path):
    path = tmp_path / "tiny.gguf"
    path.write_bytes(GGUF_MAGIC + b"\0" * 16)
    require_xllamacpp()
    assert spec_for(LLMConfig(provider="local", model_path=str(path))).alias == "tiny.gguf"
    assert spec_for(LLMConfig(provider="local", model_path=str(path), model="mine")).alias == "mine"
    spec = spec_for(LLMConfig(provider="local", model_path=str(path), context_window=1024, threads=2, parallel=2))
    assert (spec.context, spec.threads, spec.parallel) == (1024, 2, 2)


def test_a_model_that_cannot_load_fails_as_unavailable_and_is_not_restarted_at_once(tmp_path: Path):
    require_xllamacpp()
    path = tmp_path / "broken.gguf"
    path.write_bytes(GGUF_MAGIC + b"\x03\0\0\0" + b"\xff" * 64)  # a GGUF header, then no valid tensor table
    server = LocalModelServer(LocalModelSpec(path, context=512), start_timeout=WAIT_SECONDS, restart_backoff=3600)
    try:
        with pytest.raises(LLMUnavailableError, match="while loading the model") as first:
            server.base_url()
        assert "broken.gguf" in first.value.message and "its log ends with" in first.value.message
        with pytest.raises(LLMUnavailableError, match="restart_backoff_seconds"):
            server.base_url()
        assert server.starts == 1
    finally:
        server.stop()


# -- a real model (slow) -------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def smollm2_local() -> LLMClient:
    require_xllamacpp()
    config = LLMConfig(provider="local", model_path=str(packaged_model(smollm2_gguf_path)), max_tokens=32, timeout_seconds=120.0,
                       context_window=2048, threads=1, restart_backoff_seconds=0)
    return LLMClient(config)


@pytest.mark.slow
def test_a_local_model_answers_and_streams(smollm2_local: LLMClient):
    result = smollm2_local.chat([{"role": "user", "content": "What is the capital of France?"}])
    assert result.text.strip() and result.completion_tokens
    assert smollm2_local.config.model == smollm2_local.local.spec.model_path.name  # type: ignore[union-attr]
    stream = smollm2_local.stream_chat([{"role": "user", "content": "Count from one to ten in words."}])
    deltas = list(stream)
    assert len(deltas) >= 3 and stream.done and stream.result.text == "".join(deltas)


@pytest.mark.slow
def test_a_client_that_stops_reading_stops_the_generation(smollm2_local: LLMClient):
    local = smollm2_local.local
    assert local is not None
    stream = smollm2_local.stream_chat([{"role": "user", "content": "Write a very long story about a dragon."}],
                                       max_tokens=1500)
    assert next(stream) and next(stream)
    stream.close()
    slots = local.base_url().removesuffix("/v1") + "/slots"

    def idle() -> bool:
        return not any(slot.get("is_processing") for slot in httpx.get(slots, timeout=30).json())

    _wait_until(idle, "the model server went on generating after the client closed the stream")
    assert smollm2_local.chat([{"role": "user", "content": "Say hello."}], max_tokens=8).text


@pytest.mark.slow
def test_a_model_server_that_dies_is_started_again_on_the_next_call(smollm2_local: LLMClient):
    local = smollm2_local.local
    assert local is not None and local.process is not None
    before = local.starts
    local.process.send_signal(signal.SIGKILL)  # a crash of llama.cpp, as the OS ends it
    local.process.wait(timeout=30)
    result = smollm2_local.chat([{"role": "user", "content": "What is the capital of France?"}])
    assert result.text.strip() and local.starts == before + 1
    assert smollm2_local.breaker.state == "closed"


PARENT = textwrap.dedent("""
    import sys, time
    from pathlib import Path
    from ragstream.providers.local_llm import LocalModelServer, LocalModelSpec
    server = LocalModelServer(LocalModelSpec(Path(sys.argv[1]), context=512, threads=1), start_timeout=120,
                              restart_backoff=0)
    server.base_url()
    print(server.process.pid, flush=True)
    time.sleep(3600)
""")


@pytest.mark.slow
def test_the_model_server_does_not_outlive_a_killed_ragstream():
    require_xllamacpp()
    parent = subprocess.Popen([sys.executable, "-c", PARENT, str(packaged_model(smollm2_gguf_path))],
                              stdout=subprocess.PIPE)
    try:
        assert parent.stdout is not None
        child = int(parent.stdout.readline())
        assert _alive(child)
        parent.send_signal(signal.SIGKILL)  # no atexit, no cleanup: only the closed pipe tells the child
        parent.wait(timeout=30)
        _wait_until(lambda: not _alive(child), "the model server outlived the process that started it")
    finally:
        stop_process(parent)
