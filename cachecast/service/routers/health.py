"""Liveness, readiness and Prometheus metrics (outside /v1: they are for operators)."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends
from fastapi.responses import JSONResponse, Response
from pydantic import BaseModel, Field

from cachecast.core import db
from cachecast.service.problems import Problem, problem_response, problem_responses
from cachecast.service.state import ServiceState, service_state

router = APIRouter(tags=["operations"])


class Health(BaseModel):
    status: str = Field(examples=["ok"])


class Readiness(BaseModel):
    status: str = Field(examples=["ready"])
    database: str = Field(examples=["reachable"])
    revision: str | None = Field(examples=["0004_engine_measurements"])
    head_revision: str | None = Field(examples=["0004_engine_measurements"])


@router.get("/healthz", response_model=Health, summary="The process is up")
def healthz() -> Health:
    return Health(status="ok")


@router.get(
    "/readyz",
    response_model=Readiness,
    summary="The database is reachable and migrated to this code's newest revision",
    responses=problem_responses(503),
)
def readyz(state: Annotated[ServiceState, Depends(service_state)]) -> Readiness | JSONResponse:
    revision, problem = db.readiness(state.database_url)
    if problem is not None:
        return _not_ready(problem)
    return Readiness(
        status="ready", database="reachable", revision=revision, head_revision=db.head_revision()
    )


def _not_ready(detail: str) -> JSONResponse:
    return problem_response(
        Problem(title="Not ready", status=503, detail=detail[:2000], instance="/readyz")
    )


@router.get(
    "/metrics",
    summary="Prometheus metrics: requests, latencies, jobs",
    response_class=Response,
    responses={200: {"content": {"text/plain": {}}, "description": "Prometheus text format"}},
)
def metrics(state: Annotated[ServiceState, Depends(service_state)]) -> Response:
    body, content_type = state.metrics.render()
    return Response(body, media_type=content_type)
