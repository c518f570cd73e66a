"""``ragstream ingest``, ``docs list``, ``docs delete`` and ``reindex``: the commands that add, list and rebuild
documents, and the ingest report they print."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from ragstream.cli.index import console, err_console, fail, open_index, reading_index
from ragstream.cli.options import CollectionOption, ConfigOption, DataDirOption, ScopeOption, VerboseOption
from ragstream.errors import RagstreamError
from ragstream.models import LOCAL_ADMIN, Scope

if TYPE_CHECKING:
    from ragstream.api import Ragstream
    from ragstream.models import IngestReport, SkippedFile

SKIP_REASON_LABELS = {"not_a_document": "not a document type", "excluded": "excluded", "ignored": "ignored",
                      "hidden": "hidden", "temporary": "temporary (editor or download)",
                      "symlink": "symlink (ingest.follow_symlinks = never)",
                      "symlink_outside_root": "symlink to outside the folder", "folder_symlink": "symlink to a folder",
                      "broken_symlink": "broken symlink", "symlink_loop": "symlink loop",
                      "special_file": "FIFO, socket or device", "unreadable": "unreadable"}
SELECTION_REASONS = frozenset({"not_a_document", "excluded", "ignored", "hidden", "temporary"})
"""Skip reasons of the folder rules; the others (links, special and unreadable files) a sync prints too."""


def ingest(
    paths: Annotated[list[Path], typer.Argument(help="Files or folders to ingest.")],
    collection: CollectionOption = None,
    config: ConfigOption = None,
    data_dir: DataDirOption = None,
    json_output: Annotated[bool, typer.Option("--json", help="Print the report as JSON (every file's outcome).")] = False,
    verbose: VerboseOption = False,
) -> None:
    """Ingest files and folders into the index (unchanged documents are skipped).

    Folders are walked for document types (Markdown, text, reST, HTML, PDF; ingest.include /
    ingest.exclude in the config) and .gitignore / .ragstreamignore files are honoured.
    """
    with open_index(config, data_dir) as rs:
        try:
            report = ingest_with_progress(rs, paths, quiet=json_output, collection=collection)
        except RagstreamError as error:  # e.g. insufficient_storage: what was committed before stays whole
            err_console.print("ingest stopped; documents written before it are complete, and ingesting again "
                              "skips them")
            fail(error)
    if json_output:
        console.print_json(report.model_dump_json())
    else:
        print_ingest_report(report, verbose=verbose)
    if report.documents_failed and not (report.documents_processed or report.documents_skipped):
        raise typer.Exit(code=1)


def docs_list(config: ConfigOption = None, data_dir: DataDirOption = None,
              json_output: Annotated[bool, typer.Option("--json")] = False, collection: ScopeOption = None) -> None:
    """List ingested documents (of one or more collections with --collection)."""
    with reading_index(config, data_dir, need_documents=False) as rs:
        try:
            # names, never ids; read while the index is open (a Ragstream opened here is closed when the block ends)
            records = rs.with_collection_names(rs.documents(scope=Scope(collections=collection)))
        except RagstreamError as error:
            fail(error)
    if json_output:
        console.print_json(json.dumps([record.model_dump() for record in records]))
        return
    from rich.table import Table

    table = Table("document_id", "title", "source", "mime", "chunks", "ingested", "collections")
    for record in records:
        table.add_row(record.document_id, record.title, record.source, record.mime, str(record.chunk_count), record.ingested_at,
                      ", ".join(record.collections))
    console.print(table)


def docs_delete(document_id: str, config: ConfigOption = None, data_dir: DataDirOption = None) -> None:
    """Delete a document and all its chunks."""
    with reading_index(config, data_dir, need_documents=False) as rs:
        try:
            rs.delete(document_id)
        except RagstreamError as error:
            fail(error)
    console.print(f"deleted {document_id}")


def reindex(config: ConfigOption = None, data_dir: DataDirOption = None,
            verbose: VerboseOption = False) -> None:
    """Re-chunk and re-embed every document under the current settings."""
    with open_index(config, data_dir, must_exist=True) as rs:
        stale = len(rs.stale_documents())
        console.print(f"{stale} of {len(rs.documents())} documents were indexed with other settings")
        report = rs.reindex()
    print_ingest_report(report, verbose=verbose)


def ingest_with_progress(rs: Ragstream, paths: list[Path], *, quiet: bool, collection: str | None = None) -> IngestReport:
    """Ingest with a progress bar on stderr (one step per file taken)."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    total = len(rs.files_to_ingest(paths))
    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    with Progress(*columns, console=err_console, disable=quiet, transient=True) as progress:
        task = progress.add_task("ingesting", total=total)
        return rs.ingest(paths, progress=lambda outcome, source: progress.advance(task), collection=collection,
                         writer=LOCAL_ADMIN)


def print_ingest_report(report: IngestReport, *, verbose: bool) -> None:
    """A short summary: counts, skipped files by reason, failures by code; each file with ``verbose``."""
    console.print(
        f"processed [green]{report.documents_processed}[/], skipped unchanged {report.documents_skipped}, "
        f"failed [red]{report.documents_failed}[/], chunks {report.chunks_written}, "
        f"embedded {report.embedding_count} (cache hits {report.embedding_cache_hits}), "
        f"{report.duration_seconds:.1f} s", soft_wrap=True,
    )
    hint = "" if verbose else " (--verbose lists them)"
    if report.skipped_files:
        console.print(f"skipped {len(report.skipped_files)} files: {_counted(report.files_skipped, SKIP_REASON_LABELS)}{hint}",
                      soft_wrap=True)
    if report.failures:
        codes: dict[str, int] = {}
        for failure in report.failures:
            codes[failure.code] = codes.get(failure.code, 0) + 1
        console.print(f"[red]failed {len(report.failures)}[/]: {_counted(codes, {})}{hint}", soft_wrap=True)
    if report.warnings and not verbose:
        console.print(f"[yellow]warnings {len(report.warnings)}[/]{hint}", soft_wrap=True)
    if not verbose:
        return
    for failure in report.failures:
        console.print(f"  [red]failed[/] {failure.source}: {failure.error_type} ({failure.code}): {failure.message}", soft_wrap=True)
    for warning in report.warnings:
        console.print(f"  [yellow]warning[/] {warning}", soft_wrap=True)
    for skipped in report.skipped_files:
        console.print(f"  [dim]skipped[/] {skipped.source}: {SKIP_REASON_LABELS.get(skipped.reason, skipped.reason)}", soft_wrap=True)


def skipped_links_line(skipped: list[SkippedFile]) -> str | None:
    """``skipped 2 links and special files: 1 symlink loop, 1 symlink to outside the folder``, or None."""
    counts: dict[str, int] = {}
    for entry in skipped:
        if entry.reason not in SELECTION_REASONS:
            counts[entry.reason] = counts.get(entry.reason, 0) + 1
    if not counts:
        return None
    return f"skipped {sum(counts.values())} links and special files: {_counted(counts, SKIP_REASON_LABELS)}"


def _counted(counts: dict[str, Any], labels: dict[str, str]) -> str:
    """``3 not a document type, 1 hidden``: the biggest count first."""
    ordered = sorted(counts.items(), key=lambda item: -item[1])
    return ", ".join(f"{count} {labels.get(key, key)}" for key, count in ordered)
