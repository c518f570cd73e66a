"""``ragstream collections`` and ``--collection`` (docs/collections.md, docs/cli.md): two collections made with
the CLI over two folders; the same question scoped to each cites only that collection's documents, and unscoped
it reads both. The CLI runs in process (CliRunner) on the hash embedder."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from support.folder_corpus import write_text
from typer.testing import CliRunner

from ragstream.cli import app

runner = CliRunner()
QUESTION = "what is the notice period?"
FOLDERS = {
    "handbook": {"notice.md": "# Notice period\n\nThe notice period for employees is three months, in writing.\n",
                 "leave.md": "# Leave\n\nTwenty-five days of annual leave; the notice period for leave is two weeks.\n"},
    "minutes": {"board.md": "# Board minutes\n\nThe board discussed the notice period of the office lease.\n",
                "standup.md": "# Standup\n\nThe team reviewed the release; the notice period was not discussed.\n"},
}


@pytest.fixture
def index(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, hash_embedder_by_default) -> Path:
    monkeypatch.setenv("RAGSTREAM_DATA_DIR", str(tmp_path / "index"))
    for name, files in FOLDERS.items():
        for file, text in files.items():
            write_text(tmp_path / name / file, text)
    return tmp_path


def _run(*args: str, code: int = 0) -> str:
    result = runner.invoke(app, list(args))
    assert result.exit_code == code, result.output
    return result.stdout


def _cited(answer: dict) -> set[str]:
    return {Path(c["source"]).name for c in answer["citations"] if c["matched"]}


def test_two_collections_over_two_folders_answer_apart(index: Path):
    _run("collections", "create", "handbook", "--description", "HR", "--instructions", "Quote the handbook.")
    _run("collections", "create", "minutes", "--access", "all")
    _run("ingest", str(index / "handbook"), "--collection", "handbook")
    _run("sync", str(index / "minutes"), "--collection", "minutes")
    listed = {c["name"]: c["documents"] for c in json.loads(_run("collections", "list", "--json"))}
    assert listed == {"default": 0, "handbook": 2, "minutes": 2}
    for name in FOLDERS:
        answer = json.loads(_run("ask", QUESTION, "--collection", name, "--json"))
        assert _cited(answer) and _cited(answer) <= set(FOLDERS[name]), answer["citations"]
        assert {tuple(s["collections"]) for s in answer["sources"]} == {(name,)}
        hits = json.loads(_run("search", QUESTION, "--collection", name, "--json", "--top-k", "10"))["hits"]
        assert {Path(h["chunk"]["metadata"]["source"]).name for h in hits} == set(FOLDERS[name])
    hits = json.loads(_run("search", QUESTION, "--json", "--top-k", "10"))["hits"]
    assert {Path(h["chunk"]["metadata"]["source"]).name for h in hits} == set(FOLDERS["handbook"]) | set(FOLDERS["minutes"])
    docs = json.loads(_run("docs", "list", "--collection", "minutes", "--json"))
    assert {Path(d["source"]).name for d in docs} == set(FOLDERS["minutes"])
    assert "Quote the handbook." in _run("prompt", QUESTION, "--collection", "handbook")


def test_show_edit_and_delete(index: Path):
    _run("collections", "create", "handbook")
    _run("ingest", str(index / "handbook"), "--collection", "handbook")
    shown = json.loads(_run("collections", "show", "handbook", "--json"))
    assert (shown["access"], shown["documents"]) == ("private", 2)
    edited = json.loads(_run("collections", "edit", "handbook", "--name", "hr", "--access", "readers", "--reader", "bob",
                             "--json"))
    assert (edited["name"], edited["readers"]) == ("hr", ["bob"])
    missing = runner.invoke(app, ["ask", QUESTION, "--collection", "handbook"])  # renamed
    assert missing.exit_code != 0 and "collection_not_found" in missing.output
    refused = runner.invoke(app, ["collections", "delete", "hr"])
    assert refused.exit_code != 0 and "collection_not_empty" in refused.output
    assert "2 document(s)" in _run("collections", "delete", "hr", "--delete-documents")
    assert json.loads(_run("docs", "list", "--json")) == []
