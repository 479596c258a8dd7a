"""``GET /v1/jobs/{id}``: status, progress and, once done, the stored result;
``DELETE /v1/jobs/{id}``: cancel it."""

from __future__ import annotations

import datetime as dt
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Header, Path
from fastapi.concurrency import run_in_threadpool
from fastapi.security import HTTPAuthorizationCredentials
from pydantic import BaseModel, Field

from cachecast.service.auth import bearer_scheme
from cachecast.service.jobs import JobView
from cachecast.service.ownership import JOB_TOKEN_HEADER, may_see
from cachecast.service.problems import ProblemError, problem_responses
from cachecast.service.state import ServiceState, service_state

router = APIRouter(prefix="/v1/jobs", tags=["jobs"])

JobId = Annotated[str, Path(max_length=64, examples=["5f0c2f7e-8a53-4d8b-9a39-0d9b0b1c2d3e"])]
OwnerToken = Annotated[
    str | None,
    Header(
        alias=JOB_TOKEN_HEADER,
        max_length=128,
        description="the owner_token the submission answered with",
    ),
]
Credentials = Annotated[HTTPAuthorizationCredentials | None, Depends(bearer_scheme)]


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
    job_id: JobId,
    state: Annotated[ServiceState, Depends(service_state)],
    owner_token: OwnerToken = None,
    credentials: Credentials = None,
) -> JobStatusResponse:
    """Needs the job's owner token (``X-Job-Token``, from the submission's answer) or an
    admin key (``Authorization: Bearer KEY``); otherwise 404, as for an unknown id."""
    return _status(await _owned_job(job_id, state, owner_token, credentials))


@router.delete(
    "/{job_id}",
    summary="Cancel a queued or running job",
    response_model=JobStatusResponse,
    responses=problem_responses(404, 409),
)
async def cancel_job(
    job_id: JobId,
    state: Annotated[ServiceState, Depends(service_state)],
    owner_token: OwnerToken = None,
    credentials: Credentials = None,
) -> JobStatusResponse:
    """The job ends ``failed`` with a ``job-cancelled`` problem and no result; a worker
    running it stops within about a second. A job already done or failed is a 409. Needs
    the owner token or an admin key, as ``GET``."""
    before = await _owned_job(job_id, state, owner_token, credentials)
    job = await run_in_threadpool(state.jobs.cancel, job_id)
    if job is None:  # the retention sweep deleted it (finished) between the two reads
        raise _unknown(job_id)
    if before.status not in ("queued", "running") or not _cancelled(job):
        raise ProblemError(
            409,
            "Job already finished",
            f"job {job_id} is {job.status}; only a queued or running job can be cancelled",
            slug="job-finished",
        )
    return _status(job)


async def _owned_job(
    job_id: str,
    state: ServiceState,
    owner_token: str | None,
    credentials: HTTPAuthorizationCredentials | None,
) -> JobView:
    job = await run_in_threadpool(state.jobs.get, job_id)
    bearer = credentials.credentials if credentials is not None else None
    if job is None or not may_see(job, owner_token, bearer, state.settings):
        raise _unknown(job_id)  # the same answer: an id alone does not reveal a job
    return job


def _unknown(job_id: str) -> ProblemError:
    return ProblemError(404, "Unknown job", f"no job with id {job_id!r}", slug="unknown-job")


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
