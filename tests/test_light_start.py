"""Start-up stays light: what a command does not use is not imported (the CLI answers in under a second).

Each check runs in a fresh interpreter, because this test process has imported everything already."""

from __future__ import annotations

import json
import subprocess
import sys


def _modules_after(code: str) -> dict[str, bool]:
    probe = code + "\nimport json, sys\nprint(json.dumps({m: m in sys.modules for m in "
    probe += "('openai', 'torch', 'sentence_transformers', 'transformers')}))"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=120)
    loaded: dict[str, bool] = json.loads(out.stdout.strip().splitlines()[-1])
    return loaded


def test_the_answer_path_without_an_llm_does_not_import_the_openai_sdk():
    loaded = _modules_after("import ragstream.api, ragstream.answer.service, ragstream.pipeline.context, "
                            "ragstream.agents.factory")
    assert not loaded["openai"]


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

