"""The ragstream CLI end to end, in process, on a real index.

The CLI opens its own index; ``hash_embedder_by_default`` makes it embed with the hash embedder
(fast tier). The BEIR evaluation scores the real model on real data (``slow``).
"""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest
from support.folder_corpus import IMAGES, MARKDOWN_PAGES, NOT_DOCUMENTS, make_docs_folder
from support.index_fixtures import SAMPLES
from typer.testing import CliRunner

from ragstream.cli import app

runner = CliRunner()


@pytest.fixture
def data_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("RAGSTREAM_DATA_DIR", str(tmp_path / "index"))
    return tmp_path / "index"


@pytest.fixture
def fast_data_dir(data_dir: Path, hash_embedder_by_default) -> Path:
    """``data_dir`` for a CLI that embeds with the hash embedder."""
    return data_dir


def _run(*args: str) -> str:
    """Run the CLI; its stdout (the index line and progress go to stderr)."""
    result = runner.invoke(app, list(args))
    assert result.exit_code == 0, result.output
    return result.stdout


def test_ingest_search_list_delete_reindex(fast_data_dir: Path, tmp_path: Path):
    bad = tmp_path / "bad.pdf"
    bad.write_bytes(b"%PDF-1.7\nnot really a pdf")
    report = json.loads(_run("ingest", str(SAMPLES / "httpx-timeouts.md"), str(SAMPLES / "httpx-async.md"), str(bad), "--json"))
    assert report["documents_processed"] == 2 and report["documents_failed"] == 1
    assert report["failures"][0]["code"] == "corrupt_document"

    summary = _run("ingest", str(SAMPLES / "httpx-timeouts.md"))
    assert "skipped unchanged 1" in summary

    result = json.loads(_run("search", "pool timeout", "--mode", "bm25", "--top-k", "3", "--json"))
    assert result["mode"] == "bm25" and len(result["hits"]) == 3
    assert result["hits"][0]["chunk"]["metadata"]["source"].endswith("httpx-timeouts.md")

    filtered = json.loads(_run("search", "client", "--filter", "has_code=true", "--json"))
    assert filtered["hits"] and all(hit["chunk"]["metadata"]["has_code"] for hit in filtered["hits"])

    table = _run("search", "How do I set a timeout?")
    assert "httpx-timeouts.md" in table

    documents = json.loads(_run("docs", "list", "--json"))
    assert len(documents) == 2
    _run("docs", "delete", documents[0]["document_id"])
    assert len(json.loads(_run("docs", "list", "--json"))) == 1

    assert "processed 1" in _run("reindex")


def test_errors_are_clear(fast_data_dir: Path):
    _run("ingest", str(SAMPLES / "httpx-timeouts.md"))
    result = runner.invoke(app, ["search", "   "])
    assert result.exit_code == 2 and "InvalidQueryError" in result.output
    result = runner.invoke(app, ["docs", "delete", "no-such-id"])
    assert result.exit_code == 2 and "document_not_found" in result.output
    result = runner.invoke(app, ["search", "x", "--filter", "oops"])
    assert result.exit_code != 0


def _small_beir(shared_data: Path, target: Path, queries: int = 25, distractors: int = 150) -> Path:
    source = shared_data / "scifact"
    with (source / "qrels" / "train.tsv").open() as handle:
        rows = list(csv.DictReader(handle, delimiter="\t"))
    chosen = sorted({row["query-id"] for row in rows}, key=int)[:queries]
    relevant = {row["corpus-id"] for row in rows if row["query-id"] in chosen}
    (target / "qrels").mkdir(parents=True)
    with (target / "qrels" / "train.tsv").open("w") as handle:
        handle.write("query-id\tcorpus-id\tscore\n")
        handle.writelines(f"{r['query-id']}\t{r['corpus-id']}\t{r['score']}\n" for r in rows if r["query-id"] in chosen)
    kept = 0
    with (source / "corpus.jsonl").open() as lines, (target / "corpus.jsonl").open("w") as out:
        for line in lines:
            doc_id = json.loads(line)["_id"]
            if doc_id in relevant or kept < distractors:
                kept += doc_id not in relevant
                out.write(line)
    with (source / "queries.jsonl").open() as lines, (target / "queries.jsonl").open("w") as out:
        out.writelines(line for line in lines if json.loads(line)["_id"] in chosen)
    return target


@pytest.mark.slow
def test_eval_prints_metrics_per_mode(data_dir: Path, tmp_path: Path, shared_data: Path):
    dataset = _small_beir(shared_data, tmp_path / "scifact-small")
    scores = json.loads(_run("eval", "--beir", str(dataset), "--split", "train", "--json"))
    assert set(scores) == {"bm25", "dense", "hybrid"}
    for mode_scores in scores.values():
        assert set(mode_scores) == {"ndcg@5", "ndcg@10", "precision@5", "recall@100", "mrr", "hit_rate@1"}
        assert all(0.0 <= value <= 1.0 for value in mode_scores.values())
    assert scores["hybrid"]["ndcg@10"] > 0.3
    with_pipeline = json.loads(_run("eval", "--beir", str(dataset), "--split", "train", "--json", "--mode", "pipeline"))
    assert set(with_pipeline) == {"bm25", "dense", "hybrid", "pipeline"}
    assert with_pipeline["hybrid"] == scores["hybrid"]
    assert with_pipeline["pipeline"]["ndcg@10"] > 0.3


def test_ask_and_chat_without_an_llm(fast_data_dir: Path):
    _run("ingest", str(SAMPLES / "httpx-timeouts.md"), str(SAMPLES / "httpx-async.md"))
    answer = json.loads(_run("ask", "How do I set a timeout on a client?", "--json"))
    assert answer["metadata"]["mode"] == "extractive"
    assert answer["citations"] and answer["sources"]
    assert answer["confidence"]["level"] in {"High", "Medium", "Low"}

    events = [json.loads(line) for line in _run("ask", "How do I disable timeouts?", "--stream", "--json").splitlines()]
    kinds = [event["type"] for event in events]
    assert kinds[0] == "token" and kinds[-1] == "done" and "citation" in kinds

    chat = runner.invoke(app, ["chat"], input="How do I set a timeout?\nAnd for async clients?\n\n")
    assert chat.exit_code == 0, chat.output
    assert chat.output.count("[1]") >= 2, "both answers cite their sources"
    # The follow-up was searched with the first question's topic, and the CLI says how (on stderr).
    assert "follow-up searched as: timeout: for async clients?" in chat.stderr


def test_folder_ingest_indexes_the_markdown_and_counts_the_rest_as_skipped(fast_data_dir: Path, tmp_path: Path):
    root = make_docs_folder(tmp_path / "docs")
    (root / ".gitignore").write_text("drafts/\n")
    (root / "drafts").mkdir()
    (root / "drafts" / "wip.md").write_text("# Work in progress\n")
    result = runner.invoke(app, ["ingest", str(root)])
    assert result.exit_code == 0, result.output
    not_documents = len(NOT_DOCUMENTS) + len(IMAGES)
    assert f"processed {len(MARKDOWN_PAGES)}," in result.stdout
    assert f"skipped {not_documents + 1} files: {not_documents} not a document type, 1 ignored" in result.stdout
    assert "custom.js" not in result.stdout, "per-file details only with --verbose"
    assert len(result.stdout.strip().splitlines()) == 2
    assert f"index {fast_data_dir.resolve()}" in result.stderr

    verbose = _run("ingest", str(root), "--verbose")
    assert f"skipped unchanged {len(MARKDOWN_PAGES)}" in verbose
    assert "custom.js: not a document type" in verbose and "drafts: ignored" in verbose

    documents = json.loads(_run("docs", "list", "--json"))
    assert sorted(Path(d["source"]).name for d in documents) == sorted(Path(name).name for name in MARKDOWN_PAGES)
    report = json.loads(_run("ingest", str(root), "--json"))
    assert report["files_skipped"] == {"not_a_document": not_documents, "ignored": 1}
    assert {entry["reason"] for entry in report["skipped_files"]} == {"not_a_document", "ignored"}


def test_named_files_that_are_not_documents_fail_with_a_short_summary(fast_data_dir: Path, tmp_path: Path):
    root = make_docs_folder(tmp_path / "docs")
    names = [str(root / name) for name in NOT_DOCUMENTS]
    result = runner.invoke(app, ["ingest", *names])
    assert result.exit_code == 1
    assert f"failed {len(names)}: {len(names)} unsupported_file_type (--verbose lists them)" in result.stdout
    verbose = runner.invoke(app, ["ingest", *names, "--verbose"])
    assert "detected SVG image" in verbose.stdout and "detected script" in verbose.stdout


def test_every_command_names_its_index_on_stderr(fast_data_dir: Path):
    result = runner.invoke(app, ["ingest", str(SAMPLES / "httpx-timeouts.md"), "--json"])
    assert result.exit_code == 0 and json.loads(result.stdout)["documents_processed"] == 1
    for args in (["search", "timeout", "--json"], ["docs", "list", "--json"], ["ask", "What is a timeout?", "--json"]):
        result = runner.invoke(app, args)
        assert result.exit_code == 0, result.output
        json.loads(result.stdout)
        assert result.stderr.strip().splitlines()[0] == f"index {fast_data_dir.resolve()} (1 document)"


def test_default_index_is_the_users_data_directory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                   hash_embedder_by_default):
    monkeypatch.delenv("RAGSTREAM_DATA_DIR", raising=False)
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    monkeypatch.chdir(tmp_path)
    result = runner.invoke(app, ["search", "timeout"])
    assert result.exit_code == 1
    assert f"no index at {tmp_path / 'xdg' / 'ragstream'} yet" in " ".join(result.stderr.split())
    assert not (tmp_path / "xdg").exists() and not (tmp_path / "ragstream_data").exists(), "searching creates nothing"
    _run("ingest", str(SAMPLES / "httpx-timeouts.md"))
    assert (tmp_path / "xdg" / "ragstream" / "catalog.sqlite3").is_file()
    assert "httpx-timeouts.md" in _run("search", "timeout")


def test_searching_an_empty_index_says_so(fast_data_dir: Path, make_fast_index):
    make_fast_index(data_dir=fast_data_dir).close()
    for args in (["search", "timeout"], ["ask", "What is a timeout?"]):
        result = runner.invoke(app, args)
        assert result.exit_code == 1
        assert "is empty: ingest documents first" in " ".join(result.stderr.split())


@pytest.mark.parametrize("top_k", ["0", "-5"])
def test_non_positive_top_k_is_an_error(fast_data_dir: Path, top_k: str):
    result = runner.invoke(app, ["search", "timeout", "--top-k", top_k])
    assert result.exit_code == 2 and "--top-k" in result.output and "greater than or equal to 1" in result.output


def test_unknown_filter_fields_are_errors(fast_data_dir: Path, tmp_path: Path):
    page = tmp_path / "tagged.md"
    page.write_text("---\nteam: platform\n---\n# Timeouts\n\nSet a read timeout.\n")
    _run("ingest", str(page))
    result = runner.invoke(app, ["search", "timeout", "--filter", "nosuchfield=1"])
    assert result.exit_code == 2
    message = " ".join(result.output.split())
    assert "unknown filter field 'nosuchfield'" in message and "has_code" in message and "team" in message
    assert json.loads(_run("search", "timeout", "--filter", "team=platform", "--json"))["hits"]


def test_commands_go_through_a_running_server_on_the_index(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    import httpx
    from support.server_process import running_server

    with running_server(tmp_path, hash_embedder=True) as server:
        files = [("files", (name, (SAMPLES / name).read_bytes())) for name in ("httpx-timeouts.md", "httpx-async.md")]
        assert httpx.post(f"{server.url}/api/documents", files=files, timeout=60).status_code == 201
        assert json.loads((server.data_dir / "server.json").read_text())["url"] == server.url
        monkeypatch.setenv("RAGSTREAM_DATA_DIR", str(server.data_dir))

        result = runner.invoke(app, ["search", "pool timeout", "--mode", "bm25", "--top-k", "2", "--json"])
        assert result.exit_code == 0, result.output
        assert f"via ragstream serve at {server.url}" in result.stderr
        hits = json.loads(result.stdout)["hits"]
        assert len(hits) == 2 and hits[0]["chunk"]["metadata"]["source"].endswith("httpx-timeouts.md")

        listed = json.loads(_run("docs", "list", "--json"))
        assert len(listed) == 2
        answer = json.loads(_run("ask", "How do I set a timeout on a client?", "--json"))
        assert answer["citations"] and answer["metadata"]["mode"] == "extractive"
        events = [json.loads(line) for line in _run("ask", "What is a pool timeout?", "--stream", "--json").splitlines()]
        assert events[-1]["type"] == "done" and any(event["type"] == "token" for event in events)

        unknown = runner.invoke(app, ["search", "x", "--filter", "nosuchfield=1"])
        assert unknown.exit_code == 2 and "unknown filter field" in unknown.output
        bad = runner.invoke(app, ["search", "   "])
        assert bad.exit_code == 2 and "invalid_query" in bad.output

        _run("docs", "delete", listed[0]["document_id"])
        assert len(json.loads(_run("docs", "list", "--json"))) == 1

        held = runner.invoke(app, ["ingest", str(SAMPLES / "httpx-async.md")])
        assert held.exit_code == 2 and f"ragstream serve at {server.url}" in " ".join(held.stderr.split())
    assert not (server.data_dir / "server.json").exists(), "a stopped server withdraws its announcement"


def test_help_keeps_the_brackets_of_an_extra():
    """Rich markup must not swallow ``[postgres]`` in the install hint."""
    result = runner.invoke(app, ["db", "--help"], terminal_width=200)
    assert result.exit_code == 0
    assert "ragstream[postgres]" in result.output
