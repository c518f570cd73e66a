"""Feedback on answers through the facade and the CLI (issue 32, row 4): every answer (extractive, streamed,
no results) has a message id its asker rates; ratings and citation opens are per user; the summary and
``ragstream feedback summary`` report them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from ragstream import metrics
from ragstream.answer.models import DoneEvent
from ragstream.cli import app
from ragstream.errors import InvalidFeedbackError, MessageNotFoundError
from ragstream.models import Scope

PAGE = ("# Timeouts\n\nThe client waits five seconds for a response before it raises a timeout error. "
        "You can change the timeout on every request or on the client.\n")


def test_every_kind_of_answer_can_be_rated_by_its_asker(make_fast_index, tmp_path: Path) -> None:
    (tmp_path / "timeouts.md").write_text(PAGE, encoding="utf-8")
    rs = make_fast_index()
    rs.ingest([tmp_path / "timeouts.md"])
    extractive = rs.ask("How long does the client wait for a response?", scope=Scope(user="alice"))
    nothing = rs.ask("Which penguins live on the moon?", scope=Scope(user="alice"))
    [done] = [event for event in rs.stream_answer("How do I change the timeout?", scope=Scope(user="alice"))
              if isinstance(event, DoneEvent)]
    assert extractive.metadata["mode"] == "extractive" and nothing.metadata["mode"] == "no_results"
    ids = [extractive.metadata["message_id"], nothing.metadata["message_id"], done.message_id]
    assert len(set(ids)) == 3
    for message_id, rating in zip(ids, ["helpful", "not_helpful", "not_helpful"], strict=True):
        assert rs.feedback.rate(message_id, rating, user="alice").rating == rating
    rs.feedback.citation_opened(ids[0], user="alice")
    with pytest.raises(MessageNotFoundError):
        rs.feedback.rate(ids[0], "helpful", user="bob")
    with pytest.raises(MessageNotFoundError):
        rs.feedback.rate(ids[0], "helpful")  # the Python API's own (no user) answers are another asker's
    with pytest.raises(MessageNotFoundError):
        rs.feedback.citation_opened("no-such-id", user="alice")
    with pytest.raises(InvalidFeedbackError):
        rs.feedback.rate(ids[0], "Helpful", user="alice")
    with pytest.raises(InvalidFeedbackError):
        rs.feedback.summary(days=10_000)

    summary = rs.feedback.summary()
    assert (summary.answers, summary.helpful_rate, summary.citation_open_rate) == (3, round(1 / 3, 4), round(1 / 3, 4))
    assert [q.question for q in summary.worst_questions] == ["How do I change the timeout?",
                                                             "Which penguins live on the moon?"]
    assert rs.feedback.summary(worst=1).worst_questions[0].question == "How do I change the timeout?"


def test_the_cli_prints_the_summary(tmp_path: Path, monkeypatch, hash_embedder_by_default) -> None:
    data_dir = tmp_path / "index"
    monkeypatch.setenv("RAGSTREAM_DATA_DIR", str(data_dir))
    (tmp_path / "timeouts.md").write_text(PAGE, encoding="utf-8")
    runner = CliRunner()
    assert runner.invoke(app, ["ingest", str(tmp_path / "timeouts.md")]).exit_code == 0
    asked = runner.invoke(app, ["ask", "--json", "How long does the client wait for a response?"])
    assert asked.exit_code == 0, asked.output
    message_id = json.loads(asked.stdout)["metadata"]["message_id"]

    from ragstream import Ragstream, load_config  # the CLI's own index, rated as the Python API's user
    with Ragstream(load_config()) as rs:
        rs.feedback.rate(message_id, "not_helpful", "wrong page")

    printed = runner.invoke(app, ["feedback", "summary", "--json", "--days", "2"])
    assert printed.exit_code == 0, printed.output
    summary = json.loads(printed.stdout)
    assert summary["answers"] == 1 and summary["helpful_rate"] == 0.0
    assert summary["worst_questions"][0]["question"] == "How long does the client wait for a response?"
    text = runner.invoke(app, ["feedback", "summary"])
    assert text.exit_code == 0 and "not helpful 1x" in text.stdout
    bad = runner.invoke(app, ["feedback", "summary", "--worst", "-1"])
    assert bad.exit_code == 2 and "invalid_feedback" in bad.output


def test_a_citation_opened_again_counts_once(make_fast_index, tmp_path: Path) -> None:
    """Issue 41 item 5: through the facade, 1,000 opens of one citation by its asker count once (in the summary
    and in ragstream_citation_opens_total); each other citation once more; a bad citation is refused."""
    (tmp_path / "timeouts.md").write_text(PAGE, encoding="utf-8")
    rs = make_fast_index()
    rs.ingest([tmp_path / "timeouts.md"])
    message_id = rs.ask("How long does the client wait for a response?", scope=Scope(user="alice")).metadata["message_id"]
    counted = metrics.CITATION_OPENS._value.get()
    for _ in range(FACADE_OPENS):
        rs.feedback.citation_opened(message_id, user="alice")
    assert rs.feedback.summary().days[0].citation_opens == 1
    assert rs.feedback.citation_opened(message_id, 1, user="alice")
    assert not any(rs.feedback.citation_opened(message_id, 1, user="alice") for _ in range(FACADE_OPENS))
    assert rs.feedback.citation_opened(message_id, 2, user="alice")
    assert rs.feedback.summary().days[0].citation_opens == 3
    assert metrics.CITATION_OPENS._value.get() - counted == 3
    for bad in (0, -3, rs.config.answer.feedback.max_citation_number + 1):
        with pytest.raises(InvalidFeedbackError):
            rs.feedback.citation_opened(message_id, bad, user="alice")
    with pytest.raises(MessageNotFoundError):
        rs.feedback.citation_opened(message_id, 1, user="bob")


FACADE_OPENS = 1_000
