"""Synced and watched roots: ``GET /api/roots`` (what the Documents page shows), ``POST /api/roots/sync`` (admins)."""

from __future__ import annotations

import json
import time
from http import HTTPStatus
from typing import Any

from fastapi import APIRouter, Depends
from pydantic import BaseModel, Field

from ragstream.errors import PermissionDeniedError, RootNotFoundError
from ragstream.server.schemas import ErrorResponse
from ragstream.server.state import ServerState, get_state
from ragstream.server.users import Caller, get_caller

router = APIRouter(prefix="/api/roots", tags=["roots"])


class RootStatus(BaseModel):
    """One folder (or file) that ``ragstream sync`` / ``watch`` keeps the index in step with."""

    root: str = Field(description="Its absolute path on the server's machine.")
    documents: int = Field(description="Live documents that belong to it.")
    last_sync_at: str | None = Field(description="When its last sync (or watch batch) ended, ISO 8601 UTC.")
    last_sync: dict[str, Any] = Field(
        description="What that sync did: added, changed, renamed, removed, unchanged, adopted and failed counts, "
        "and its first failures (sync.failures_kept).")
    watching: bool = Field(description="A watcher (`ragstream watch`, `serve --watch`) holds a live lease on it.")
    watched_until: float | None = Field(description="When that lease runs out unless renewed (seconds since the epoch).")
    syncing: bool = Field(description="A sync asked for over HTTP is queued or running in this server process.")


class RootsResponse(BaseModel):
    roots: list[RootStatus]


class RootSyncRequest(BaseModel):
    root: str = Field(min_length=1, description="A registered root, exactly as GET /api/roots lists it.")


class RootSyncAccepted(BaseModel):
    root: str
    queued: bool = Field(description="False when a sync of it was already queued (that one will run).")


ERRORS: dict[int | str, dict[str, Any]] = {status: {"model": ErrorResponse} for status in (403, 404, 422)}


@router.get("", response_model=RootsResponse, summary="Synced and watched roots")
def list_roots(state: ServerState = Depends(get_state), _: Caller = Depends(get_caller)) -> RootsResponse:
    """Every root a sync has registered, with its document count, last sync and whether a watcher watches it.
    Its documents are shared, so every user sees the list."""
    now = time.time()
    return RootsResponse(roots=[
        RootStatus(root=record.root, documents=record.documents, last_sync_at=record.last_sync_at,
                   last_sync=json.loads(record.last_summary or "{}"), watched_until=record.watched_until,
                   watching=record.watched_until is not None and record.watched_until > now,
                   syncing=state.root_syncs.busy(record.root))
        for record in state.rs.roots()])


@router.post("/sync", status_code=HTTPStatus.ACCEPTED, response_model=RootSyncAccepted, responses=ERRORS,
             summary="Sync a registered root now (admins)")
def sync_root(body: RootSyncRequest, state: ServerState = Depends(get_state),
              caller: Caller = Depends(get_caller)) -> RootSyncAccepted:
    """Queue a sync of a root registered by ``ragstream sync`` or ``watch`` (a path no sync registered is
    ``404 root_not_found``: new roots are added on the server's machine, never over HTTP). It runs in the
    background, one at a time; ``GET /api/roots`` shows ``syncing`` and then its ``last_sync``. Admins only
    (``403 forbidden``): a sync adds and removes shared documents."""
    if not caller.admin:
        raise PermissionDeniedError("only an admin key may sync a root (its documents are shared)")
    if body.root not in {record.root for record in state.rs.roots()}:
        raise RootNotFoundError(f"{body.root!r} is not a synced root; GET /api/roots lists them")
    return RootSyncAccepted(root=body.root, queued=state.root_syncs.submit(body.root))
