"""``create_app``: the FastAPI application over one :class:`ragstream.Ragstream`."""

from __future__ import annotations

import logging
from pathlib import Path

from fastapi import FastAPI
from fastapi.middleware.cors import CORSMiddleware
from fastapi.responses import RedirectResponse
from fastapi.staticfiles import StaticFiles
from fastapi_offline import FastAPIOffline

from ragstream.api import Ragstream
from ragstream.config import ServerConfig
from ragstream.server import (
    chat,
    collections,
    documents,
    feedback,
    job_routes,
    metrics,
    openai_compat,
    pipeline,
    roots,
    search,
    ui,
    ws_chat,
)
from ragstream.server.errors import install_error_handlers
from ragstream.server.guard import JSONLimits, RequestGuardMiddleware
from ragstream.server.mcp import mount_mcp
from ragstream.server.root_syncs import RootSyncs
from ragstream.server.security import ApiKeyMiddleware, RequestContextMiddleware, api_key_required, check_binding
from ragstream.server.state import PromptSessions, ServerState

logger = logging.getLogger("ragstream.server")

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
    uploads = rs.upload_service(config)
    state = ServerState(rs=rs, config=config, uploads=uploads.store, jobs=uploads.jobs, documents=uploads.locks,
                        intake=uploads, root_syncs=RootSyncs(lambda root: rs.sync([root])),
                        prompts=PromptSessions(config.max_pipeline_sessions, config.max_pipeline_session_bytes))
    app.state.ragstream = state
    uploads.sweep_orphans()
    rs.when_writable(uploads.start_jobs)  # a read-only index (full disk): once it opens for writing
    install_error_handlers(app)
    app.router.on_shutdown.append(uploads.jobs.shutdown)
    app.router.on_shutdown.append(state.root_syncs.shutdown)
    for module in (documents, collections, job_routes, roots, search, chat, ws_chat, feedback, pipeline, openai_compat, metrics,
                   ui):
        app.include_router(module.router)
    mount_mcp(app, state)
    app.mount(UI_PATH, StaticFiles(directory=STATIC_DIR, html=True), name="ui")

    @app.get("/", include_in_schema=False)
    def home() -> RedirectResponse:
        return RedirectResponse(f"{UI_PATH}/")

    limits = rs.config.limits
    app.add_middleware(RequestGuardMiddleware, max_json_bytes=limits.max_json_body_bytes,
                       json_limits=JSONLimits(limits.max_json_depth, limits.max_json_number_chars),
                       user_id_header=config.user_id_header, upload_paths=frozenset({documents.router.prefix}),
                       jsonrpc_paths=frozenset({rs.config.mcp.http_path} if rs.config.mcp.http_enabled else ()))
    if api_key_required(config, keys):
        app.add_middleware(ApiKeyMiddleware, keys=keys)
    app.add_middleware(RequestContextMiddleware, config=config)
    if config.cors_origins:
        app.add_middleware(CORSMiddleware, allow_origins=config.cors_origins, allow_methods=["*"],
                           allow_headers=["*"], expose_headers=[config.request_id_header])
    return app
