"""``POST /v1/simulations``: hit statistics of a log under one cache policy, no prices:
``simulate``'s report, the object ``cachecast simulate --json`` prints."""

from __future__ import annotations

from fastapi import APIRouter, Request

from cachecast.service.estimating import SimulationBody, simulation_request
from cachecast.service.isolation import run_isolated
from cachecast.service.routers._body import body_subject, post_reading_body, read_body
from cachecast.simulator.routing import Routing
from cachecast.usecases.simulate import (
    FleetSimulationReport,
    PolicyKind,
    SimulationReport,
    simulate,
)

router = APIRouter(prefix="/v1", tags=["simulations"])

FORM_FIELDS = (
    "policy",
    "target",
    "at",
    "block_size",
    "capacity_blocks",
    "ttl_seconds",
    "min_tokens",
    "increment",
    "replicas",
    "routing",
)


@post_reading_body(
    router,
    "/simulations",
    SimulationBody,
    summary="Replay a log through a cache policy and count hits",
    response_model=SimulationReport | FleetSimulationReport,
    problems=(404, 408, 413, 415, 422),
    multipart_required=["log", "policy"],
    multipart_properties={
        "policy": {"type": "string", "enum": [kind.value for kind in PolicyKind]},
        "target": {"type": "string"},
        "at": {"type": "string", "format": "date"},
        "block_size": {"type": "integer", "minimum": 1},
        "capacity_blocks": {"type": "integer", "minimum": 1},
        "ttl_seconds": {"type": "integer", "minimum": 1},
        "min_tokens": {"type": "integer", "minimum": 0},
        "increment": {"type": "integer", "minimum": 1},
        "replicas": {"type": "integer", "minimum": 1},
        "routing": {"type": "string", "enum": [routing.value for routing in Routing]},
    },
)
async def create_simulation(
    request: Request,
) -> SimulationReport | FleetSimulationReport:
    """A fleet report when ``replicas`` and ``routing`` are given, else one policy's
    statistics. Bad records are a 422 naming each record's index (and line, for an upload)
    and field; nothing is simulated then."""
    body, lines = await read_body(request, SimulationBody, FORM_FIELDS)
    work = simulation_request(body, lines)
    return await run_isolated(request, simulate, work, subject=body_subject(request))
