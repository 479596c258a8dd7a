"""``GET /v1/jobs/{id}``: status, progress and, once done, the stored result;
``DELETE /v1/jobs/{id}``: cancel it."""

from __future__ import annotations

import datetime as dt
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Path
from fastapi.concurrency import run_in_threadpool
from pydantic import BaseModel, Field

from cachecast.service.jobs import JobView
from cachecast.service.problems import ProblemError, problem_responses
from cachecast.service.state import ServiceState, service_state

router = APIRouter(prefix="/v1/jobs", tags=["jobs"])


class JobProgress(BaseModel):
    processed_records: int = Field(examples=[1200])
    total_records: int = Field(examples=[5000])
    fraction: float = Field(ge=0, le=1, examples=[0.24])


class JobStatusResponse(BaseModel):
    id: str
    kind: str = Field(examples=["estimate"])
    status: str = Field(description="queued, running, done or failed", examples=["running"])
    progress: JobProgress
    created_at: dt.datetime
    started_at: dt.datetime | None = None
    finished_at: dt.datetime | None = None
    result: dict[str, Any] | None = Field(
        default=None, description="when done: the same object as a 200 answer would carry"
    )
    error: dict[str, Any] | None = Field(
        default=None, description="when failed: a problem document saying why"
    )


@router.get(
    "/{job_id}",
    summary="A background job's status and progress; its result once done",
    response_model=JobStatusResponse,
    responses=problem_responses(404),
)
async def get_job(
    job_id: Annotated[str, Path(max_length=64, examples=["5f0c2f7e-8a53-4d8b-9a39-0d9b0b1c2d3e"])],
    state: Annotated[ServiceState, Depends(service_state)],
) -> JobStatusResponse:
    job = await run_in_threadpool(state.jobs.get, job_id)
    if job is None:
        raise ProblemError(404, "Unknown job", f"no job with id {job_id!r}", slug="unknown-job")
    return _status(job)


@router.delete(
    "/{job_id}",
    summary="Cancel a queued or running job",
    response_model=JobStatusResponse,
    responses=problem_responses(404, 409),
)
async def cancel_job(
    job_id: Annotated[str, Path(max_length=64, examples=["5f0c2f7e-8a53-4d8b-9a39-0d9b0b1c2d3e"])],
    state: Annotated[ServiceState, Depends(service_state)],
) -> JobStatusResponse:
    """The job ends ``failed`` with a ``job-cancelled`` problem and no result; a worker
    running it stops within about a second. A job already done or failed is a 409."""
    before = await run_in_threadpool(state.jobs.get, job_id)
    if before is None:
        raise ProblemError(404, "Unknown job", f"no job with id {job_id!r}", slug="unknown-job")
    job = await run_in_threadpool(state.jobs.cancel, job_id)
    if job is None:  # the retention sweep deleted it (finished) between the two reads
        raise ProblemError(404, "Unknown job", f"no job with id {job_id!r}", slug="unknown-job")
    if before.status not in ("queued", "running") or not _cancelled(job):
        raise ProblemError(
            409,
            "Job already finished",
            f"job {job_id} is {job.status}; only a queued or running job can be cancelled",
            slug="job-finished",
        )
    return _status(job)


def _cancelled(job: JobView) -> bool:
    return job.error is not None and str(job.error.get("type", "")).endswith("/job-cancelled")


def _status(job: JobView) -> JobStatusResponse:
    return JobStatusResponse(
        id=job.id,
        kind=job.kind,
        status=job.status,
        progress=JobProgress(
            processed_records=job.processed, total_records=job.total_records, fraction=job.fraction
        ),
        created_at=job.created_at,
        started_at=job.started_at,
        finished_at=job.finished_at,
        result=job.result,
        error=job.error,
    )
