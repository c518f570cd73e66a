"""Feedback per collection (issue 31 and issue 32, row 4): an answer counts for the collections its cited documents
belonged to when it was given (a document moved later leaves its past answers where they were), the summary and
``ragstream feedback summary`` give helpful rates per collection on SQLite and PostgreSQL, and ``ragstream
migrate`` copies every answer's feedback with its collections."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from support.hash_embedder import HashEmbedder
from support.index_fixtures import FAST_DEFAULTS
from support.link_folders import run_cli

from ragstream import Ragstream, load_config
from ragstream.feedback import FeedbackSummary
from ragstream.models import Scope

HANDBOOK = ("# Leave\n\nThe notice period for leaving the company is three months, given in writing to your manager. "
            "Holidays are twenty-five days a year.\n")
MANUAL = ("# Installing the widget\n\nThe widget installer needs Python 3.12 and a writable folder. Run the "
          "installer and restart the widget service afterwards.\n")
NOTICE = "What is the notice period for leaving the company?"
INSTALL = "What does the widget installer need?"


def _folders(tmp_path: Path) -> tuple[Path, Path]:
    hr, product = tmp_path / "hr", tmp_path / "product"
    hr.mkdir()
    product.mkdir()
    (hr / "handbook.md").write_text(HANDBOOK, encoding="utf-8")
    (product / "manual.md").write_text(MANUAL, encoding="utf-8")
    return hr, product


def _rates(summary: FeedbackSummary) -> dict[str | None, tuple[int, int, int, float | None]]:
    return {c.name: (c.answers, c.helpful, c.not_helpful, c.helpful_rate) for c in summary.collections}


@pytest.fixture(params=["sqlite", "postgres"])
def index(request: pytest.FixtureRequest, tmp_path: Path, hash_embedder: HashEmbedder) -> Ragstream:
    overrides = {}
    if request.param == "postgres":  # the catalog and the store in a real PostgreSQL (support/backend_fixtures.py)
        overrides = {"store": {"backend": "postgres", "url": request.getfixturevalue("postgres_url")}}
    rs = Ragstream(load_config(data_dir=tmp_path / "index", **{**FAST_DEFAULTS, **overrides}), embedder=hash_embedder)
    yield rs
    rs.close()


def test_the_summary_rates_each_collection_an_answer_drew_on(index: Ragstream, tmp_path: Path) -> None:
    rs = index
    hr, product = _folders(tmp_path)
    rs.create_collection("hr")
    rs.create_collection("product")
    rs.ingest([hr], collection="hr")
    rs.ingest([product], collection="product")
    notice = rs.ask(NOTICE, scope=Scope(collections=["hr"]))
    install = rs.ask(INSTALL, scope=Scope(collections=["product"]))
    unscoped = rs.ask(INSTALL)
    assert [c.collections for c in notice.citations if c.matched] and \
        all(c.collections == ["hr"] for c in notice.citations if c.matched)
    rs.feedback.rate(notice.metadata["message_id"], "helpful")
    rs.feedback.rate(install.metadata["message_id"], "not_helpful")
    rs.feedback.rate(unscoped.metadata["message_id"], "helpful")
    rs.feedback.citation_opened(install.metadata["message_id"])
    summary = rs.feedback.summary()
    assert _rates(summary) == {"hr": (1, 1, 0, 1.0), "product": (2, 1, 1, 0.5)}
    assert [c.citation_open_rate for c in summary.collections] == [0.0, 0.5]

    # the handbook moves to product: its past answer still counts for hr, the next one for product
    [handbook] = rs.documents(scope=Scope(collections=["hr"]))
    rs.add_to_collection("product", [handbook.document_id])
    rs.remove_from_collection("hr", [handbook.document_id])
    again = rs.ask(NOTICE, scope=Scope(collections=["product"]))
    rs.feedback.rate(again.metadata["message_id"], "not_helpful")
    assert _rates(rs.feedback.summary()) == {"hr": (1, 1, 0, 1.0), "product": (3, 1, 2, round(1 / 3, 4))}

    # a deleted collection keeps its answers under its id, without a name
    rs.delete_collection("hr")
    [gone] = [c for c in rs.feedback.summary().collections if c.name is None]
    assert (gone.answers, gone.helpful) == (1, 1) and gone.collection_id


def test_an_answer_that_cites_nothing_counts_for_no_collection(index: Ragstream, tmp_path: Path) -> None:
    rs = index
    hr, _ = _folders(tmp_path)
    rs.create_collection("hr")
    rs.ingest([hr], collection="hr")
    nothing = rs.ask("Which penguins live on the moon?", scope=Scope(collections=["hr"]))
    assert nothing.metadata["mode"] == "no_results"
    rs.feedback.rate(nothing.metadata["message_id"], "not_helpful")
    summary = rs.feedback.summary()
    assert summary.answers == 1 and summary.collections == []


def test_migrate_copies_every_answer_with_its_feedback_and_collections(tmp_path: Path, hash_embedder: HashEmbedder,
                                                                       postgres_url: str) -> None:
    source = Ragstream(load_config(data_dir=tmp_path / "source", **FAST_DEFAULTS), embedder=hash_embedder)
    hr, product = _folders(tmp_path)
    source.create_collection("hr")
    source.create_collection("product")
    source.ingest([hr], collection="hr")
    source.ingest([product], collection="product")
    for question, name, rating in [(NOTICE, "hr", "helpful"), (INSTALL, "product", "not_helpful"), (NOTICE, "hr", None)]:
        answer = source.ask(question, scope=Scope(collections=[name]))
        if rating:
            source.feedback.rate(answer.metadata["message_id"], rating, "a comment")
            source.feedback.citation_opened(answer.metadata["message_id"])
    expected = source.feedback.summary()
    assert _rates(expected) == {"hr": (2, 1, 0, 1.0), "product": (1, 0, 1, 0.0)}
    report = source.migrate(postgres_url)
    assert report.ok and report.feedback_copied == 3
    assert next(c for c in report.checks if c.name == "answer feedback").target_count == 3
    source.close()
    copy = Ragstream(load_config(data_dir=tmp_path / "pg", store={"backend": "postgres", "url": postgres_url},
                                 **FAST_DEFAULTS), embedder=hash_embedder)
    assert copy.feedback.summary() == expected
    copy.close()


def test_the_cli_prints_rates_per_collection(tmp_path: Path) -> None:
    """Each command in its own process, as a user types them (support/link_folders.run_cli)."""
    data_dir = tmp_path / "index"
    hr, product = _folders(tmp_path)
    for name, folder in (("hr", hr), ("product", product)):
        assert run_cli(data_dir, "collections", "create", name).returncode == 0
        ingested = run_cli(data_dir, "ingest", str(folder), "--collection", name)
        assert ingested.returncode == 0, ingested.stderr
    ids = {}
    for question, name in ((NOTICE, "hr"), (INSTALL, "product")):
        asked = run_cli(data_dir, "ask", "--json", "--collection", name, question)
        assert asked.returncode == 0, asked.stderr
        ids[name] = json.loads(asked.stdout)["metadata"]["message_id"]
    rs = Ragstream(load_config(data_dir=data_dir, **FAST_DEFAULTS), embedder=HashEmbedder())
    rs.feedback.rate(ids["hr"], "helpful")  # no rating command: the Python API rates the CLI's (no user) answers
    rs.feedback.rate(ids["product"], "not_helpful")
    rs.close()
    shown = run_cli(data_dir, "feedback", "summary", "--json")
    assert shown.returncode == 0, shown.stderr
    assert {c["name"]: c["helpful_rate"] for c in json.loads(shown.stdout)["collections"]} == {"hr": 1.0, "product": 0.0}
    printed = run_cli(data_dir, "feedback", "summary")
    assert printed.returncode == 0, printed.stderr
    assert "collection hr: 1 answers  1 rated  helpful 100%" in printed.stdout
    assert "collection product: 1 answers  1 rated  helpful 0%" in printed.stdout
