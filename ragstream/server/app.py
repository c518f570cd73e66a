"""``create_app``: the FastAPI application over one :class:`ragstream.Ragstream`."""

from __future__ import annotations

from pathlib import Path

from fastapi import FastAPI
from fastapi.middleware.cors import CORSMiddleware
from fastapi.responses import RedirectResponse
from fastapi.staticfiles import StaticFiles
from fastapi_offline import FastAPIOffline

from ragstream.api import Ragstream
from ragstream.config import ServerConfig
from ragstream.server import chat, documents, metrics, openai_compat, pipeline, search, ui
from ragstream.server.errors import install_error_handlers
from ragstream.server.security import ApiKeyMiddleware, RequestContextMiddleware, api_key_required, check_binding
from ragstream.server.state import PromptSessions, ServerState
from ragstream.server.uploads import UPLOADS_DIRNAME, UploadStore

STATIC_DIR = Path(__file__).parent / "static"
UI_PATH = "/ui"
TITLE = "ragstream"
DESCRIPTION = "Retrieval-augmented generation with cited, streamed answers. Errors are JSON bodies " \
              "`{\"error\": {\"code\", \"type\", \"message\"}, \"request_id\"}` with stable codes."


def create_app(rs: Ragstream, config: ServerConfig | None = None) -> FastAPI:
    """The HTTP API and web UI over ``rs``; raises ConfigError when ``config`` needs a missing API key."""
    config = config or rs.config.server
    keys = check_binding(config)
    app = FastAPIOffline(title=TITLE, description=DESCRIPTION, version=metrics.package_version())
    app.state.ragstream = ServerState(rs=rs, config=config, uploads=_upload_store(rs, config),
                                      prompts=PromptSessions(config.max_pipeline_sessions))
    install_error_handlers(app)
    for module in (documents, search, chat, pipeline, openai_compat, metrics, ui):
        app.include_router(module.router)
    app.mount(UI_PATH, StaticFiles(directory=STATIC_DIR, html=True), name="ui")

    @app.get("/", include_in_schema=False)
    def home() -> RedirectResponse:
        return RedirectResponse(f"{UI_PATH}/")

    if api_key_required(config, keys):
        app.add_middleware(ApiKeyMiddleware, keys=keys)
    app.add_middleware(RequestContextMiddleware, config=config)
    if config.cors_origins:
        app.add_middleware(CORSMiddleware, allow_origins=config.cors_origins, allow_methods=["*"],
                           allow_headers=["*"], expose_headers=[config.request_id_header])
    return app


def _upload_store(rs: Ragstream, config: ServerConfig) -> UploadStore:
    root = config.upload_dir or Path(rs.config.data_dir) / UPLOADS_DIRNAME
    return UploadStore(root, max_file_bytes=rs.config.limits.max_file_bytes, read_bytes=config.upload_read_bytes)

