"""Price one request's usage under a dated contract, without a log (``cachecast price``,
``POST /v1/prices``).

The same bill as every estimate: :func:`cachecast.simulator.billing.bill_request` under the
contract in force on ``at`` (default today, UTC), long-context tiers included (the prompt is
``input + cache_read + every cache write``). ``input_tokens`` are the prompt tokens neither
read from nor written to the cache (Anthropic's ``input_tokens``; OpenAI's ``prompt_tokens``
minus ``cached_tokens``). Writes are billed at the multiplier of the TTL option they name;
``cache_write_tokens`` go to the contract's default option. A TTL the contract does not
offer is bad input naming the field and the options it has (docs/billing.md).
"""

from __future__ import annotations

import datetime as dt
from typing import Annotated

from pydantic import Field

from cachecast.contracts import ContractStore
from cachecast.core.errors import BadInputError, Location
from cachecast.passes.targets import contract_in_force, parse_target
from cachecast.simulator.billing import bill_request, bill_without_cache, prices_for
from cachecast.simulator.types import RequestUsage
from cachecast.usecases.estimate import today
from cachecast.usecases.reports import ContractReference, CostBreakdown, Money, Ratio, Report
from cachecast.usecases.requests import Request

MAX_TOKENS = 10**12  # far above any request; bounds the work before any arithmetic
# A JSON integer, not a string of digits: the schema says integer, and so does the check.
TokenCount = Annotated[int, Field(strict=True, ge=0, le=MAX_TOKENS)]


class PriceRequest(Request):
    """One request's usage to price under ``target``'s contract in force on ``at``."""

    target: str = Field(description="PROVIDER:MODEL", examples=["anthropic:claude-sonnet-4-5"])
    at: dt.date | None = Field(default=None, description="default: today, UTC")
    input_tokens: TokenCount = Field(
        default=0, description="prompt tokens neither read nor written"
    )
    cache_read_tokens: TokenCount = 0
    cache_write_tokens: TokenCount = Field(
        default=0, description="written with the contract's default TTL"
    )
    cache_write_by_ttl: dict[str, TokenCount] = Field(
        default_factory=dict,
        max_length=16,
        description="tokens written per TTL option name, e.g. {'5m': 1000, '1h': 2000}",
    )
    output_tokens: TokenCount = 0


class PriceReport(Report):
    """The bill of the usage, split by what it pays for, with and without the cache."""

    target: str
    at: dt.date
    contract: ContractReference
    prompt_tokens: int = Field(description="input + cache reads + cache writes")
    cache_read_tokens: int
    cache_write_by_ttl: dict[str, int]
    output_tokens: int
    input_per_mtok: Ratio = Field(description="after long-context tiers")
    output_per_mtok: Ratio = Field(description="after long-context tiers")
    long_context_tier_above: int | None = Field(
        description="the tier's threshold (prompt tokens) where a tier applies"
    )
    cost: CostBreakdown
    cost_without_cache: Money = Field(description="every prompt token at the input price")
    savings: Money = Field(description="cost_without_cache - cost.total (negative: a loss)")


def price(request: PriceRequest, store: ContractStore) -> PriceReport:
    """The bill of ``request``'s usage; see the module docstring."""
    target = parse_target(request.target)
    day = request.at or today()
    contract = contract_in_force(target, store, day, Location(field="target"))
    if not contract.offers_caching and (
        request.cache_read_tokens
        or request.cache_write_tokens
        or any(request.cache_write_by_ttl.values())
    ):
        raise BadInputError(
            f"{contract.provider}/{contract.model} (contract from {contract.effective_from})"
            " offers no prompt caching: nothing can be read from or written to a cache (give"
            " every prompt token as input_tokens)",
            location=Location(
                field="cache_read_tokens" if request.cache_read_tokens else "cache_write_tokens"
            ),
        )
    writes: dict[str, int] = {}
    default_ttl = contract.default_ttl
    if request.cache_write_tokens and default_ttl is not None:
        writes[default_ttl.name] = request.cache_write_tokens
    for name, tokens in request.cache_write_by_ttl.items():
        known = [option.name for option in contract.ttl_options]
        if name not in known:
            raise BadInputError(
                f"{contract.provider}/{contract.model} has no TTL option {name!r}"
                f" (it has {', '.join(known) or 'none'})",
                location=Location(field=f"cache_write_by_ttl.{name}"),
                close_matches=known,
            )
        if tokens:
            writes[name] = writes.get(name, 0) + tokens
    prompt = request.input_tokens + request.cache_read_tokens + sum(writes.values())
    usage = RequestUsage(
        request_id="price",
        line=0,
        timestamp=0.0,
        scope="",
        input_tokens=prompt,
        output_tokens=request.output_tokens,
        cache_read_tokens=request.cache_read_tokens,
        cache_write_tokens=writes,
        uncached_input_tokens=request.input_tokens,
    )
    cost = bill_request(usage, contract)
    plain = bill_without_cache(usage, contract)
    prices = prices_for(contract, prompt)
    breakdown = CostBreakdown.of(cost)
    without = CostBreakdown.of(plain).total
    return PriceReport(
        target=str(target),
        at=day,
        contract=ContractReference.of(contract),
        prompt_tokens=prompt,
        cache_read_tokens=request.cache_read_tokens,
        cache_write_by_ttl=writes,
        output_tokens=request.output_tokens,
        input_per_mtok=prices.input_per_mtok,
        output_per_mtok=prices.output_per_mtok,
        long_context_tier_above=prices.tier_above_input_tokens,
        cost=breakdown,
        cost_without_cache=without,
        savings=without - breakdown.total,
    )
