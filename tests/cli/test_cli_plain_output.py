"""Every ``ragstream`` command in its plain (table / text) output, not only ``--json``, over a real index opened by
the command itself (no server), on the hash embedder (fast tier).

The commands are found by walking the Typer app's command tree, so a new command fails
:func:`test_every_command_is_run_in_plain_output` until it gets a row in :data:`PLAIN_RUNS` (or a reason in
:data:`RUN_ELSEWHERE`).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import typer.core
import typer.main
from support.folder_corpus import make_docs_folder
from support.index_fixtures import SAMPLES
from typer.testing import CliRunner

from ragstream.cli import app

runner = CliRunner()
QUESTION = "How do I set a timeout?"

PLAIN_RUNS: list[tuple[str, list[str], str]] = [
    # (command, its arguments after the command's words, text its output must hold); run in this order
    ("collections create", ["manuals", "--description", "Product manuals"], "created collection manuals"),
    ("ingest", [str(SAMPLES / "httpx-timeouts.md"), str(SAMPLES / "httpx-async.md")], "processed 2"),
    ("sync", ["{folder}", "--collection", "manuals"], "synced 1 root"),
    ("search", [QUESTION], "httpx-timeouts"),
    ("doctor", [], "passages:"),  # what runs each model and why, over the index just made
    ("docs list", [], "manuals"),  # the collection column, by name
    ("collections list", [], "manuals"),
    ("collections show", ["manuals"], "description: Product manuals"),
    ("collections edit", ["manuals", "--description", "Manuals"], "changed collection manuals"),
    ("ask", [QUESTION], "Confidence:"),
    ("chat", [], "Confidence:"),
    ("prompt", [QUESTION], "timeout"),
    ("feedback summary", [], "answers"),
    ("eval", ["--beir", "{beir}"], "dense"),  # a row per mode
    ("migrate", ["--to", "{copy}"], "verified"),
    ("reindex", [], "documents were indexed with other settings"),
    ("docs delete", ["{document_id}"], "deleted {document_id}"),
    ("collections delete", ["manuals", "--delete-documents"], "deleted collection manuals"),
    ("demo", ["--data-dir", "{demo}"], "Answer:"),
    ("db stop", ["--dir", "{postgres}"], "not running"),
]
RUN_ELSEWHERE = {
    "watch": "runs until stopped: tests/sync/test_watch.py runs it as a process and reads what it prints",
    "serve": "runs until stopped: support/server_process.py runs it for the server tests",
    "mcp": "speaks MCP on stdout, no plain output: tests/mcp_server drive it with the MCP SDK's client",
    "db start": "starts a real PostgreSQL: tests/store/test_postgres_backend.py runs db start, status and stop",
    "db status": "exits 1 unless a bundled PostgreSQL runs: tests/store/test_postgres_backend.py",
}
CHAT_INPUT = f"{QUESTION}\n\n"


def command_paths(command: Any, prefix: tuple[str, ...] = ()) -> set[str]:
    """Every runnable command under ``command`` (a Typer command or group), as the words that name it
    (``docs list``)."""
    if isinstance(command, typer.core.TyperGroup):
        return set().union(*(command_paths(child, (*prefix, name)) for name, child in command.commands.items()))
    return {" ".join(prefix)}


def test_every_command_is_run_in_plain_output():
    commands = command_paths(typer.main.get_command(app))
    covered = {name for name, _args, _expected in PLAIN_RUNS} | set(RUN_ELSEWHERE)
    assert commands - covered == set(), "commands with no plain-output run here: give each a PLAIN_RUNS row"
    assert covered - commands == set(), "rows for commands the CLI no longer has"


def _beir(folder: Path) -> Path:
    """A tiny BEIR dataset: two documents, one judged query."""
    (folder / "qrels").mkdir(parents=True)
    corpus = [{"_id": "d1", "title": "Timeouts", "text": "Set a timeout on the client with timeout=5.0."},
              {"_id": "d2", "title": "Pools", "text": "The connection pool keeps ten connections open."}]
    (folder / "corpus.jsonl").write_text("".join(json.dumps(entry) + "\n" for entry in corpus))
    (folder / "queries.jsonl").write_text(json.dumps({"_id": "q1", "text": "client timeout"}) + "\n")
    (folder / "qrels" / "train.tsv").write_text("query-id\tcorpus-id\tscore\nq1\td1\t1\n")
    return folder


def test_each_command_prints_its_plain_output_on_a_directly_opened_index(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, hash_embedder_by_default):
    monkeypatch.setenv("RAGSTREAM_DATA_DIR", str(tmp_path / "index"))
    places = {"folder": str(make_docs_folder(tmp_path / "docs")), "beir": str(_beir(tmp_path / "beir")),
              "copy": str(tmp_path / "copy"), "demo": str(tmp_path / "demo"), "postgres": str(tmp_path / "pg")}
    for name, args, expected in PLAIN_RUNS:
        if "{document_id}" in expected + " ".join(args) and "document_id" not in places:
            listed = runner.invoke(app, ["docs", "list", "--json"])
            assert listed.exit_code == 0, listed.output
            places["document_id"] = json.loads(listed.stdout)[0]["document_id"]
        command = [*name.split(), *(arg.format(**places) for arg in args)]
        result = runner.invoke(app, command, input=CHAT_INPUT if name == "chat" else None)
        assert result.exit_code == 0, f"ragstream {' '.join(command)} exited {result.exit_code}:\n{result.output}"
        assert expected.format(**places) in result.output, f"ragstream {' '.join(command)} printed:\n{result.output}"
