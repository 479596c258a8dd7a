"""``POST /v1/simulations``: hit statistics of a log under one cache policy, no prices."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ConfigDict, Field

from cachecast.service.estimating import SimulationRequest, run_simulation, validate_payload
from cachecast.service.problems import problem_responses
from cachecast.service.routers._body import read_log_body, request_body_docs
from cachecast.service.state import ServiceState, service_state

router = APIRouter(prefix="/v1", tags=["simulations"])


class SimulationResponse(BaseModel):
    model_config = ConfigDict(extra="allow")

    policy: str = Field(examples=["vllm"])
    requests: int = Field(examples=[3993])
    input_tokens: int
    hit_tokens: int = Field(description="prompt tokens read from cache")
    hit_rate: float = Field(description="hit_tokens / input_tokens")


@router.post(
    "/simulations",
    summary="Replay a log through a cache policy and count hits",
    response_model=SimulationResponse,
    responses=problem_responses(404, 413, 415, 422),
    openapi_extra=request_body_docs(
        SimulationRequest,
        multipart_required=["log", "policy"],
        multipart_properties={
            "policy": {"type": "string"},
            "target": {"type": "string"},
            "at": {"type": "string", "format": "date"},
            "block_size": {"type": "integer", "minimum": 1},
            "capacity_blocks": {"type": "integer", "minimum": 1},
            "ttl_seconds": {"type": "integer", "minimum": 1},
        },
    ),
)
async def create_simulation(
    request: Request, state: Annotated[ServiceState, Depends(service_state)]
) -> JSONResponse:
    payload, lines = await read_log_body(
        request, ("policy", "target", "at", "block_size", "capacity_blocks", "ttl_seconds")
    )
    simulation = validate_payload(SimulationRequest, payload)
    result = await run_in_threadpool(run_simulation, state.contracts, simulation, lines)
    return JSONResponse(result)
