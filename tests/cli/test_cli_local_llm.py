"""Generated answers from a GGUF file with nothing else to run: ``ragstream ask --llm-model PATH`` and
``RAGSTREAM_LLM__PROVIDER=local``, each a real ``ragstream`` process as a user starts it (slow: a real model).

The commands embed with the hash embedder (``support/hash_site``, in every process of the run) so the test spends
its time on the model; the model server is the child process ragstream starts itself.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from support.index_fixtures import SAMPLES
from support.required import packaged_model, require_xllamacpp
from support.server_process import HASH_SITE

from ragstream.providers.gguf_models import qwen_coder_gguf_path, qwen_coder_part_paths

pytestmark = pytest.mark.slow
COMMAND_SECONDS = 900
SLOW_SECONDS = 600
QUESTION = "How do I set a timeout for connecting to the server?"


def _env(tmp_path: Path, **settings: str) -> dict[str, str]:
    env = {key: value for key, value in os.environ.items() if not key.startswith("RAGSTREAM_")}
    env["RAGSTREAM_DATA_DIR"] = str(tmp_path / "index")
    env["RAGSTREAM_TEST_HASH_EMBEDDER"] = "1"
    env["RAGSTREAM_RERANKER__BACKEND"] = "none"
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(HASH_SITE), env.get("PYTHONPATH")]))
    env["XDG_CACHE_HOME"] = str(tmp_path / "cache")  # where the packaged Qwen is joined, unless platformdirs says
    # on 2 busy shared cores a small model may take minutes: an answer that ran out of time would be the
    # extractive stand-in, not the generated answer these tests check
    env["RAGSTREAM_ANSWER__DEADLINE_SECONDS"] = env["RAGSTREAM_LLM__TIMEOUT_SECONDS"] = str(SLOW_SECONDS)
    env["RAGSTREAM_LLM__MAX_TOKENS"] = "128"
    env.update({f"RAGSTREAM_{key}": value for key, value in settings.items()})
    return env


def _ragstream(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    run = subprocess.run([sys.executable, "-m", "ragstream", *args], env=env, capture_output=True, text=True,
                         timeout=COMMAND_SECONDS)
    assert run.returncode == 0, run.stdout + run.stderr
    return run


def _ingest(env: dict[str, str]) -> None:
    _ragstream(env, "ingest", str(SAMPLES / "httpx-timeouts.md"), str(SAMPLES / "httpx-async.md"))


def _check_generated(answer: dict) -> None:
    """A generated answer, cited, with every sentence checked."""
    meta = answer["metadata"]
    assert meta["mode"] == "llm", meta.get("degraded_reason")
    assert answer["answer"].strip() and answer["citations"], answer
    assert all(citation["matched"] for citation in answer["citations"]), answer["citations"]
    assert answer["sentences"] and all(s["verdict"] in ("supported", "unsupported", "uncertain")
                                       for s in answer["sentences"]), answer["sentences"]


@pytest.fixture(autouse=True)
def _needs_xllamacpp() -> None:
    require_xllamacpp()


def test_ask_with_llm_model_writes_a_cited_checked_answer(tmp_path: Path):
    # the packaged Qwen as any GGUF file a user has (SmolLM2-135M rambles past any token cap)
    model = packaged_model(lambda: qwen_coder_gguf_path(tmp_path / "models"))
    env = _env(tmp_path, LLM__CONTEXT_WINDOW="2048")
    _ingest(env)
    run = _ragstream(env, "ask", QUESTION, "--llm-model", str(model), "--json")
    answer = json.loads(run.stdout)
    _check_generated(answer)
    assert answer["metadata"]["model"] == model.name


def test_one_setting_answers_with_the_packaged_qwen(tmp_path: Path):
    packaged_model(qwen_coder_part_paths)
    env = _env(tmp_path, LLM__PROVIDER="local")
    _ingest(env)
    run = _ragstream(env, "ask", QUESTION, "--json")
    answer = json.loads(run.stdout)
    _check_generated(answer)
    assert answer["metadata"]["model"] == "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf"


def test_a_missing_model_file_is_refused_before_anything_runs(tmp_path: Path):
    env = _env(tmp_path)
    run = subprocess.run([sys.executable, "-m", "ragstream", "ask", QUESTION, "--llm-model", str(tmp_path / "no.gguf")],
                         env=env, capture_output=True, text=True, timeout=COMMAND_SECONDS)
    assert run.returncode == 2 and "no.gguf" in run.stderr, run.stderr
