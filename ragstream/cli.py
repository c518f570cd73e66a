"""The ``ragstream`` command line: a thin shell over :class:`ragstream.Ragstream`.

Imports of the index, the models and the store happen inside the commands, so ``ragstream --help``
and a command's argument errors stay light. Every command names the index it used on stderr, so
``--json`` output on stdout stays clean.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, NoReturn

import typer
from rich.console import Console
from rich.markup import escape

from ragstream.errors import ConfigError, RagstreamError

if TYPE_CHECKING:
    from ragstream.api import Ragstream
    from ragstream.config import RagstreamConfig, ServerConfig
    from ragstream.models import IngestReport, SearchResult
    from ragstream.pipeline.super_prompt import SuperPrompt
    from ragstream.remote import RemoteIndex
    from ragstream.sync.report import SyncReport

app = typer.Typer(help="ragstream: ingest documents, search them, get cited answers.", no_args_is_help=True)
docs_app = typer.Typer(help="List and delete ingested documents.", no_args_is_help=True)
app.add_typer(docs_app, name="docs")
db_app = typer.Typer(help="Run a local PostgreSQL with pgvector for the postgres backend (pip install 'ragstream[postgres]').",
                     no_args_is_help=True)
app.add_typer(db_app, name="db")
DbDirOption = Annotated[Path | None, typer.Option("--dir", help="Where the server keeps its data; default DATA_DIR/postgres.")]
console = Console()
err_console = Console(stderr=True)

ConfigOption = Annotated[Path | None, typer.Option("--config", "-c", help="Config file (.toml/.yaml/.json).")]
DataDirOption = Annotated[Path | None, typer.Option("--data-dir", help="Index directory (env RAGSTREAM_DATA_DIR).")]
DEMO_QUESTION = "How do I set a timeout on a request?"


CATALOG_FILE = "catalog.sqlite3"
EXIT_EMPTY_INDEX = 1
EXIT_ERROR = 2
SKIP_REASON_LABELS = {"not_a_document": "not a document type", "excluded": "excluded", "ignored": "ignored",
                      "hidden": "hidden", "temporary": "temporary (editor or download)"}


def _load(config: Path | None, data_dir: Path | None) -> RagstreamConfig:
    from ragstream.config import load_config

    return load_config(config, **({"data_dir": data_dir} if data_dir else {}))


def _open(config: Path | None, data_dir: Path | None, *, must_exist: bool = False) -> Ragstream:
    """Open the index (creating it unless ``must_exist``) and say on stderr which one it is."""
    return _open_index(_load(config, data_dir), must_exist=must_exist)


def _open_index(settings: RagstreamConfig, *, must_exist: bool) -> Ragstream:
    index = Path(settings.data_dir).resolve()
    if must_exist and settings.store.backend == "qdrant_edge" and not (index / CATALOG_FILE).is_file():
        err_console.print(f"no index at {index} yet: ingest documents first (ragstream ingest PATH), "
                          "or name another with --data-dir / RAGSTREAM_DATA_DIR")
        raise typer.Exit(code=EXIT_EMPTY_INDEX)
    from ragstream.api import Ragstream
    from ragstream.serve_link import announcement

    try:
        rs = Ragstream(settings)
    except RagstreamError as error:
        server = announcement(index)
        if server is not None:
            err_console.print(f"ragstream {server.kind} at {server.url} (process {server.pid}) holds the index at "
                              f"{index}: search, ask, chat and docs go through it; upload with POST /api/documents, "
                              "sync a registered root with POST /api/roots/sync, or stop it to run this command",
                              soft_wrap=True)
        _fail(error)
    count = len(rs.documents())
    err_console.print(f"[dim]index {index} ({count} document{'' if count == 1 else 's'})[/]", soft_wrap=True)
    return rs


def _require_documents(rs: Ragstream) -> None:
    """Exit with a clear message when the index holds no document."""
    if not rs.documents():
        rs.close()
        err_console.print(f"the index at {Path(rs.config.data_dir).resolve()} is empty: ingest documents first "
                          "(ragstream ingest PATH)")
        raise typer.Exit(code=EXIT_EMPTY_INDEX)


@contextmanager
def _reading(config: Path | None, data_dir: Path | None, *, need_documents: bool = True) -> Iterator[Ragstream | RemoteIndex]:
    """The index for a command that reads it: through a running ``ragstream serve`` on it when there is
    one, else opened here; exit 1 when it does not exist (or, with ``need_documents``, holds no document)."""
    settings = _load(config, data_dir)
    from ragstream.serve_link import announcement

    held = announcement(settings.data_dir)
    if held is not None:
        from ragstream.remote import find_server

        remote = find_server(settings)
        if remote is not None:
            with remote:
                yield from _remote_index(remote, settings, need_documents=need_documents, kind=held.kind)
            return
    rs = _open_index(settings, must_exist=True)
    if need_documents:
        _require_documents(rs)
    with rs:
        yield rs


def _remote_index(remote: RemoteIndex, settings: RagstreamConfig, *, need_documents: bool,
                  kind: str = "serve") -> Iterator[RemoteIndex]:
    index = Path(settings.data_dir).resolve()
    try:
        count = len(remote.documents())
    except RagstreamError as error:
        _fail(error)
    err_console.print(f"[dim]index {index} ({count} document{'' if count == 1 else 's'}, "
                      f"via ragstream {kind} at {remote.url})[/]", soft_wrap=True)
    if need_documents and not count:
        err_console.print(f"the index at {index} is empty: ingest documents first (ragstream ingest PATH)")
        raise typer.Exit(code=EXIT_EMPTY_INDEX)
    yield remote


def _fail(error: RagstreamError) -> NoReturn:
    name = getattr(error, "error_type", type(error).__name__)
    err_console.print(f"[bold red]{escape(name)}[/] ({error.code}): {escape(error.message)}", soft_wrap=True)
    raise typer.Exit(code=EXIT_ERROR)


VerboseOption = Annotated[bool, typer.Option("--verbose", "-v", help="List every failed, skipped and warned file.")]


@app.command()
def ingest(
    paths: Annotated[list[Path], typer.Argument(help="Files or folders to ingest.")],
    config: ConfigOption = None,
    data_dir: DataDirOption = None,
    json_output: Annotated[bool, typer.Option("--json", help="Print the report as JSON (every file's outcome).")] = False,
    verbose: VerboseOption = False,
) -> None:
    """Ingest files and folders into the index (unchanged documents are skipped).

    Folders are walked for document types (Markdown, text, reST, HTML, PDF; ingest.include /
    ingest.exclude in the config) and .gitignore / .ragstreamignore files are honoured.
    """
    with _open(config, data_dir) as rs:
        try:
            report = _ingest_with_progress(rs, paths, quiet=json_output)
        except RagstreamError as error:  # e.g. insufficient_storage: what was committed before stays whole
            err_console.print("ingest stopped; documents written before it are complete, and ingesting again "
                              "skips them")
            _fail(error)
    if json_output:
        console.print_json(report.model_dump_json())
    else:
        _print_report(report, verbose=verbose)
    if report.documents_failed and not (report.documents_processed or report.documents_skipped):
        raise typer.Exit(code=1)


@app.command()
def sync(
    paths: Annotated[list[Path], typer.Argument(help="Folders (or files) to keep the index in step with.")],
    forget: Annotated[bool, typer.Option(
        "--forget", help="Instead: remove every document of these roots and unregister them (the folders may be gone).")] = False,
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
    with _open(config, data_dir) as rs:
        try:
            report = _forget_roots(rs, paths) if forget else _sync_with_status(rs, paths, quiet=json_output)
        except RagstreamError as error:  # e.g. insufficient_storage: every document switch before it is whole
            _fail(error)
    if json_output:
        console.print_json(report.model_dump_json())
    else:
        from ragstream.cli_sync import print_sync_report

        print_sync_report(report, console, verbose=verbose)
    missing = any(failure.code == "root_not_found" for failure in report.failures)
    nothing = report.failures and not (report.changes or report.unchanged or report.adopted)
    if missing or nothing:
        raise typer.Exit(code=1)


@app.command()
def watch(
    paths: Annotated[list[Path], typer.Argument(help="Folders (or files) to keep the index in step with.")],
    port: Annotated[int | None, typer.Option(
        help="Loopback port of the index's API that other commands use while the watch holds an embedded index "
        "(default sync.watch_port; 0: a free one).")] = None,
    config: ConfigOption = None,
    data_dir: DataDirOption = None,
) -> None:
    """Keep the index in step with folders as their files change, until Ctrl-C: a full sync first, then one
    per batch of changes (debounced; files still being written wait; editors' temporary files never count).

    Other commands on the index keep working meanwhile: on the embedded store this process serves the
    index's API on loopback and they go through it, as with `ragstream serve`.
    """
    from ragstream.cli_sync import watch_here
    from ragstream.serve_link import announcement
    from ragstream.store.factory import single_process_reason

    settings = _load(config, data_dir)
    held = announcement(settings.data_dir)
    single = single_process_reason(settings) is not None
    if held is not None and single:
        err_console.print(f"ragstream {held.kind} at {held.url} (process {held.pid}) holds the index at "
                          f"{Path(settings.data_dir).resolve()}: watch from inside it (ragstream serve --watch PATH), "
                          "or stop it first", soft_wrap=True)
        raise typer.Exit(code=EXIT_ERROR)
    with _open_index(settings, must_exist=False) as rs:
        try:
            watch_here(rs, paths, console, serve_port=(settings.sync.watch_port if port is None else port) if single else None)
        except RagstreamError as error:
            _fail(error)


@app.command()
def search(
    query: Annotated[str, typer.Argument(help="What to look for.")],
    mode: Annotated[str | None, typer.Option(help="hybrid, dense or bm25.")] = None,
    top_k: Annotated[int | None, typer.Option("--top-k", min=1, help="Number of results (1 or more).")] = None,
    filter_: Annotated[list[str] | None, typer.Option("--filter", help="key=value metadata filter (repeatable).")] = None,
    threshold: Annotated[float | None, typer.Option(help="Minimum score of the mode that runs.")] = None,
    rerank: Annotated[bool, typer.Option("--rerank", help="Re-order the top hits with the cross-encoder.")] = False,
    config: ConfigOption = None,
    data_dir: DataDirOption = None,
    json_output: Annotated[bool, typer.Option("--json", help="Print the result as JSON.")] = False,
) -> None:
    """Search the index and print ranked, attributed results."""
    if mode not in (None, "hybrid", "dense", "bm25"):
        raise typer.BadParameter("mode must be hybrid, dense or bm25", param_hint="--mode")
    filters = _parse_filters(filter_ or [])
    with _reading(config, data_dir) as rs:
        try:
            fields = rs.filter_fields() if filters else set()
        except RagstreamError as error:
            _fail(error)
        unknown = sorted(set(filters) - fields)
        if unknown:
            known = ", ".join(sorted(fields))
            raise typer.BadParameter(f"unknown filter field {', '.join(map(repr, unknown))}; known fields: {known}",
                                     param_hint="--filter")
        try:
            result = rs.search(query, mode=mode, top_k=top_k, filters=filters, score_threshold=threshold,  # type: ignore[arg-type]
                               rerank=rerank)
        except RagstreamError as error:
            _fail(error)
    if json_output:
        console.print_json(result.model_dump_json())
    else:
        _print_result(result)


@docs_app.command("list")
def docs_list(config: ConfigOption = None, data_dir: DataDirOption = None,
              json_output: Annotated[bool, typer.Option("--json")] = False) -> None:
    """List ingested documents."""
    with _reading(config, data_dir, need_documents=False) as rs:
        records = rs.documents()
    if json_output:
        console.print_json(json.dumps([record.model_dump() for record in records]))
        return
    from rich.table import Table

    table = Table("document_id", "title", "source", "mime", "chunks", "ingested")
    for record in records:
        table.add_row(record.document_id, record.title, record.source, record.mime, str(record.chunk_count), record.ingested_at)
    console.print(table)


@docs_app.command("delete")
def docs_delete(document_id: str, config: ConfigOption = None, data_dir: DataDirOption = None) -> None:
    """Delete a document and all its chunks."""
    with _reading(config, data_dir, need_documents=False) as rs:
        try:
            rs.delete(document_id)
        except RagstreamError as error:
            _fail(error)
    console.print(f"deleted {document_id}")


@app.command()
def reindex(config: ConfigOption = None, data_dir: DataDirOption = None,
            verbose: VerboseOption = False) -> None:
    """Re-chunk and re-embed every document under the current settings."""
    with _open(config, data_dir, must_exist=True) as rs:
        stale = len(rs.stale_documents())
        console.print(f"{stale} of {len(rs.documents())} documents were indexed with other settings")
        report = rs.reindex()
    _print_report(report, verbose=verbose)


@app.command()
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
    with _open(config, data_dir, must_exist=True) as rs:
        try:
            report = rs.migrate(to, target_dir=target_dir, collection=collection,
                                progress=lambda stage, done, total: err_console.print(
                                    f"{stage} {done}/{total}" if total else f"{stage} {done}", highlight=False))
        except RagstreamError as error:
            _fail(error)
    console.print(f"copied {report.documents_copied} documents ({report.chunks_copied} chunks), "
                  f"{report.documents_already_there} already in the target, {report.documents_removed} removed; "
                  f"{report.embeddings_copied} cached embeddings, {report.turns_copied} conversation turns")
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


@app.command(name="eval")
def eval_command(
    beir: Annotated[Path, typer.Option("--beir", help="BEIR dataset folder (corpus.jsonl, queries.jsonl, qrels/).")],
    split: Annotated[str, typer.Option(help="qrels split to score.")] = "train",
    max_queries: Annotated[int | None, typer.Option(help="Score only the first N queries.")] = None,
    config: ConfigOption = None,
    data_dir: DataDirOption = None,
    json_output: Annotated[bool, typer.Option("--json", help="One JSON object keyed by mode.")] = False,
    mode: Annotated[str, typer.Option(
        help="search: bm25, dense and hybrid; pipeline: the answer path's ranking (Retrieval + ReRanker) beside them.",
    )] = "search",
) -> None:
    """Score retrieval on a BEIR dataset (NDCG@10, P@5, R@100, MRR), per mode."""
    from ragstream.api import Ragstream
    from ragstream.evaluation.beir import METRICS, MODES, PIPELINE, evaluate_retrieval, load_beir

    if mode not in ("search", PIPELINE):
        raise typer.BadParameter("expected search or pipeline", param_hint="--mode")
    modes = (*MODES, PIPELINE) if mode == PIPELINE else MODES
    dataset = load_beir(beir, split)
    base = _load(config, data_dir)
    eval_config = base.model_copy(update={"data_dir": Path(base.data_dir) / "eval" / dataset.name})
    err_console.print(f"[dim]index {Path(eval_config.data_dir).resolve()}[/]")
    if not json_output:
        err_console.print(f"ingesting {dataset.name} and scoring {len(dataset.queries)} queries ...")
    with Ragstream(eval_config) as rs:
        try:
            result = evaluate_retrieval(rs, dataset, modes=modes, max_queries=max_queries)
        except RagstreamError as error:  # e.g. unsupported_file_type: a corpus line names an unknown "mime"
            _fail(error)
    if json_output:
        console.print_json(json.dumps(result.metrics))
        return
    from rich.table import Table

    table = Table("mode", *METRICS, "p50 ms", "p95 ms")
    for mode, scores in result.metrics.items():
        latency = result.query_latency_ms[mode]
        table.add_row(mode, *(f"{scores[name]:.4f}" for name in METRICS), f"{latency['p50']:.1f}", f"{latency['p95']:.1f}")
    console.print(table)


@app.command()
def mcp(
    config: ConfigOption = None,
    data_dir: DataDirOption = None,
    admin_tools: Annotated[bool | None, typer.Option(
        "--admin-tools/--no-admin-tools", help="Offer the ingest and delete tools (default mcp.stdio_admin_tools: off).")] = None,
) -> None:
    """Serve the index to MCP clients (desktop assistants, editors) over stdio; logs go to stderr (docs/mcp.md)."""
    from ragstream.mcp_server import require_sdk
    from ragstream.serve_link import announcement

    try:
        require_sdk()
    except RagstreamError as error:
        _fail(error)
    settings = _load(config, data_dir)
    try:
        rs = _open_index(settings, must_exist=False)
    except typer.Exit:
        server = announcement(Path(settings.data_dir).resolve())
        if server is not None:
            err_console.print(f"MCP clients can use that server instead: {server.url}{settings.mcp.http_path} "
                              "(streamable HTTP)")
        raise
    from ragstream.mcp_server.stdio import run_stdio

    with rs:
        run_stdio(rs, admin_tools=settings.mcp.stdio_admin_tools if admin_tools is None else admin_tools)


@app.command()
def demo(
    question: Annotated[str, typer.Option(help="Question to answer from the samples.")] = DEMO_QUESTION,
    serve_after: Annotated[bool, typer.Option("--serve", help="Then start the HTTP API and web UI.")] = False,
    config: ConfigOption = None,
    data_dir: DataDirOption = None,
) -> None:
    """Ingest the bundled sample documents, answer a question from them, optionally serve the UI."""
    samples = resources.files("ragstream") / "samples" / "docs"
    with resources.as_file(samples) as sample_dir, _open(config, data_dir) as rs:
        console.print(f"[bold]Ingesting the bundled samples[/] from {sample_dir} into {rs.config.data_dir}")
        _print_report(_ingest_with_progress(rs, [sample_dir], quiet=False), verbose=False)
        console.print(f"\n[bold]Search:[/] {question}")
        _print_result(rs.search(question, top_k=5))
        console.print(f"\n[bold]Answer:[/] {question}\n")
        try:
            _answer(rs, question, None, None, stream=True, json_output=False)
        except RagstreamError as error:
            _fail(error)
        if serve_after:
            from ragstream.server import serve as run_server

            console.print()
            run_server(rs, rs.config.server)


@app.command()
def prompt(
    text: Annotated[str, typer.Argument(help="The prompt; headers like 'TASK:' or '## Context' are optional.")],
    until: Annotated[str | None, typer.Option(help="Stop after this stage (e.g. Retrieval, A3_NLI_Gate).")] = None,
    config: ConfigOption = None,
    data_dir: DataDirOption = None,
    json_output: Annotated[bool, typer.Option("--json", help="Print the whole SuperPrompt as JSON.")] = False,
) -> None:
    """Run the SuperPrompt pipeline and print prompt_ready (or the SuperPrompt as JSON)."""
    with _open(config, data_dir, must_exist=True) as rs:
        try:
            sp = rs.run_pipeline(text, until=until)
        except RagstreamError as error:
            _fail(error)
    if json_output:
        print(sp.model_dump_json(indent=2))
    else:
        print(sp.prompt_ready)
        _print_rerank(sp)
        for stage, reason in sp.fallbacks().items():
            err_console.print(f"[yellow]stage {stage} fell back:[/] {reason}")


def _print_rerank(sp: SuperPrompt) -> None:
    """On stderr: the ReRanker's scored chunks with the cross-encoder's and the fused score and how far each moved."""
    details = sp.rerank
    if not details.cross_scores:
        return
    from rich.table import Table

    report = sp.stage_reports.get("reranked")
    title = f"ReRanker ({report.model if report else details.backend}, weight {details.weight:g})"
    table = Table("#", "cross-encoder", "fused", "moved", "source", "section", title=title)
    chunks = sp.chunk_map()
    for rank, chunk_id in enumerate(sp.views_by_stage.get("reranked", []), start=1):
        if chunk_id not in details.cross_scores:
            continue
        meta = chunks[chunk_id].metadata
        moved = details.moved.get(chunk_id, 0)
        table.add_row(str(rank), f"{details.cross_scores[chunk_id]:.3f}", f"{details.fused_scores[chunk_id]:.3f}",
                      f"+{moved}" if moved > 0 else str(moved), Path(meta.source).name, meta.header_path or meta.section)
    err_console.print(table)
    if details.skipped:
        err_console.print(f"kept the fused order: {details.skipped}", style="dim", highlight=False, markup=False)


@app.command()
def serve(
    host: Annotated[str | None, typer.Option(help="Address to bind (default server.host, 127.0.0.1).")] = None,
    port: Annotated[int | None, typer.Option(help="Port to bind (default server.port).")] = None,
    workers: Annotated[int | None, typer.Option(
        min=1, help="Server processes on the port (default server.workers, 1); more than 1 needs a shared store "
        "(store.backend postgres, or qdrant with a PostgreSQL catalog).")] = None,
    watch_paths: Annotated[list[Path] | None, typer.Option(
        "--watch", help="Keep this folder (or file) in step with the index while serving, as `ragstream watch` "
        "does (repeatable).")] = None,
    config: ConfigOption = None,
    data_dir: DataDirOption = None,
) -> None:
    """Serve the HTTP API and the web UI; any address but loopback needs server.api_key."""
    from ragstream.server import serve as run_server

    settings = _load(config, data_dir)
    overrides = {key: value for key, value in (("host", host), ("port", port)) if value is not None}
    server_config = settings.server.model_copy(update=overrides)
    count = workers or server_config.workers
    if count > 1:
        _serve_workers(settings, server_config, count, config, data_dir, watch_paths or [])
        return
    with _open_index(settings, must_exist=False) as rs:
        try:
            run_server(rs, server_config, watch=watch_paths or [])
        except RagstreamError as error:
            _fail(error)


def _serve_workers(settings: RagstreamConfig, server_config: ServerConfig, count: int, config: Path | None,
                   data_dir: Path | None, watch_paths: list[Path]) -> None:
    """``serve --workers N``: refused (exit 2) on a store one process holds; else the index is opened once here
    (its schema made, its settings checked) and then by each worker. With ``--watch`` this supervising process
    runs the one watcher, on an index handle of its own."""
    from ragstream.server.run import WorkerArgs, serve_workers
    from ragstream.server.security import check_binding
    from ragstream.store.factory import single_process_reason

    try:
        reason = single_process_reason(settings)
        if reason is not None:
            raise ConfigError(f"--workers {count} is not possible here: {reason}")
        check_binding(server_config)
    except RagstreamError as error:
        _fail(error)
    rs = _open_index(settings, must_exist=False)
    try:
        watcher = rs.watcher(watch_paths) if watch_paths else None
    except RagstreamError as error:
        rs.close()
        _fail(error)
    if watcher is None:
        rs.close()
    else:
        watcher.start()
    args = WorkerArgs(config_file=str(config) if config else None, data_dir=str(data_dir) if data_dir else None,
                      host=server_config.host, port=server_config.port)
    try:
        serve_workers(args, server_config, count, Path(settings.data_dir))
    finally:
        if watcher is not None:
            watcher.stop()
            rs.close()


QuestionArgument = Annotated[str, typer.Argument(help="The question.")]
ConversationOption = Annotated[str | None, typer.Option("--conversation", help="Continue this conversation id.")]


@app.command()
def ask(
    question: QuestionArgument,
    stream: Annotated[bool, typer.Option("--stream", help="Print tokens as they arrive.")] = False,
    conversation: ConversationOption = None,
    selected_text: Annotated[str | None, typer.Option("--selected-text", help="Text the question is about.")] = None,
    config: ConfigOption = None,
    data_dir: DataDirOption = None,
    json_output: Annotated[bool, typer.Option("--json", help="Print the response (or, with --stream, events) as JSON.")] = False,
) -> None:
    """Answer a question with citations (LLM when llm.base_url is set, else extractive)."""
    with _reading(config, data_dir) as rs:
        try:
            _answer(rs, question, conversation, selected_text, stream=stream, json_output=json_output)
        except RagstreamError as error:
            _fail(error)


@app.command()
def chat(
    conversation: ConversationOption = None,
    config: ConfigOption = None,
    data_dir: DataDirOption = None,
) -> None:
    """Interactive chat: each answer streams; the conversation is remembered. Empty line or Ctrl-D quits."""
    with _reading(config, data_dir) as rs:
        while True:
            try:
                question = input("you> ").strip()
            except EOFError:
                break
            if not question:
                break
            try:
                conversation = _answer(rs, question, conversation, None, stream=True, json_output=False)
            except RagstreamError as error:
                err_console.print(f"[bold red]{type(error).__name__}[/] ({error.code}): {error.message}")


def _answer(rs: Ragstream | RemoteIndex, question: str, conversation: str | None, selected_text: str | None, *,
            stream: bool, json_output: bool) -> str:
    """Print one answer; returns its conversation id."""
    from ragstream.answer.models import Answer
    from ragstream.answer.render import marked_answer, sources_text

    if not stream:
        answer = rs.ask(question, conversation, selected_text)
        print(answer.model_dump_json(indent=2) if json_output else f"{marked_answer(answer)}\n\n{sources_text(answer)}")
        if not json_output:
            _say_rewrite(answer)
        return answer.metadata["conversation_id"]
    final: Answer | None = None
    for event in rs.stream_answer(question, conversation, selected_text):
        if json_output:
            print(event.model_dump_json(), flush=True)
        elif event.type == "token":
            print(event.token, end="", flush=True)
        if event.type == "done":
            final = event.response
    if final is None:
        raise RuntimeError("the answer stream ended without a done event")
    if not json_output:
        print(f"\n\n{sources_text(final)}")
        _say_rewrite(final)
    conversation_id: str = final.metadata["conversation_id"]
    return conversation_id


def _say_rewrite(answer: Any) -> None:
    """On stderr: how a follow-up question was searched (``metadata.pipeline.rewritten_query``)."""
    rewritten = (answer.metadata.get("pipeline") or {}).get("rewritten_query")
    if rewritten:
        err_console.print(f"follow-up searched as: {rewritten}", style="dim", highlight=False, markup=False)


def _sync_with_status(rs: Ragstream, paths: list[Path], *, quiet: bool) -> SyncReport:
    """Sync with a status line on stderr (files ingested so far)."""
    if quiet:
        return rs.sync(paths)
    done = [0]
    with err_console.status("syncing: comparing files with the index") as status:
        def advance(outcome: str, source: str) -> None:
            done[0] += 1
            status.update(f"syncing: {done[0]} file(s) ingested, last {Path(source).name}")

        return rs.sync(paths, progress=advance)


def _forget_roots(rs: Ragstream, paths: list[Path]) -> SyncReport:
    """``sync --forget``: every root's documents removed, the roots unregistered, as one report."""
    from ragstream.sync.report import SyncReport

    return SyncReport().merge(rs.forget_root(path) for path in paths)


def _ingest_with_progress(rs: Ragstream, paths: list[Path], *, quiet: bool) -> IngestReport:
    """Ingest with a progress bar on stderr (one step per file taken)."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from ragstream.documents.selection import select_files

    total = len(select_files(paths, rs.config.ingest).files)
    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    with Progress(*columns, console=err_console, disable=quiet, transient=True) as progress:
        task = progress.add_task("ingesting", total=total)
        return rs.ingest(paths, progress=lambda outcome, source: progress.advance(task))


def _parse_filters(pairs: list[str]) -> dict[str, str | int | bool]:
    filters: dict[str, str | int | bool] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise typer.BadParameter(f"expected key=value, got {pair!r}", param_hint="--filter")
        filters[key.strip()] = _coerce(value.strip())
    return filters


def _coerce(value: str) -> str | int | bool:
    if value.lower() in ("true", "false"):
        return value.lower() == "true"
    return int(value) if value.lstrip("-").isdigit() else value


def _print_report(report: IngestReport, *, verbose: bool) -> None:
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


def _counted(counts: dict[str, Any], labels: dict[str, str]) -> str:
    """``3 not a document type, 1 hidden``: the biggest count first."""
    ordered = sorted(counts.items(), key=lambda item: -item[1])
    return ", ".join(f"{count} {labels.get(key, key)}" for key, count in ordered)


def _print_result(result: SearchResult) -> None:
    from rich.table import Table

    if result.fallback_reason:
        console.print(f"[yellow]{result.fallback_reason}[/]")
    if result.rerank_reason:
        console.print(f"[yellow]not reranked: {result.rerank_reason}[/]", highlight=False, markup=False)
    kind = f"{result.mode} search" + (", reranked" if result.reranked else "")
    table = Table("#", "score", "source", "section / page", "text", title=f"{kind}, {result.latencies_ms['total']:.0f} ms")
    for hit in result.hits:
        meta = hit.chunk.metadata
        where = meta.header_path or meta.section
        if meta.page is not None:
            where = f"{where} p.{meta.page}".strip()
        snippet = " ".join(hit.chunk.text.split())[:160]
        table.add_row(str(hit.rank), f"{hit.score:.4f}", Path(meta.source).name, where, snippet)
    console.print(table)
    if not result.hits:
        console.print("no results")


if __name__ == "__main__":
    app()


def _db_dir(config: Path | None, data_dir: Path | None, directory: Path | None) -> Path:
    return directory or Path(_load(config, data_dir).data_dir) / "postgres"


@db_app.command("start")
def db_start(
    config: ConfigOption = None, data_dir: DataDirOption = None, directory: DbDirOption = None,
    port: Annotated[int | None, typer.Option("--port", help="Loopback port (default store.local_server_port; 0: a free one).")] = None,
) -> None:
    """Start the bundled PostgreSQL 18 + pgvector (initialised on first use) and print its URL."""
    from ragstream.store.postgres import server

    settings = _load(config, data_dir)
    folder = directory or Path(settings.data_dir) / "postgres"
    try:
        info = server.start(folder, port if port is not None else settings.store.local_server_port)
    except RagstreamError as error:
        _fail(error)
    err_console.print(f"PostgreSQL running in {info.data_dir} (process {info.pid}); use it with:", soft_wrap=True)
    err_console.print("  export RAGSTREAM_STORE__BACKEND=postgres")
    print(f"export RAGSTREAM_STORE__URL='{info.url}'")


@db_app.command("stop")
def db_stop(config: ConfigOption = None, data_dir: DataDirOption = None, directory: DbDirOption = None) -> None:
    """Stop the bundled PostgreSQL (fast shutdown: committed data stays)."""
    from ragstream.store.postgres import server

    try:
        stopped = server.stop(_db_dir(config, data_dir, directory))
    except RagstreamError as error:
        _fail(error)
    err_console.print("stopped" if stopped else "not running")


@db_app.command("status")
def db_status(config: ConfigOption = None, data_dir: DataDirOption = None, directory: DbDirOption = None) -> None:
    """Say whether the bundled PostgreSQL runs, and its URL (exit 1 when it does not)."""
    from ragstream.store.postgres import server

    info = server.status(_db_dir(config, data_dir, directory))
    if info is None:
        err_console.print("not running")
        raise typer.Exit(code=EXIT_EMPTY_INDEX)
    err_console.print(f"running in {info.data_dir} (process {info.pid}, port {info.port})")
    print(info.url)
