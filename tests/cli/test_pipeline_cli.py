"""``ragstream prompt``: prompt_ready, --until and --json."""

from __future__ import annotations

import json

from support.index_fixtures import SAMPLES
from typer.testing import CliRunner

from ragstream.cli import app


def test_prompt_command(make_index, tmp_path):
    data_dir = tmp_path / "cli-index"
    index = make_index(data_dir=data_dir)
    index.ingest([SAMPLES / "httpx-timeouts.md"])
    index.close()  # the CLI opens the index itself
    runner = CliRunner()
    result = runner.invoke(app, ["prompt", "How do I set a timeout?", "--data-dir", str(data_dir)])
    assert result.exit_code == 0, result.output
    assert "## System" in result.output and "## Attachments" in result.output and "SOURCE: " in result.output

    partial = runner.invoke(app, ["prompt", "How do I set a timeout?", "--data-dir", str(data_dir),
                                  "--until", "Retrieval", "--json"])
    assert partial.exit_code == 0, partial.output
    sp = json.loads(partial.stdout)
    assert sp["stage"] == "retrieval" and sp["views_by_stage"]["retrieval"]

    bad = runner.invoke(app, ["prompt", "x", "--data-dir", str(data_dir), "--until", "A9"])
    assert bad.exit_code == 2 and "unknown_stage" in bad.output
