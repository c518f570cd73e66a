"""``ragstream serve`` (one process or ``--workers N``) and ``ragstream mcp`` (stdio): the index served to
browsers, HTTP clients and MCP clients."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from ragstream.cli.index import err_console, fail, load_settings, open_settings_index
from ragstream.cli.options import ConfigOption, DataDirOption, LLMModelOption
from ragstream.errors import ConfigError, RagstreamError
from ragstream.models import LOCAL_ADMIN

if TYPE_CHECKING:
    from ragstream.config import RagstreamConfig, ServerConfig


def serve(
    host: Annotated[str | None, typer.Option(help="Address to bind (default server.host, 127.0.0.1).")] = None,
    port: Annotated[int | None, typer.Option(help="Port to bind (default server.port).")] = None,
    workers: Annotated[int | None, typer.Option(
        min=1, help="Server processes on the port (default server.workers, 1); more than 1 needs a shared store "
        "(store.backend postgres, or qdrant with a PostgreSQL catalog).")] = None,
    watch_paths: Annotated[list[Path] | None, typer.Option(
        "--watch", help="Keep this folder (or file) in step with the index while serving, as `ragstream watch` "
        "does (repeatable).")] = None,
    collection: Annotated[str | None, typer.Option(
        "--collection", help="The collection the --watch folders' documents join (by name); the folders remember it, "
        "as with `ragstream watch --collection`.")] = None,
    config: ConfigOption = None,
    data_dir: DataDirOption = None,
    llm_model: LLMModelOption = None,
) -> None:
    """Serve the HTTP API and the web UI; any address but loopback needs server.api_key."""
    from ragstream.server import serve as run_server

    if collection is not None and not watch_paths:
        raise typer.BadParameter("--collection names the collection of the --watch folders: give --watch too",
                                 param_hint="--collection")
    settings = load_settings(config, data_dir, llm_model)
    overrides = {key: value for key, value in (("host", host), ("port", port)) if value is not None}
    server_config = settings.server.model_copy(update=overrides)
    count = workers or server_config.workers
    if count > 1:
        _serve_workers(settings, server_config, count, config, data_dir, watch_paths or [], llm_model, collection)
        return
    with open_settings_index(settings, must_exist=False) as rs:
        try:
            rs.collect_roots(watch_paths or [], collection)
            rs.start_llm()
            run_server(rs, server_config, watch=watch_paths or [])
        except RagstreamError as error:
            fail(error)


def _serve_workers(settings: RagstreamConfig, server_config: ServerConfig, count: int, config: Path | None,
                   data_dir: Path | None, watch_paths: list[Path], llm_model: Path | None = None,
                   collection: str | None = None) -> None:
    """``serve --workers N``: refused (exit 2) on a store one process holds; else the index is opened once here
    (its schema made, its settings checked) and then by each worker. With ``--watch`` this supervising process
    runs the one watcher, on an index handle of its own."""
    from ragstream.api_writes import single_process_reason
    from ragstream.server.run import WorkerArgs, serve_workers
    from ragstream.server.security import check_binding

    try:
        reason = single_process_reason(settings)
        if reason is not None:
            raise ConfigError(f"--workers {count} is not possible here: {reason}")
        check_binding(server_config)
    except RagstreamError as error:
        fail(error)
    rs = open_settings_index(settings, must_exist=False)
    try:
        rs.collect_roots(watch_paths, collection)
        watcher = rs.watcher(watch_paths, writer=LOCAL_ADMIN) if watch_paths else None
    except RagstreamError as error:
        rs.close()
        fail(error)
    if watcher is None:
        rs.close()
    else:
        watcher.start()
    args = WorkerArgs(config_file=str(config) if config else None, data_dir=str(data_dir) if data_dir else None,
                      host=server_config.host, port=server_config.port,
                      llm_model=str(llm_model) if llm_model else None)
    try:
        serve_workers(args, server_config, count, Path(settings.data_dir))
    finally:
        if watcher is not None:
            watcher.stop()
            rs.close()


def mcp(
    config: ConfigOption = None,
    data_dir: DataDirOption = None,
    admin_tools: Annotated[bool | None, typer.Option(
        "--admin-tools/--no-admin-tools", help="Offer the ingest and delete tools (default mcp.stdio_admin_tools: off).")] = None,
) -> None:
    """Serve the index to MCP clients (desktop assistants, editors) over stdio; logs go to stderr (docs/mcp.md)."""
    from ragstream.api_runtime import serve_link
    from ragstream.mcp_server import require_sdk

    try:
        require_sdk()
    except RagstreamError as error:
        fail(error)
    settings = load_settings(config, data_dir)
    try:
        rs = open_settings_index(settings, must_exist=False)
    except typer.Exit:
        server = serve_link.announcement(Path(settings.data_dir).resolve())
        if server is not None:
            err_console.print(f"MCP clients can use that server instead: {server.url}{settings.mcp.http_path} "
                              "(streamable HTTP)")
        raise
    from ragstream.mcp_server.stdio import run_stdio

    with rs:
        run_stdio(rs, admin_tools=settings.mcp.stdio_admin_tools if admin_tools is None else admin_tools)
