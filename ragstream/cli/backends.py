"""``ragstream migrate`` and ``ragstream db``: moving an index to another store backend, and the bundled
PostgreSQL the postgres backend can run on (docs/backends.md)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from ragstream.cli.index import EXIT_EMPTY_INDEX, console, err_console, fail, load_settings, open_index
from ragstream.cli.options import ConfigOption, DataDirOption
from ragstream.errors import RagstreamError

DbDirOption = Annotated[Path | None, typer.Option("--dir", help="Where the server keeps its data; default DATA_DIR/postgres.")]


def migrate(
    to: Annotated[str, typer.Option("--to", help="Target: a folder (embedded store), qdrant:FOLDER (qdrant-client local "
                                    "mode), http(s)://host:6333 (a Qdrant server) or postgresql://user@host/db.")],
    target_dir: Annotated[Path | None, typer.Option(
        "--target-dir", help="Data directory of the target (its SQLite catalog, for a Qdrant server target).")] = None,
    collection: Annotated[str | None, typer.Option("--collection", help="Qdrant collection of the target.")] = None,
    config: ConfigOption = None,
    data_dir: DataDirOption = None,
) -> None:
    """Copy the index to another backend without re-embedding; resumable; verified by counts and checksums.

    Exits 1 when the verification finds a difference (run it again to resume or repair).
    """
    with open_index(config, data_dir, must_exist=True) as rs:
        try:
            report = rs.migrate(to, target_dir=target_dir, collection=collection,
                                progress=lambda stage, done, total: err_console.print(
                                    f"{stage} {done}/{total}" if total else f"{stage} {done}", highlight=False))
        except RagstreamError as error:
            fail(error)
    console.print(f"copied {report.documents_copied} documents ({report.chunks_copied} chunks), "
                  f"{report.documents_already_there} already in the target, {report.documents_removed} removed; "
                  f"{report.embeddings_copied} cached embeddings, {report.turns_copied} conversation turns, "
                  f"{report.feedback_copied} answers with their feedback")
    from rich.table import Table

    table = Table("part", "source", "target", "source sha256", "target sha256", "ok")
    for check in report.checks:
        table.add_row(check.name, str(check.source_count), str(check.target_count), check.source_checksum[:16],
                      check.target_checksum[:16], "yes" if check.ok else "[bold red]NO[/]")
    console.print(table)
    console.print(f"vectors: {report.vectors_compared} compared, largest difference {report.max_vector_difference:.2e} "
                  f"(tolerance {report.vector_tolerance:.0e})")
    if not report.ok:
        err_console.print(f"[bold red]verification failed[/]: the copy at {to} differs; run the migration again")
        raise typer.Exit(code=1)
    console.print(f"verified: {to} holds the same index")


def _db_dir(config: Path | None, data_dir: Path | None, directory: Path | None) -> Path:
    return directory or Path(load_settings(config, data_dir).data_dir) / "postgres"


def db_start(
    config: ConfigOption = None, data_dir: DataDirOption = None, directory: DbDirOption = None,
    port: Annotated[int | None, typer.Option("--port", help="Loopback port (default store.local_server_port; 0: a free one).")] = None,
) -> None:
    """Start the bundled PostgreSQL 18 + pgvector (initialised on first use) and print its URL."""
    from ragstream.api_backends import postgres_server as server

    settings = load_settings(config, data_dir)
    folder = directory or Path(settings.data_dir) / "postgres"
    try:
        info = server.start(folder, port if port is not None else settings.store.local_server_port)
    except RagstreamError as error:
        fail(error)
    err_console.print(f"PostgreSQL running in {info.data_dir} (process {info.pid}); use it with:", soft_wrap=True)
    err_console.print("  export RAGSTREAM_STORE__BACKEND=postgres")
    print(f"export RAGSTREAM_STORE__URL='{info.url}'")


def db_stop(config: ConfigOption = None, data_dir: DataDirOption = None, directory: DbDirOption = None) -> None:
    """Stop the bundled PostgreSQL (fast shutdown: committed data stays)."""
    from ragstream.api_backends import postgres_server as server

    try:
        stopped = server.stop(_db_dir(config, data_dir, directory))
    except RagstreamError as error:
        fail(error)
    err_console.print("stopped" if stopped else "not running")


def db_status(config: ConfigOption = None, data_dir: DataDirOption = None, directory: DbDirOption = None) -> None:
    """Say whether the bundled PostgreSQL runs, and its URL (exit 1 when it does not)."""
    from ragstream.api_backends import postgres_server as server

    info = server.status(_db_dir(config, data_dir, directory))
    if info is None:
        err_console.print("not running")
        raise typer.Exit(code=EXIT_EMPTY_INDEX)
    err_console.print(f"running in {info.data_dir} (process {info.pid}, port {info.port})")
    print(info.url)
