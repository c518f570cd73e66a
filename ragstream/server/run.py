"""Run the server with uvicorn (what ``ragstream serve`` calls)."""

from __future__ import annotations

import uvicorn

from ragstream.api import Ragstream
from ragstream.config import ServerConfig
from ragstream.observability import configure_logging
from ragstream.server.app import UI_PATH, create_app


def serve(rs: Ragstream, config: ServerConfig) -> None:
    """Serve ``rs`` on ``config.host:config.port`` until interrupted; one process, many threads."""
    app = create_app(rs, config)
    configure_logging(config.log_level)
    host = f"[{config.host}]" if ":" in config.host else config.host
    print(f"ragstream UI: http://{host}:{config.port}{UI_PATH}/   API docs: http://{host}:{config.port}/docs", flush=True)
    uvicorn.run(app, host=config.host, port=config.port, log_config=None, access_log=False,
                log_level=config.log_level)
