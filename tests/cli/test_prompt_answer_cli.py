"""``ragstream prompt --selected-text ... --answer``: the built prompt quotes the selected text, then the Answer
step streams the cited answer to it (extractive: no LLM), on the hash embedder (fast tier)."""

from __future__ import annotations

import json
from pathlib import Path

from support.index_fixtures import SAMPLES
from typer.testing import CliRunner

from ragstream.cli import app

runner = CliRunner()
QUESTION = "How do I set a timeout on a client?"
SELECTED = "timeout=None disables timeouts"


def _index(tmp_path: Path) -> Path:
    data_dir = tmp_path / "cli-index"
    result = runner.invoke(app, ["ingest", str(SAMPLES / "httpx-timeouts.md"), "--data-dir", str(data_dir)])
    assert result.exit_code == 0, result.output
    return data_dir


def test_prompt_with_selected_text_then_answer(tmp_path: Path, hash_embedder_by_default) -> None:
    data_dir = _index(tmp_path)
    result = runner.invoke(app, ["prompt", QUESTION, "--data-dir", str(data_dir), "--selected-text", SELECTED, "--answer"])
    assert result.exit_code == 0, result.output
    prompt, answer = result.stdout.split("\n--- Answer ---\n")
    assert f"### Selected text\n```text\n{SELECTED}\n```" in prompt
    assert answer.startswith("Extractive answer") and "[1]" in answer and "SOURCE" not in answer

    events = runner.invoke(app, ["prompt", QUESTION, "--data-dir", str(data_dir), "--answer", "--json"])
    assert events.exit_code == 0, events.output
    lines = events.stdout.splitlines()
    done = json.loads(lines[-1])
    assert done["type"] == "done" and done["mode"] == "extractive"
    assert done["response"]["citations"]


def test_answer_needs_the_whole_pipeline(tmp_path: Path, hash_embedder_by_default) -> None:
    data_dir = _index(tmp_path)
    result = runner.invoke(app, ["prompt", QUESTION, "--data-dir", str(data_dir), "--until", "Retrieval", "--answer"])
    assert result.exit_code == 2 and "prompt_not_built" in result.output
