"""``create_app``: the FastAPI application over one :class:`ragstream.Ragstream`."""

from __future__ import annotations

import logging
from collections.abc import Callable
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
from ragstream.server.intake import already_ingested, ingest_stored, stored_upload
from ragstream.server.jobs import FileWork, JobRunner
from ragstream.server.mcp import mount_mcp
from ragstream.server.root_syncs import RootSyncs
from ragstream.server.schemas import JobStatus, UploadedFile
from ragstream.server.security import ApiKeyMiddleware, RequestContextMiddleware, api_key_required, check_binding
from ragstream.server.state import PromptSessions, ServerState
from ragstream.server.uploads import UPLOADS_DIRNAME, UploadStore
from ragstream.store.factory import single_process_reason

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
    uploads = _upload_store(rs, config)
    shared = single_process_reason(rs.config) is None
    jobs = JobRunner(rs.catalog.jobs, config.jobs, shared=shared, discard=_discard_unindexed(rs, uploads))
    state = ServerState(rs=rs, config=config, uploads=uploads, jobs=jobs, root_syncs=RootSyncs(lambda root: rs.sync([root])),
                        prompts=PromptSessions(config.max_pipeline_sessions, config.max_pipeline_session_bytes))
    app.state.ragstream = state

    if not shared:
        _sweep_orphans(rs, uploads)

    def start_jobs() -> None:  # a read-only index (full disk): once it opens for writing
        if not shared:
            jobs.fail_interrupted()
        jobs.start(_job_work(state))

    rs.when_writable(start_jobs)
    install_error_handlers(app)
    app.router.on_shutdown.append(jobs.shutdown)
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


def _upload_store(rs: Ragstream, config: ServerConfig) -> UploadStore:
    root = config.upload_dir or Path(rs.config.data_dir) / UPLOADS_DIRNAME
    return UploadStore(root, max_file_bytes=rs.config.limits.max_file_bytes, read_bytes=config.upload_read_bytes,
                       min_free_bytes=rs.config.limits.min_free_disk_bytes)


def _job_work(state: ServerState) -> FileWork:
    """How a background job ingests one of its stored files (checking first, in a job taken over from a worker
    that died, whether that worker got the file in already)."""
    def work(job: JobStatus, item: UploadedFile, resumed: bool) -> UploadedFile:
        owner = None if job.shared or job.collection else job.user
        done = already_ingested(state, item, job.user, owner, job.collection) if resumed else None
        return done or ingest_stored(state, item, job.user, owner, job.collection)
    return work


def _sweep_orphans(rs: Ragstream, uploads: UploadStore) -> None:
    """At start-up on a catalog this process holds alone, and with uploads under the data directory (no other index
    shares them): delete the stored uploads no live document holds, left by a crash between storing a file and
    committing or refusing it (those of an interrupted job included; the job is failed when the jobs start)."""
    if not uploads.root.is_relative_to(Path(rs.config.data_dir).resolve()):
        return
    live = {path for record in rs.documents() if (path := stored_upload(record))}
    removed = uploads.sweep(live)
    if removed:
        logger.warning("removed %d stored upload(s) that no document holds (left by an earlier crash)", len(removed))


def _discard_unindexed(rs: Ragstream, uploads: UploadStore) -> Callable[[list[UploadedFile]], None]:
    """Removes the stored uploads a failed job never ingested (each kept when a live document names it)."""
    def discard(items: list[UploadedFile]) -> None:
        live = {str(stored_upload(record)) for record in rs.documents()}
        for item in items:
            if item.stored_as and item.stored_as not in live:
                uploads.remove(item.stored_as)

    return discard
