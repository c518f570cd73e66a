"""What ``ragstream sync`` and ``ragstream watch`` print, and how a standalone watch shares its index.

The commands themselves are in :mod:`ragstream.cli`; this module holds their output and the watch loop,
so the CLI stays a thin shell over :class:`ragstream.Ragstream`.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from rich.console import Console

if TYPE_CHECKING:
    from ragstream.api import Ragstream
    from ragstream.sync.report import SyncReport

LOOPBACK = "127.0.0.1"
QUIET = "warning"


def print_sync_report(report: SyncReport, console: Console, *, verbose: bool) -> None:
    """The one-line summary; failures by code on a second line; every file with ``verbose``."""
    console.print(report.summary(), soft_wrap=True, highlight=False)
    hint = "" if verbose else " (--verbose lists them)"
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
    watcher = rs.watcher(paths, on_report=printed)
    _say_watching(console, watcher.roots)
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, lambda signum, frame: watcher.stop())
    watcher.run()


def _say_watching(console: Console, roots: Sequence[Path]) -> None:
    console.print(f"watching {', '.join(str(Path(root)) for root in roots)} (Ctrl-C stops)", soft_wrap=True, highlight=False)
