"""``ragstream sync`` and ``ragstream watch``: the commands, what they print, and how a standalone watch
shares its index (it serves the index's API on loopback while it holds an embedded store)."""

from __future__ import annotations

import signal
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.console import Console

from ragstream.cli.documents import SELECTION_REASONS, SKIP_REASON_LABELS, skipped_links_line
from ragstream.cli.index import EXIT_ERROR, console, err_console, fail, load_settings, open_index, open_settings_index
from ragstream.cli.options import CollectionOption, ConfigOption, DataDirOption, VerboseOption
from ragstream.errors import RagstreamError
from ragstream.models import LOCAL_ADMIN

if TYPE_CHECKING:
    from ragstream.api import Ragstream
    from ragstream.api_types import SyncReport

LOOPBACK = "127.0.0.1"
QUIET = "warning"


def sync(
    paths: Annotated[list[Path], typer.Argument(help="Folders (or files) to keep the index in step with.")],
    forget: Annotated[bool, typer.Option(
        "--forget", help="Instead: remove every document of these roots and unregister them (the folders may be gone).")] = False,
    collection: CollectionOption = None,
    config: ConfigOption = None,
    data_dir: DataDirOption = None,
    json_output: Annotated[bool, typer.Option("--json", help="Print the report as JSON (every file's outcome).")] = False,
    verbose: VerboseOption = False,
) -> None:
    """Make the index match folders: ingest new and changed files, re-link renamed ones (without embedding
    again), remove the documents of files that are gone or now excluded.

    Files are taken as by ingest (ingest.include / exclude, .gitignore / .ragstreamignore), minus editors'
    temporary files. The documents remember their root and are shared. A root that does not exist is
    reported and nothing of it is removed; exit 1 then, or when every file failed.
    """
    with open_index(config, data_dir) as rs:
        try:
            report = _forget_roots(rs, paths) if forget else _sync_with_status(rs, paths, quiet=json_output,
                                                                               collection=collection)
        except RagstreamError as error:  # e.g. insufficient_storage: every document switch before it is whole
            fail(error)
    if json_output:
        console.print_json(report.model_dump_json())
    else:
        print_sync_report(report, console, verbose=verbose)
    missing = any(failure.code == "root_not_found" for failure in report.failures)
    nothing = report.failures and not (report.changes or report.unchanged or report.adopted)
    if missing or nothing:
        raise typer.Exit(code=1)


def watch(
    paths: Annotated[list[Path], typer.Argument(help="Folders (or files) to keep the index in step with.")],
    port: Annotated[int | None, typer.Option(
        help="Loopback port of the index's API that other commands use while the watch holds an embedded index "
        "(default sync.watch_port; 0: a free one).")] = None,
    collection: CollectionOption = None,
    config: ConfigOption = None,
    data_dir: DataDirOption = None,
) -> None:
    """Keep the index in step with folders as their files change, until Ctrl-C: a full sync first, then one
    per batch of changes (debounced; files still being written wait; editors' temporary files never count).

    Other commands on the index keep working meanwhile: on the embedded store this process serves the
    index's API on loopback and they go through it, as with `ragstream serve`.
    """
    from ragstream.api_runtime import serve_link
    from ragstream.api_writes import single_process_reason

    settings = load_settings(config, data_dir)
    held = serve_link.announcement(settings.data_dir)
    single = single_process_reason(settings) is not None
    if held is not None and single:
        err_console.print(f"ragstream {held.kind} at {held.url} (process {held.pid}) holds the index at "
                          f"{Path(settings.data_dir).resolve()}: watch from inside it (ragstream serve --watch PATH), "
                          "or stop it first", soft_wrap=True)
        raise typer.Exit(code=EXIT_ERROR)
    with open_settings_index(settings, must_exist=False) as rs:
        try:
            rs.collect_roots(paths, collection)
            watch_here(rs, paths, console, serve_port=(settings.sync.watch_port if port is None else port) if single else None)
        except RagstreamError as error:
            fail(error)


def _sync_with_status(rs: Ragstream, paths: list[Path], *, quiet: bool, collection: str | None = None) -> SyncReport:
    """Sync with a status line on stderr (files ingested so far)."""
    if quiet:
        return rs.sync(paths, collection=collection, writer=LOCAL_ADMIN)
    done = [0]
    with err_console.status("syncing: comparing files with the index") as status:
        def advance(outcome: str, source: str) -> None:
            done[0] += 1
            status.update(f"syncing: {done[0]} file(s) ingested, last {Path(source).name}")

        return rs.sync(paths, progress=advance, collection=collection, writer=LOCAL_ADMIN)


def _forget_roots(rs: Ragstream, paths: list[Path]) -> SyncReport:
    """``sync --forget``: every root's documents removed, the roots unregistered, as one report."""
    from ragstream.api_types import SyncReport

    return SyncReport().merge(rs.forget_root(path) for path in paths)


def print_sync_report(report: SyncReport, console: Console, *, verbose: bool) -> None:
    """The one-line summary; failures by code on a second line; every file with ``verbose``."""
    console.print(report.summary(), soft_wrap=True, highlight=False)
    hint = "" if verbose else " (--verbose lists them)"
    links = skipped_links_line(report.skipped_files)
    if links is not None:
        console.print(f"{links}{hint}", soft_wrap=True, highlight=False)
    if report.failures:
        codes: dict[str, int] = {}
        for failure in report.failures:
            codes[failure.code] = codes.get(failure.code, 0) + 1
        counted = ", ".join(f"{count} {code}" for code, count in sorted(codes.items(), key=lambda item: -item[1]))
        console.print(f"[red]failed {len(report.failures)}[/]: {counted}{hint}", soft_wrap=True)
    if not verbose:
        return
    for label, sources in (("added", report.added), ("changed", report.changed), ("removed", report.removed),
                           ("adopted", report.adopted)):
        for source in sources:
            console.print(f"  {label} {source}", soft_wrap=True, highlight=False, markup=False)
    for moved in report.renamed:
        console.print(f"  renamed {moved.previous_source} -> {moved.source} ({moved.chunks} chunks, not embedded again)",
                      soft_wrap=True, highlight=False, markup=False)
    for failure in report.failures:
        console.print(f"  [red]failed[/] {failure.source}: {failure.code}: {failure.message}", soft_wrap=True)
    for warning in report.warnings:
        console.print(f"  [yellow]warning[/] {warning}", soft_wrap=True)
    for skipped in report.skipped_files:
        if skipped.reason not in SELECTION_REASONS:
            console.print(f"  skipped {skipped.source}: {SKIP_REASON_LABELS[skipped.reason]}", soft_wrap=True,
                          highlight=False, markup=False)


def watch_here(rs: Ragstream, paths: Sequence[Path], console: Console, *, serve_port: int | None) -> None:
    """Watch ``paths`` until Ctrl-C or SIGTERM, printing each batch that changed something.

    ``serve_port`` None: the index is one every process may open (other commands open it themselves), and the
    watch runs on this thread. Otherwise the index is one this process holds (the embedded store): the index's
    HTTP API is served on loopback at ``serve_port`` (0: a free one) and announced in the data directory, so
    search, ask, chat and docs go through this process while it watches, as they do with ``ragstream serve``.
    """
    def printed(report: SyncReport) -> None:
        if report.changes or report.failures:
            console.print(report.summary(), soft_wrap=True, highlight=False)

    if serve_port is not None:
        from ragstream.server import serve as run_server

        # Requests of other commands are not worth a log line each here: warnings and errors only.
        server_config = rs.config.server.model_copy(update={"host": LOOPBACK, "port": serve_port, "log_level": QUIET})
        _say_watching(console, [Path(path).resolve() for path in paths])
        run_server(rs, server_config, watch=paths, kind="watch", on_report=printed)
        return
    watcher = rs.watcher(paths, on_report=printed, writer=LOCAL_ADMIN)
    _say_watching(console, watcher.roots)
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, lambda signum, frame: watcher.stop())
    watcher.run()


def _say_watching(console: Console, roots: Sequence[Path]) -> None:
    console.print(f"watching {', '.join(str(Path(root)) for root in roots)} (Ctrl-C stops)", soft_wrap=True, highlight=False)
