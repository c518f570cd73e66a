"""Run the server with uvicorn (what ``ragstream serve`` calls)."""

from __future__ import annotations

import logging
import socket
from pathlib import Path

import uvicorn

from ragstream import serve_link
from ragstream.api import Ragstream
from ragstream.config import ServerConfig
from ragstream.observability import configure_logging
from ragstream.server.app import UI_PATH, create_app

logger = logging.getLogger("ragstream.server")


def serve(rs: Ragstream, config: ServerConfig) -> None:
    """Serve ``rs`` on ``config.host:config.port`` until interrupted; one process, many threads.

    While it listens, ``{data_dir}/server.json`` names its URL, so CLI commands on the same index go
    through it (:mod:`ragstream.serve_link`).
    """
    app = create_app(rs, config)
    configure_logging(config.log_level)
    host = f"[{config.host}]" if ":" in config.host else config.host
    print(f"ragstream UI: http://{host}:{config.port}{UI_PATH}/   API docs: http://{host}:{config.port}/docs", flush=True)
    uvicorn_config = uvicorn.Config(app, host=config.host, port=config.port, log_config=None, access_log=False,
                                    log_level=config.log_level)
    _AnnouncingServer(uvicorn_config, Path(rs.config.data_dir), config.host).run()


class _AnnouncingServer(uvicorn.Server):
    """uvicorn's server that announces itself in the data directory while it listens."""

    def __init__(self, config: uvicorn.Config, data_dir: Path, host: str) -> None:
        super().__init__(config)
        self._data_dir = data_dir
        self._host = host

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        await super().startup(sockets)
        if self.started and self.servers and self.servers[0].sockets:
            port = self.servers[0].sockets[0].getsockname()[1]
            try:
                serve_link.announce(self._data_dir, serve_link.client_url(self._host, port))
            except OSError as error:  # e.g. a full disk: serve anyway, CLI commands just cannot find us
                logger.warning("could not announce the server in %s: %s", self._data_dir, error)

    async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
        serve_link.withdraw(self._data_dir)  # before uvicorn re-raises the stopping signal
        await super().shutdown(sockets)
