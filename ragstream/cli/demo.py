"""``ragstream demo``: the bundled samples ingested, searched and answered, then optionally served."""

from __future__ import annotations

from importlib import resources
from typing import Annotated

import typer

from ragstream.cli.answers import print_answer
from ragstream.cli.documents import ingest_with_progress, print_ingest_report
from ragstream.cli.index import console, fail, open_index
from ragstream.cli.options import ConfigOption, DataDirOption, VerboseOption
from ragstream.cli.search import print_search_result
from ragstream.errors import RagstreamError

DEMO_QUESTION = "How do I set a timeout on a request?"


def demo(
    question: Annotated[str, typer.Option(help="Question to answer from the samples.")] = DEMO_QUESTION,
    serve_after: Annotated[bool, typer.Option("--serve", help="Then start the HTTP API and web UI.")] = False,
    config: ConfigOption = None,
    data_dir: DataDirOption = None,
    verbose: VerboseOption = False,
) -> None:
    """Ingest the bundled sample documents, answer a question from them, optionally serve the UI."""
    samples = resources.files("ragstream") / "samples" / "docs"
    with resources.as_file(samples) as sample_dir, open_index(config, data_dir) as rs:
        console.print(f"[bold]Ingesting the bundled samples[/] from {sample_dir} into {rs.config.data_dir}")
        print_ingest_report(ingest_with_progress(rs, [sample_dir], quiet=False), verbose=verbose)
        console.print(f"\n[bold]Search:[/] {question}")
        print_search_result(rs.search(question, top_k=5))
        console.print(f"\n[bold]Answer:[/] {question}\n")
        try:
            print_answer(rs, question, None, None, stream=True, json_output=False)
        except RagstreamError as error:
            fail(error)
        if serve_after:
            from ragstream.server import serve as run_server

            console.print()
            run_server(rs, rs.config.server)
