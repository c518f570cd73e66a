"""``GET /api/jobs/{id}``: the state and progress of a background ingest job."""

from __future__ import annotations

from fastapi import APIRouter, Depends

from ragstream.server.errors import JobNotFoundError
from ragstream.server.schemas import ErrorResponse, JobStatus
from ragstream.server.state import ServerState, get_state
from ragstream.server.users import Caller, get_caller

router = APIRouter(prefix="/api/jobs", tags=["documents"])


@router.get("/{job_id}", response_model=JobStatus, responses={404: {"model": ErrorResponse}},
            summary="A background ingest job")
def get_job(job_id: str, state: ServerState = Depends(get_state), caller: Caller = Depends(get_caller)) -> JobStatus:
    """``queued``, ``running``, ``succeeded`` or ``failed``; files done of total, chunks written, per-file results.
    Another user's job is 404, like one that does not exist (an admin reads every job)."""
    job = state.jobs.get(job_id)
    if job is None or not (caller.admin or job.user == caller.user):
        raise JobNotFoundError(f"no job with id {job_id!r}")
    return job
