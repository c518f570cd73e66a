"""``ragstream demo`` and ``ragstream doctor`` in process, on the hash embedder (issue 43).

The demo's output names only options the demo has (it used to say ``--verbose lists them`` with no ``--verbose``);
doctor says what runs each model on this CPU and why, and the index's health."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import typer
from typer.core import TyperGroup
from typer.testing import CliRunner

from ragstream.cli import app
from ragstream.cpu_runtime import ONEDNN_ISA_ENV, detect_cpu_features

runner = CliRunner()
OPTION = re.compile(r"(?<![\w-])--[a-z][a-z0-9-]*")


def _options_of(command: str) -> set[str]:
    group = typer.main.get_command(app)
    assert isinstance(group, TyperGroup)
    found = group.commands[command]
    return {name for param in found.params for name in param.opts if name.startswith("--")}


def test_the_demo_names_only_options_it_has(tmp_path: Path, hash_embedder_by_default):
    result = runner.invoke(app, ["demo", "--data-dir", str(tmp_path / "index")])
    assert result.exit_code == 0, result.output
    assert "warnings" in result.stdout  # the samples give warnings, so the hint is printed
    named = set(OPTION.findall(result.stdout))
    assert named and named <= _options_of("demo"), sorted(named - _options_of("demo"))
    listed = runner.invoke(app, ["demo", "--verbose", "--data-dir", str(tmp_path / "listed")])
    assert listed.exit_code == 0 and "  warning " in listed.stdout


@pytest.fixture
def capped_cpu(monkeypatch: pytest.MonkeyPatch):
    """This process's CPU seen through ``ONEDNN_MAX_CPU_ISA=AVX2`` (oneDNN's own cap): no bfloat16 on any machine."""
    monkeypatch.setenv(ONEDNN_ISA_ENV, "AVX2")
    detect_cpu_features.cache_clear()
    yield
    monkeypatch.delenv(ONEDNN_ISA_ENV)
    detect_cpu_features.cache_clear()


def test_doctor_says_what_runs_each_model_and_why(tmp_path: Path, capped_cpu):
    data_dir = tmp_path / "index"
    result = runner.invoke(app, ["doctor", "--json", "--data-dir", str(data_dir)])
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert report["cpu"]["native_bfloat16"] is False and report["cpu"]["onednn_max_cpu_isa"] == "AVX2"
    roles = {model["role"]: model for model in report["models"]}
    assert set(roles) == {"passages", "queries", "reranker"}
    assert roles["passages"]["runtime"].startswith("onnx") and "bfloat16" in roles["passages"]["why"]
    assert report["problems"] == [] and all(entry["found"] for entry in report["model_files"].values())
    assert report["index"] == {"path": str(data_dir.resolve()), "store_backend": "qdrant_edge",
                               "state": "no index yet (ragstream ingest PATH makes one)"}
    explicit = runner.invoke(app, ["doctor"], env={"RAGSTREAM_EMBEDDING__PROVIDER": "sentence_transformers",
                                                  "RAGSTREAM_DATA_DIR": str(data_dir)})
    assert "passages: sentence_transformers (torch float32)" in explicit.stdout, explicit.output


def test_doctor_reports_a_missing_model_and_exits_1(tmp_path: Path):
    result = runner.invoke(app, ["doctor", "--data-dir", str(tmp_path / "index")],
                           env={"RAGSTREAM_RERANKER__ONNX_MODEL": str(tmp_path / "absent.onnx")})
    assert result.exit_code == 1
    assert "reranker (onnx) missing" in result.stdout and "problem" in result.stdout


def test_serve_says_at_start_up_what_runs_each_model(tmp_path: Path):
    from support.server_process import running_server

    with running_server(tmp_path, hash_embedder=True) as server:
        log = server.log_text()
    for role in ("passages", "queries", "reranker"):
        assert f"ragstream {role}: " in log, log
