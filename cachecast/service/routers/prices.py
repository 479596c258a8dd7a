"""``POST /v1/prices``: one request's usage priced under a dated contract, without a log
(``cachecast price``'s report)."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Body, Depends

from cachecast.service.problems import problem_responses
from cachecast.service.state import ServiceState, service_state
from cachecast.usecases.price import PriceReport, PriceRequest, price

router = APIRouter(prefix="/v1", tags=["prices"])

_EXAMPLE = {
    "target": "anthropic:claude-sonnet-4-5",
    "at": "2026-11-01",
    "input_tokens": 1200,
    "cache_read_tokens": 50000,
    "cache_write_by_ttl": {"1h": 4000},
    "output_tokens": 800,
}


@router.post(
    "/prices",
    summary="Price one request's usage under the contract in force on a day",
    response_model=PriceReport,
    responses=problem_responses(400, 404, 422),
)
def create_price(
    state: Annotated[ServiceState, Depends(service_state)],
    body: Annotated[PriceRequest, Body(openapi_examples={"cached": {"value": _EXAMPLE}})],
) -> PriceReport:
    """The same bill as an estimate's, split by what it pays for, with the bill without
    the cache beside it. An unknown target is a 404 with close matches; a TTL the contract
    does not offer, a 422 naming ``cache_write_by_ttl.<name>``."""
    return price(body, state.contracts)
