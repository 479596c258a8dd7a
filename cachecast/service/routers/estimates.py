"""``POST /v1/estimates``: what a log costs under dated contracts: ``estimate``'s report."""

from __future__ import annotations

from functools import partial
from typing import Annotated

from fastapi import APIRouter, Depends, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import JSONResponse
from pydantic import BaseModel, Field

from cachecast.service.estimating import EstimateBody, check_job_size, estimate_request
from cachecast.service.isolation import run_isolated
from cachecast.service.jobs import JobQueueFullError
from cachecast.service.ownership import new_owner_token
from cachecast.service.problems import ProblemError
from cachecast.service.routers._body import body_subject, post_reading_body, read_body
from cachecast.service.state import ServiceState, service_state
from cachecast.usecases.estimate import EstimateReport, estimate, plan_estimate

router = APIRouter(prefix="/v1", tags=["estimates"])

ESTIMATE_JOB_KIND = "estimate"


class JobAccepted(BaseModel):
    job_id: str = Field(examples=["5f0c2f7e-8a53-4d8b-9a39-0d9b0b1c2d3e"])
    status: str = Field(examples=["queued"])
    status_url: str = Field(examples=["/v1/jobs/5f0c2f7e-8a53-4d8b-9a39-0d9b0b1c2d3e"])
    total_records: int
    owner_token: str = Field(
        description="send it as the X-Job-Token header to read or cancel the job; it is"
        " shown once, and only its digest is stored"
    )


_EXAMPLE = {
    "records": [
        {
            "timestamp": 1762074000,
            "scope": "team-a",
            "prompt": "You are a careful assistant. " * 100,
            "output_tokens": 50,
        }
    ],
    "model": "gpt-4o",
    "targets": ["openai:gpt-4o", "openai:gpt-4.1"],
    "at": "2026-11-01",
}


@post_reading_body(
    router,
    "/estimates",
    EstimateBody,
    summary="Price a log under dated provider contracts",
    response_model=EstimateReport,
    problems=(404, 408, 413, 415, 422, 429),
    responses={
        202: {"model": JobAccepted, "description": "a large log: accepted as a background job"}
    },
    examples={"two targets": _EXAMPLE},
    multipart_required=["log", "targets"],
    multipart_properties={
        "targets": {
            "type": "array",
            "items": {"type": "string"},
            "description": "PROVIDER:MODEL, repeated or comma-separated",
        },
        "at": {"type": "string", "format": "date"},
        "auto_cache_control": {"type": "boolean"},
    },
)
async def create_estimate(
    request: Request, state: Annotated[ServiceState, Depends(service_state)]
) -> EstimateReport | JSONResponse:
    """Small logs (up to the ``job_threshold_records`` setting) are priced at once and
    answered with 200. Larger ones are stored as a job and answered with 202 and the job's
    address; poll ``GET /v1/jobs/{id}``. Bad records are a 422 naming each record's index
    (and line, for an upload) and field; nothing is priced then."""
    body, lines = await read_body(request, EstimateBody, ("targets", "at", "auto_cache_control"))
    work = estimate_request(body, lines)
    _, _, passes = await run_in_threadpool(plan_estimate, work, state.contracts)
    if len(body.records) > state.settings.job_threshold_records:
        await run_in_threadpool(check_job_size, body.records, state.settings.max_body_bytes)
        total = len(body.records) * len(passes)
        owner_token, owner_digest = new_owner_token()
        try:
            job_id = await run_in_threadpool(
                partial(
                    state.jobs.submit,
                    queue_limit=state.settings.job_queue_limit,
                    owner_digest=owner_digest,
                ),
                ESTIMATE_JOB_KIND,
                work.model_dump(mode="json"),
                total,
            )
        except JobQueueFullError as error:
            retry = str(state.settings.job_retry_after_seconds)
            raise ProblemError(
                429,
                "Job queue full",
                f"{error}; try again later",
                slug="queue-full",
                headers={"Retry-After": retry},
            ) from None
        if state.runner is not None:
            state.runner.notify()
        status_url = request.url_for("get_job", job_id=job_id).path
        accepted = JobAccepted(
            job_id=job_id,
            status="queued",
            status_url=status_url,
            total_records=total,
            owner_token=owner_token,
        )
        return JSONResponse(
            accepted.model_dump(), status_code=202, headers={"Location": status_url}
        )
    return await run_isolated(request, estimate, work, subject=body_subject(request))
