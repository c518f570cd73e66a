"""The ``ragstream`` command line: a thin shell over :class:`ragstream.Ragstream`.

This module is the list of commands; each group lives in a module of its own: ``documents`` (ingest,
docs, reindex), ``collections`` (collections list|create|show|edit|delete), ``sync_watch`` (sync, watch),
``search`` (search, eval), ``answers`` (ask, chat, prompt), ``serving`` (serve, mcp), ``feedback`` (feedback summary),
``demo``, ``doctor`` (what runs each model here and why) and ``backends`` (migrate, db). ``index`` opens the
index a command uses and ends a command on an error;
``options`` holds the options they share.

Imports of the index, the models and the store happen inside the commands, so ``ragstream --help`` and a
command's argument errors stay light. Every command names the index it used on stderr, so ``--json``
output on stdout stays clean.
"""

from __future__ import annotations

import typer

from ragstream.cli import answers, backends, collections, demo, doctor, documents, feedback, search, serving, sync_watch

app = typer.Typer(help="ragstream: ingest documents, search them, get cited answers.", no_args_is_help=True)
docs_app = typer.Typer(help="List and delete ingested documents.", no_args_is_help=True)
app.add_typer(docs_app, name="docs")
db_app = typer.Typer(help="Run a local PostgreSQL with pgvector for the postgres backend (pip install 'ragstream\\[postgres]').",
                     no_args_is_help=True)
app.add_typer(db_app, name="db")
collections_app = typer.Typer(help="Separate bodies of documents with their own instructions and access.", no_args_is_help=True)
app.add_typer(collections_app, name="collections")
feedback_app = typer.Typer(help="How askers rated the answers (helpful / not helpful) and opened their citations.",
                           no_args_is_help=True)
app.add_typer(feedback_app, name="feedback")

app.command()(documents.ingest)
app.command()(sync_watch.sync)
app.command()(sync_watch.watch)
app.command()(search.search)
docs_app.command("list")(documents.docs_list)
docs_app.command("delete")(documents.docs_delete)
app.command()(documents.reindex)
app.command()(backends.migrate)
app.command(name="eval")(search.eval_command)
app.command()(serving.mcp)
app.command()(demo.demo)
app.command()(doctor.doctor)
app.command()(answers.prompt)
app.command()(serving.serve)
app.command()(answers.ask)
app.command()(answers.chat)
collections_app.command("list")(collections.collections_list)
collections_app.command("create")(collections.collections_create)
collections_app.command("show")(collections.collections_show)
collections_app.command("edit")(collections.collections_edit)
collections_app.command("delete")(collections.collections_delete)
db_app.command("start")(backends.db_start)
db_app.command("stop")(backends.db_stop)
db_app.command("status")(backends.db_status)
feedback_app.command("summary")(feedback.summary)

__all__ = ["app"]
