"""``server``: the HTTP API, its users and keys, background jobs and the web UI's sizes (docs/http-api.md)."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import Field, SecretStr, model_validator

from ragstream.config.base import ConfigSection


class ApiKeyEntry(ConfigSection):
    """One API key of a multi-user server: the user it acts as and its role."""

    key: SecretStr = Field(description="The key, sent as Authorization: Bearer KEY or X-API-Key: KEY.")
    user: str = Field(description="The user id requests with this key act as (owner of what they upload).")
    role: Literal["user", "admin"] = Field(
        "user", description="admin: may act as another user (X-User-ID), upload shared documents, delete "
        "shared documents and reindex.")


class JobsConfig(ConfigSection):
    """Background ingest jobs: a queue in the catalog that every server worker takes jobs from."""

    lease_seconds: float = Field(
        30.0, gt=0, description="A running job's lease, in seconds: its worker renews it while it runs; a job whose "
        "lease ran out (its worker died or hung) is taken over by another worker.")
    heartbeat_seconds: float = Field(
        5.0, gt=0, description="How often (seconds) a worker renews the lease of the job it runs (well under "
        "lease_seconds).")
    poll_seconds: float = Field(
        2.0, gt=0, description="How often (seconds) an idle worker looks for queued jobs and expired leases (a job "
        "submitted to the same worker starts at once).")
    max_attempts: int = Field(
        3, ge=1, description="Workers a job may be given to; a job whose worker died this many times is failed "
        "(its files not ingested are removed) rather than taken over again.")

    @model_validator(mode="after")
    def _heartbeat_within_lease(self) -> JobsConfig:
        if self.heartbeat_seconds >= self.lease_seconds:
            raise ValueError("server.jobs.heartbeat_seconds must be less than lease_seconds, or leases run out "
                             "while their jobs run")
        return self


class ServerConfig(ConfigSection):
    """The HTTP API and web UI (``ragstream serve``)."""

    host: str = Field("127.0.0.1", description="Address to bind; any non-loopback address requires api_key.")
    port: int = Field(8000, ge=0, le=65535, description="TCP port to bind (0 picks a free one).")
    workers: int = Field(
        1, ge=1, description="Server processes on the one port (`ragstream serve --workers N`); more than 1 needs a "
        "store every process can share: store.backend postgres, or qdrant on a server with store.qdrant.catalog_url.")
    api_key: SecretStr | None = Field(
        None, description="Key every route but /healthz and the UI's static files requires "
        "(Authorization: Bearer KEY or X-API-Key: KEY); env RAGSTREAM_SERVER__API_KEY."
    )
    require_api_key: bool = Field(False, description="Require api_key even when bound to loopback.")
    keys: list[ApiKeyEntry] = Field(
        default_factory=list, description="Per-user API keys (multi-user mode: every request needs a key, "
        "wherever the server is bound); env RAGSTREAM_SERVER__KEYS as a JSON list.")
    keys_file: Path | None = Field(
        None, description="A TOML or JSON file of more per-user keys: a `keys` list of {key, user, role} "
        "tables, read when the server starts.")
    min_api_key_chars: int = Field(
        16, ge=1, description="Shortest API key accepted, in characters; a shorter or blank key stops the server at "
        "start-up.")
    upload_dir: Path | None = Field(None, description="Where uploaded files are kept; default {data_dir}/uploads.")
    user_id_header: str = Field(
        "X-User-ID", description="Request header naming the user to act as: honoured for an admin key and in "
        "single-user mode (no keys, loopback); with a user key it may only name that key's own user.")
    default_user_id: str = Field("local", description="The user of single-user mode and of server.api_key.")
    max_user_id_chars: int = Field(64, ge=1, description="Longest user id, in characters; a longer one is refused.")
    dedupe_uploads: bool = Field(
        True, description="An upload whose sha256 matches a live document is reported as a duplicate, not re-ingested."
    )
    max_files_per_request: int = Field(100, ge=1, description="Files accepted in one upload request.")
    upload_read_bytes: int = Field(
        1024 * 1024, ge=1, description="Read size when copying an upload to storage, in bytes.")
    max_filename_chars: int = Field(255, ge=1, description="Client file names are cut to this many characters for display.")
    request_id_header: str = Field("X-Request-ID", description="Header carrying the request id in and out.")
    max_request_id_chars: int = Field(
        128, ge=1, description="Incoming request ids longer than this many characters are replaced.")
    cors_origins: list[str] = Field(default_factory=list, description="Origins allowed by CORS; empty = same origin only.")
    max_top_k: int = Field(100, ge=1, description="Largest top_k a search request may ask for.")
    max_pipeline_sessions: int = Field(200, ge=1, description="SuperPrompts kept in memory; the oldest is dropped.")
    max_pipeline_session_bytes: int = Field(
        64 * 1024 * 1024, ge=1, description="Total size in bytes (as JSON) of the SuperPrompts kept in memory; the "
        "oldest are dropped beyond it.")
    background_ingest_bytes: int = Field(
        1024 * 1024, ge=0, description="An upload request whose files together take more bytes is ingested by a "
        "background job: 202 with the job id, progress at GET /api/jobs/{id}.")
    background_unpacked_bytes: int = Field(
        8 * 1024 * 1024, ge=0, description="An upload request whose zipped documents (Office, OpenDocument, EPUB) "
        "together declare they unpack to more bytes is ingested by a background job (their XML is what takes time).")
    background_ocr_pages: int = Field(
        5, ge=0, description="An upload request whose files hold more pages for OCR to read (PDF pages without "
        "fonts, image frames; when OCR is on) is ingested by a background job (OCR takes about a second a page).")
    jobs: JobsConfig = JobsConfig()
    log_level: Literal["critical", "error", "warning", "info", "debug"] = Field(
        "info", description="Log level of `ragstream serve` and `ragstream mcp` (their logs go to stderr).")
    ws_first_message_seconds: float = Field(
        30.0, gt=0, description="/ws/chat: how long (seconds) the server waits for the client's first message (the "
        "/api/chat body) before it sends an error event and closes the socket.")
    client_timeout_seconds: float = Field(
        120.0, gt=0, description="CLI commands sent to a running server on the same index wait this many seconds for "
        "the answer.")
    client_probe_seconds: float = Field(
        1.0, gt=0, description="How long (seconds) the CLI's check that the server announced in the data directory "
        "answers (/healthz) may take.")
    ui_stage_top_entries: int = Field(
        20, ge=1, description="Pipeline page: chunks shown per stage before 'show all'.")
    documents_page_size: int = Field(25, ge=1, description="Documents page: rows per page (GET /api/documents/page).")
    max_documents_page_size: int = Field(500, ge=1, description="Largest limit GET /api/documents/page accepts.")
    max_document_filter_chars: int = Field(
        200, ge=1, description="Longest name/title filter GET /api/documents/page accepts, in characters.")
    example_questions: int = Field(
        3, ge=0, description="Chat page: example questions drawn from the index's document titles.")
    example_title_chars: int = Field(
        80, ge=8, description="Titles longer than this many characters are cut (at a word) in example questions.")
