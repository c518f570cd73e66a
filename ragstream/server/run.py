"""Run the server with uvicorn (what ``ragstream serve`` calls): one process, or ``--workers N``
processes on one port over a store they all share (docs/backends.md)."""

from __future__ import annotations

import json
import logging
import os
import socket
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import uvicorn
from fastapi import FastAPI
from uvicorn.supervisors import Multiprocess

from ragstream.api import Ragstream
from ragstream.api_runtime import configure_logging, model_choices, serve_link
from ragstream.api_types import SyncReport
from ragstream.api_writes import single_process_reason
from ragstream.config import RagstreamConfig, ServerConfig, load_config
from ragstream.errors import ConfigError
from ragstream.server.app import UI_PATH, create_app

logger = logging.getLogger("ragstream.server")

WORKER_ARGS_ENV = "_RAGSTREAM_SERVE_ARGS"
"""Environment variable by which ``serve_workers`` tells each worker process where its settings come from
(outside the ``RAGSTREAM_`` prefix, so it is never read as a setting)."""
WORKER_APP = "ragstream.server.run:worker_app"


@dataclass(frozen=True)
class WorkerArgs:
    """Where a worker process loads its settings from: the same config file, data dir and environment as
    ``ragstream serve``, and the command line's host and port."""

    config_file: str | None
    data_dir: str | None
    host: str
    port: int
    llm_model: str | None = None
    """``--llm-model``: each worker runs this GGUF file (a model server of its own)."""


def serve(rs: Ragstream, config: ServerConfig, *, watch: Sequence[str | Path] = (), kind: str = "serve",
          on_report: Callable[[SyncReport], None] | None = None) -> None:
    """Serve ``rs`` on ``config.host:config.port`` until interrupted; one process, many threads.

    While it listens, ``{data_dir}/server.json`` names its URL, so CLI commands on the same index go
    through it (:mod:`ragstream.serve_link`). ``watch``: roots a watcher keeps in step with the index while
    the server runs (from when it listens until it stops); RootNotFoundError, before anything starts, for a
    root that does not exist. ``kind``: ``watch`` when ``ragstream watch`` serves the index for other
    commands (no UI banner; the URL is printed once it listens). ``on_report``: called with each watch batch's
    report (by default it is logged).
    """
    watcher = rs.watcher(watch, on_report=on_report) if watch else None
    app = create_app(rs, config)
    configure_logging(config.log_level)
    if watcher is not None:
        app.router.on_startup.append(watcher.start)
        app.router.on_shutdown.insert(0, watcher.stop)  # before the jobs and the index close
    if kind == "serve":
        _print_urls(config.host, config.port)
        _print_models(rs.config)
    uvicorn_config = uvicorn.Config(app, host=config.host, port=config.port, log_config=None, access_log=False,
                                    log_level=config.log_level)
    _AnnouncingServer(uvicorn_config, Path(rs.config.data_dir), config.host, kind).run()


def serve_workers(args: WorkerArgs, config: ServerConfig, workers: int, data_dir: Path) -> None:
    """Serve with ``workers`` processes on one port until interrupted: this process binds the socket, announces
    it in ``data_dir`` and supervises the workers (uvicorn's, which replaces one that dies); each worker opens
    its own :class:`Ragstream` over the shared store (:func:`worker_app`)."""
    configure_logging(config.log_level)
    uvicorn_config = uvicorn.Config(WORKER_APP, factory=True, host=config.host, port=config.port, workers=workers,
                                    log_config=None, access_log=False, log_level=config.log_level)
    sock = uvicorn_config.bind_socket()
    port = sock.getsockname()[1]
    os.environ[WORKER_ARGS_ENV] = json.dumps(asdict(args) | {"port": port})  # inherited by the workers
    _print_urls(config.host, port)
    _print_models(load_config(args.config_file, **({"data_dir": args.data_dir} if args.data_dir else {})))
    try:
        serve_link.announce(data_dir, serve_link.client_url(config.host, port))
    except OSError as error:
        logger.warning("could not announce the server in %s: %s", data_dir, error)
    try:
        Multiprocess(uvicorn_config, sockets=[sock]).run()
    finally:
        serve_link.withdraw(data_dir)
        sock.close()


def worker_app() -> FastAPI:
    """The app of one worker process of ``serve_workers``: its own index handle over the shared store."""
    raw = os.environ.get(WORKER_ARGS_ENV)
    if raw is None:
        raise ConfigError(f"{WORKER_APP} runs in the worker processes of `ragstream serve --workers N`")
    args = WorkerArgs(**json.loads(raw))
    overrides: dict[str, Any] = {"data_dir": args.data_dir} if args.data_dir else {}
    if args.llm_model:
        overrides["llm"] = {"provider": "local", "model_path": args.llm_model}
    settings = load_config(args.config_file, **overrides)
    reason = single_process_reason(settings)
    if reason is not None:
        raise ConfigError(reason)
    config = settings.server.model_copy(update={"host": args.host, "port": args.port})
    configure_logging(config.log_level)
    rs = Ragstream(settings)
    try:
        rs.start_llm()
        app = create_app(rs, config)
    except BaseException:
        rs.close()
        raise
    app.router.on_shutdown.append(rs.close)
    return app


def _print_urls(host: str, port: int) -> None:
    shown = f"[{host}]" if ":" in host else host
    print(f"ragstream UI: http://{shown}:{port}{UI_PATH}/   API docs: http://{shown}:{port}/docs", flush=True)


def _print_models(settings: RagstreamConfig) -> None:
    """One start-up line per model: what runs it on this CPU and why (``ragstream doctor`` says more)."""
    for choice in model_choices(settings):
        print(f"ragstream {choice.line()}", flush=True)


class _AnnouncingServer(uvicorn.Server):
    """uvicorn's server that announces itself in the data directory while it listens."""

    def __init__(self, config: uvicorn.Config, data_dir: Path, host: str, kind: str = "serve") -> None:
        super().__init__(config)
        self._data_dir = data_dir
        self._host = host
        self._kind = kind

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        await super().startup(sockets)
        if self.started and self.servers and self.servers[0].sockets:
            port = self.servers[0].sockets[0].getsockname()[1]
            url = serve_link.client_url(self._host, port)
            try:
                serve_link.announce(self._data_dir, url, self._kind)
            except OSError as error:  # e.g. a full disk: serve anyway, CLI commands just cannot find us
                logger.warning("could not announce the server in %s: %s", self._data_dir, error)
            if self._kind == "watch":
                print(f"other ragstream commands on this index go through {url} while the watch runs", flush=True)

    async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
        serve_link.withdraw(self._data_dir)  # before uvicorn re-raises the stopping signal
        await super().shutdown(sockets)
