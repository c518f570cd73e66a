"""Start-up stays light: what a command does not use is not imported (the CLI answers in under a second).

Each check runs in a fresh interpreter, because this test process has imported everything already."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from importlib import resources
from pathlib import Path

import pytest

PROBE_SECONDS = 300


def _modules_after(code: str, **more_env: str) -> dict[str, bool]:
    """Which heavy modules a fresh interpreter holds after running ``code`` (no ``RAGSTREAM_*`` settings of this
    environment: the defaults, so no LLM is configured; ``more_env`` added)."""
    probe = code + "\nimport json, sys\nprint(json.dumps({m: m in sys.modules for m in "
    probe += "('openai', 'torch', 'sentence_transformers', 'transformers')}))"
    env = {key: value for key, value in os.environ.items() if not key.startswith("RAGSTREAM_")} | more_env
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=PROBE_SECONDS, env=env)
    assert out.returncode == 0, out.stderr
    loaded: dict[str, bool] = json.loads(out.stdout.strip().splitlines()[-1])
    return loaded


@pytest.mark.slow  # the packaged embedding model and cross-encoder, loaded in a fresh interpreter
def test_the_answer_path_without_an_llm_does_not_import_the_openai_sdk(tmp_path: Path):
    """A whole question without an LLM: ingest, then ``ask`` through the eight stages to an extractive,
    cited answer, and the openai SDK never loads."""
    sample = tmp_path / "httpx-timeouts.md"
    with resources.as_file(resources.files("ragstream") / "samples" / "docs" / "httpx-timeouts.md") as packaged:
        shutil.copy(packaged, sample)
    loaded = _modules_after(
        "from ragstream import Ragstream, load_config\n"
        f"rs = Ragstream(load_config(data_dir={str(tmp_path / 'index')!r}))\n"
        "assert not rs.config.llm.enabled\n"
        f"assert rs.ingest([{str(sample)!r}]).documents_processed == 1\n"
        "answer = rs.ask('How do I set a timeout on a request?')\n"
        "assert answer.metadata['mode'] == 'extractive', answer.metadata\n"
        "assert answer.metadata['pipeline']['stages'] and answer.citations and answer.sources, answer\n"
        "assert all(source.url.endswith('httpx-timeouts.md') for source in answer.sources), answer.sources\n"
        "rs.close()\n")
    assert not loaded["openai"]


@pytest.mark.slow  # the packaged int8 models, loaded in a fresh interpreter
def test_on_a_cpu_without_bfloat16_ingest_and_answer_never_load_torch(tmp_path: Path):
    """Issue 43: where torch would emulate bfloat16 (here oneDNN capped at AVX2, as on the reporter's EPYC) the
    default config embeds passages with the int8 ONNX export, so the demo's path never imports torch."""
    with resources.as_file(resources.files("ragstream") / "samples" / "docs") as samples:
        loaded = _modules_after(
            "from ragstream import Ragstream, load_config\n"
            f"rs = Ragstream(load_config(data_dir={str(tmp_path / 'index')!r}))\n"
            "assert rs.config.embedding.backend() == 'onnx', rs.config.embedding.local_runtime()\n"
            f"assert rs.ingest([{str(samples)!r}]).documents_processed == 5\n"
            "assert rs.ask('How do I set a timeout on a request?').citations\n"
            "rs.close()\n", ONEDNN_MAX_CPU_ISA="AVX2")
    assert not loaded["torch"] and not loaded["sentence_transformers"]


def test_a_cross_encoder_without_a_local_copy_is_refused_before_torch_loads():
    loaded = _modules_after(
        "from ragstream.config import RerankerConfig\n"
        "from ragstream.providers.rerankers import make_reranker\n"
        "reranker, why = make_reranker(RerankerConfig(backend='cross_encoder', model='no-such-org/no-such-cross-encoder'),"
        " lambda: None)\n"
        "assert reranker is None and 'could not be loaded' in why, why\n")
    assert not loaded["sentence_transformers"]
    assert not loaded["torch"]


def test_the_default_onnx_cross_encoder_never_imports_torch():
    loaded = _modules_after(
        "from ragstream.config import RerankerConfig\n"
        "from ragstream.providers.rerankers import make_reranker\n"
        "reranker, why = make_reranker(RerankerConfig(), lambda: None)\n"
        "assert reranker is not None and why is None, why\n"
        "assert reranker.score('timeout', ['Set a timeout.'])\n")
    assert not any(loaded[name] for name in ("torch", "sentence_transformers", "transformers"))

