"""``POST /v1/prices``: one request's usage priced under a dated contract, without a log
(``cachecast price``'s report)."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Request
from fastapi.concurrency import run_in_threadpool

from cachecast.service.routers._body import post_reading_body, read_json_body
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


@post_reading_body(
    router,
    "/prices",
    PriceRequest,
    summary="Price one request's usage under the contract in force on a day",
    response_model=PriceReport,
    problems=(400, 404, 413, 415, 422),
    examples={"cached": _EXAMPLE},
)
async def create_price(
    request: Request, state: Annotated[ServiceState, Depends(service_state)]
) -> PriceReport:
    """The same bill as an estimate's, split by what it pays for, with the bill without
    the cache beside it. An unknown target is a 404 with close matches; a TTL the contract
    does not offer, a 422 naming ``cache_write_by_ttl.<name>``. The body is read as every
    JSON body is (strictly: UTF-8 checked, nesting and integers bounded, a 422 naming the
    field), not by the framework's lenient parser."""
    body = await read_json_body(request, PriceRequest)
    return await run_in_threadpool(price, body, state.contracts)
