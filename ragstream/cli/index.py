"""Which index a command uses, and how a command ends on an error.

A command opens the index itself (:func:`open_index`) or, when it only reads, goes through a running
``ragstream serve`` (or watch) on it (:func:`reading_index`). Every command names the index it used on
stderr, so ``--json`` output on stdout stays clean; a :class:`RagstreamError` ends it with exit code 2
and the error's code (:func:`fail`).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn

import typer
from rich.console import Console
from rich.markup import escape

from ragstream.errors import RagstreamError

if TYPE_CHECKING:
    from ragstream.api import Ragstream
    from ragstream.config import RagstreamConfig
    from ragstream.remote import RemoteIndex

console = Console()
err_console = Console(stderr=True)

CATALOG_FILE = "catalog.sqlite3"
EXIT_EMPTY_INDEX = 1
EXIT_ERROR = 2


def load_settings(config: Path | None, data_dir: Path | None, llm_model: Path | None = None) -> RagstreamConfig:
    """The config of ``--config``, ``--data-dir`` and ``--llm-model`` (each optional; the last runs that GGUF file as
    the answering model: ``llm.provider = "local"``)."""
    from ragstream.config import load_config

    overrides: dict[str, object] = {"data_dir": data_dir} if data_dir else {}
    if llm_model is not None:
        overrides["llm"] = {"provider": "local", "model_path": str(llm_model)}
    return load_config(config, **overrides)


def open_index(config: Path | None, data_dir: Path | None, *, must_exist: bool = False) -> Ragstream:
    """Open the index (creating it unless ``must_exist``) and say on stderr which one it is."""
    return open_settings_index(load_settings(config, data_dir), must_exist=must_exist)


def open_settings_index(settings: RagstreamConfig, *, must_exist: bool) -> Ragstream:
    """Open the index ``settings`` names (exit 1 when ``must_exist`` and it does not); say which on stderr."""
    index = Path(settings.data_dir).resolve()
    if must_exist and settings.store.backend == "qdrant_edge" and not (index / CATALOG_FILE).is_file():
        err_console.print(f"no index at {index} yet: ingest documents first (ragstream ingest PATH), "
                          "or name another with --data-dir / RAGSTREAM_DATA_DIR")
        raise typer.Exit(code=EXIT_EMPTY_INDEX)
    from ragstream.api import Ragstream
    from ragstream.api_runtime import serve_link

    try:
        rs = Ragstream(settings)
    except RagstreamError as error:
        server = serve_link.announcement(index)
        if server is not None:
            err_console.print(f"ragstream {server.kind} at {server.url} (process {server.pid}) holds the index at "
                              f"{index}: search, ask, chat and docs go through it; upload with POST /api/documents, "
                              "sync a registered root with POST /api/roots/sync, or stop it to run this command",
                              soft_wrap=True)
        fail(error)
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
def reading_index(config: Path | None, data_dir: Path | None, *, need_documents: bool = True,
                  llm_model: Path | None = None) -> Iterator[Ragstream | RemoteIndex]:
    """The index for a command that reads it: through a running ``ragstream serve`` on it when there is
    one, else opened here; exit 1 when it does not exist (or, with ``need_documents``, holds no document)."""
    settings = load_settings(config, data_dir, llm_model)
    from ragstream.api_runtime import serve_link

    held = serve_link.announcement(settings.data_dir)
    if held is not None:
        from ragstream.remote import find_server

        remote = find_server(settings)
        if remote is not None:
            if llm_model is not None:
                err_console.print(f"--llm-model is not used: the running ragstream {held.kind} answers with its "
                                  "own model", soft_wrap=True)
            with remote:
                yield from _remote_index(remote, settings, need_documents=need_documents, kind=held.kind)
            return
    rs = open_settings_index(settings, must_exist=True)
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
        fail(error)
    err_console.print(f"[dim]index {index} ({count} document{'' if count == 1 else 's'}, "
                      f"via ragstream {kind} at {remote.url})[/]", soft_wrap=True)
    if need_documents and not count:
        err_console.print(f"the index at {index} is empty: ingest documents first (ragstream ingest PATH)")
        raise typer.Exit(code=EXIT_EMPTY_INDEX)
    yield remote


def fail(error: RagstreamError) -> NoReturn:
    """End the command with exit code 2, naming the error, its code and its message on stderr."""
    name = getattr(error, "error_type", type(error).__name__)
    err_console.print(f"[bold red]{escape(name)}[/] ({error.code}): {escape(error.message)}", soft_wrap=True)
    raise typer.Exit(code=EXIT_ERROR)
