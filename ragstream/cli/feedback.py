"""``ragstream feedback summary``: how askers rated the answers, per day, and the worst-rated questions."""

from __future__ import annotations

from typing import Annotated

import typer
from rich.markup import escape

from ragstream.cli.index import console, fail, open_index
from ragstream.cli.options import ConfigOption, DataDirOption
from ragstream.errors import RagstreamError


def summary(
    days: Annotated[int | None, typer.Option(help="Days covered, today included (default answer.feedback.summary_days).")] = None,
    worst: Annotated[int | None, typer.Option(help="Worst-rated questions listed (default answer.feedback.worst_questions).")] = None,
    config: ConfigOption = None,
    data_dir: DataDirOption = None,
    json_output: Annotated[bool, typer.Option("--json", help="Print the summary as JSON.")] = False,
) -> None:
    """Answers, the helpful rate and the citation-opening rate per day and per collection, and the questions rated
    not helpful most."""
    rs = open_index(config, data_dir, must_exist=True)
    try:
        report = rs.feedback.summary(days, worst)
    except RagstreamError as error:
        fail(error)
    finally:
        rs.close()
    if json_output:
        print(report.model_dump_json(indent=2))
        return
    console.print(f"since {report.since}: {report.answers} answers, helpful {_rate(report.helpful_rate)} of the rated, "
                  f"citations opened on {_rate(report.citation_open_rate)}")
    for day in report.days:
        console.print(f"  {day.day}  {day.answers:5d} answers  {day.rated:4d} rated  helpful {_rate(day.helpful_rate):>6}  "
                      f"citations opened {_rate(day.citation_open_rate):>6}")
    for collection in report.collections:  # an answer counts for each collection its cited documents were in
        name = escape(collection.name) if collection.name is not None else f"(deleted {collection.collection_id})"
        console.print(f"  collection {name}: {collection.answers} answers  {collection.rated} rated  "
                      f"helpful {_rate(collection.helpful_rate)}  citations opened {_rate(collection.citation_open_rate)}")
    for question in report.worst_questions:
        console.print(f"  not helpful {question.not_helpful}x, helpful {question.helpful}x: {escape(question.question)}")


def _rate(share: float | None) -> str:
    return "-" if share is None else f"{share:.0%}"
