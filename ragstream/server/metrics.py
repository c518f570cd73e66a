"""``GET /healthz`` and ``GET /metrics`` (Prometheus text format)."""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version

from fastapi import APIRouter, Depends
from fastapi.responses import Response

from ragstream.api_runtime import metrics
from ragstream.server.schemas import HealthResponse
from ragstream.server.state import ServerState, get_state

router = APIRouter(tags=["observability"])
UNKNOWN_VERSION = "unknown"


@router.get("/healthz", response_model=HealthResponse, summary="Liveness (never needs the API key)")
def healthz() -> HealthResponse:
    """``{"status": "ok"}`` while the server answers."""
    return HealthResponse(version=package_version())


@router.get("/metrics", response_class=Response, summary="Prometheus metrics",
            responses={200: {"content": {metrics.CONTENT_TYPE: {}}}})
def prometheus(state: ServerState = Depends(get_state)) -> Response:
    """Counters (ingested files, chunks, embedding calls, searches, cache hits, LLM calls, HTTP requests)
    and latency histograms, plus the index size."""
    metrics.set_index_size(state.rs.stats())
    return Response(metrics.render(), media_type=metrics.CONTENT_TYPE)


def package_version() -> str:
    """The installed ragstream version."""
    try:
        return version("ragstream")
    except PackageNotFoundError:
        return UNKNOWN_VERSION
