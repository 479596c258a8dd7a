"""Bills: what one request costs under one dated contract, exactly, in Decimal dollars.

Prices are per million tokens, so every term is ``tokens * price [* multiplier] / 1_000_000``.
Those terms terminate in decimal, and they are computed in a context that *traps* inexact
results: a bill is never rounded silently. The one term that does not terminate is storage
(token-seconds are divided by 3600 to get token-hours); it is rounded half-even to
``STORAGE_QUANTUM`` (1e-15 USD) per request, and that is the only rounding anywhere. Display
code may round further; this module never does.

Cost rules (docs/billing.md):
- uncached input x input price; reads x input price x ``read_multiplier``;
- writes x input price x the write multiplier of the TTL option they were written with (the
  write multiplier *replaces* the input price for those tokens, it is not added on top);
- output x output price; storage token-hours x ``storage_per_mtok_hour`` where the contract
  charges storage (``None`` means the provider charges none);
- long-context tiers: when a request's whole prompt exceeds a tier's ``above_input_tokens``,
  that tier's input and output prices apply to the whole request, every token type (reads and
  writes are multiples of the tier's input price). The highest threshold exceeded wins.
- batch and flex prices: a request served under a tier a dated batch term prices
  (``contracts.batch_terms``) pays ``price_ratio`` x each part of its on-demand bill that the
  term discounts (``discounted``); storage is never discounted. Exact: the ratio is a decimal.
- off-peak prices (DeepSeek): a request whose timestamp falls inside one of the contract's
  UTC windows pays the off-peak input, output and read prices instead of the base ones
  (writes are multiples of the off-peak input price). A request without an epoch timestamp
  (none in the log, or a trace-relative clock) pays the base prices: the report counts it.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from decimal import Context, Decimal, Inexact, InvalidOperation, localcontext

from cachecast.contracts.batch_terms import BatchTerm, TokenClass
from cachecast.contracts.model import ContractTerms, derived_per_mtok
from cachecast.core.errors import BadInputError
from cachecast.logs.types import ObservedUsage
from cachecast.simulator.types import Cost, RequestUsage

# Wide enough for any realistic bill; Inexact is trapped so that a term that would need
# rounding raises instead of being rounded without anyone noticing.
EXACT = Context(prec=60, traps=[Inexact, InvalidOperation])
STORAGE_QUANTUM = Decimal("1e-15")
_MILLION = Decimal(1_000_000)
_SECONDS_PER_HOUR = Decimal(3600)
# Timestamps below this (2000-01-01T00:00:00Z) are not wall-clock times: a log without
# timestamps counts from 0, a trace from its own start. Off-peak windows need a real time.
EPOCH_FLOOR = 946_684_800.0


class BillingError(BadInputError):
    """The usage cannot be billed under this contract (e.g. a TTL the contract lacks)."""


@dataclass(frozen=True, slots=True)
class RequestPrices:
    """Per-million-token prices in force for one request (after long-context tiers)."""

    input_per_mtok: Decimal
    output_per_mtok: Decimal
    tier_above_input_tokens: int | None  # None: the contract's base prices
    read_multiplier: Decimal
    # True: off-peak prices; False: base prices at a known time; None: the contract has
    # off-peak windows but the request has no wall-clock time (base prices); also False
    # for contracts without windows.
    off_peak: bool | None = False


def prices_for(
    contract: ContractTerms, input_tokens: int, timestamp: float | None = None
) -> RequestPrices:
    """The prices for a request whose whole prompt is ``input_tokens`` long, sent at
    ``timestamp`` (epoch seconds; None or a value before ``EPOCH_FLOOR``: not known).

    Thresholds are exclusive ("above"): a 200,000-token prompt does not reach a tier
    ``above_input_tokens=200000``; 200,001 does.
    """
    off_peak = contract.off_peak
    if off_peak is not None:
        if timestamp is None or timestamp < EPOCH_FLOOR:
            return RequestPrices(
                contract.input_per_mtok,
                contract.output_per_mtok,
                None,
                contract.read_multiplier,
                None,
            )
        if off_peak.applies_at(dt.datetime.fromtimestamp(timestamp, dt.UTC)):
            return RequestPrices(
                off_peak.input_per_mtok,
                off_peak.output_per_mtok,
                None,
                off_peak.read_multiplier,
                True,
            )
    chosen = None
    for tier in contract.long_context_tiers:  # strictly increasing thresholds (validated)
        if input_tokens > tier.above_input_tokens:
            chosen = tier
    if chosen is None:
        return RequestPrices(
            contract.input_per_mtok, contract.output_per_mtok, None, contract.read_multiplier
        )
    return RequestPrices(
        chosen.input_per_mtok,
        chosen.output_per_mtok,
        chosen.above_input_tokens,
        contract.read_multiplier,
    )


def _per_mtok(tokens: int, price_per_mtok: Decimal, multiplier: Decimal = Decimal(1)) -> Decimal:
    price = price_per_mtok if multiplier == 1 else derived_per_mtok(price_per_mtok, multiplier)
    with localcontext(EXACT):
        return Decimal(tokens) * price / _MILLION


def storage_cost(storage_token_seconds: int, contract: ContractTerms) -> Decimal:
    """token-seconds / 3600 x $/MTok/hour / 1e6, rounded half-even to ``STORAGE_QUANTUM``."""
    if storage_token_seconds < 0:
        raise BillingError(f"negative storage_token_seconds {storage_token_seconds}")
    if contract.storage_per_mtok_hour is None or storage_token_seconds == 0:
        return Decimal(0)
    with localcontext(Context(prec=60)):
        amount = (
            Decimal(storage_token_seconds)
            * contract.storage_per_mtok_hour
            / (_SECONDS_PER_HOUR * _MILLION)
        )
        return amount.quantize(STORAGE_QUANTUM)


def bill_request(usage: RequestUsage, contract: ContractTerms) -> Cost:
    """The bill of one request under ``contract`` with caching as the usage says."""
    usage.check()
    prices = prices_for(contract, usage.input_tokens, usage.timestamp)
    cache_write = Decimal(0)
    for ttl_name, tokens in sorted(usage.cache_write_tokens.items()):
        try:
            option = contract.ttl_by_name(ttl_name)
        except KeyError as error:
            raise BillingError(
                f"request {usage.request_id} (line {usage.line}): {error.args[0]}"
            ) from error
        with localcontext(EXACT):
            cache_write += _per_mtok(tokens, prices.input_per_mtok, option.write_multiplier)
    return Cost(
        input=_per_mtok(usage.uncached_input_tokens, prices.input_per_mtok),
        cache_write=cache_write,
        cache_read=_per_mtok(
            usage.cache_read_tokens, prices.input_per_mtok, prices.read_multiplier
        ),
        output=_per_mtok(usage.output_tokens, prices.output_per_mtok),
        storage=storage_cost(usage.storage_token_seconds, contract),
    )


def bill_without_cache(usage: RequestUsage, contract: ContractTerms) -> Cost:
    """The bill of the same request with caching off: every prompt token at the input price."""
    prices = prices_for(contract, usage.input_tokens, usage.timestamp)
    nothing = Decimal(0)
    return Cost(
        input=_per_mtok(usage.input_tokens, prices.input_per_mtok),
        cache_write=nothing,
        cache_read=nothing,
        output=_per_mtok(usage.output_tokens, prices.output_per_mtok),
        storage=nothing,
    )


def discounted(cost: Cost, term: BatchTerm | None) -> Cost:
    """``cost`` as billed under a batch (or flex) ``term``: each part the term discounts times
    its ``price_ratio`` (ratio x the contract's price, token for token, since every part is
    tokens x price), the others and storage unchanged. ``term`` None: ``cost`` itself."""
    if term is None:
        return cost
    ratio = term.price_ratio

    def part(amount: Decimal, token_class: TokenClass) -> Decimal:
        if not term.discounts(token_class):
            return amount
        with localcontext(EXACT):
            return amount * ratio

    return Cost(
        input=part(cost.input, TokenClass.INPUT),
        cache_write=part(cost.cache_write, TokenClass.CACHE_WRITE),
        cache_read=part(cost.cache_read, TokenClass.CACHE_READ),
        output=part(cost.output, TokenClass.OUTPUT),
        storage=cost.storage,
    )


def add_costs(left: Cost, right: Cost) -> Cost:
    """``left + right`` in the trapping context (the default context would round at 28 digits)."""
    with localcontext(EXACT):
        return left + right


def money(amount: Decimal) -> str:
    """An exact amount as a plain decimal string: every digit kept, no exponent, no trailing
    zeros ("0.0016", "1.25", "0.00000000125"), so equal amounts print equally."""
    text = format(amount.normalize(EXACT), "f")
    return "0" if text in ("-0", "0") else text


def cost_strings(cost: Cost) -> dict[str, str]:
    """A bill's parts and total as ``money`` strings (the JSON form)."""
    with localcontext(EXACT):
        total = cost.total
    return {
        "input": money(cost.input),
        "cache_write": money(cost.cache_write),
        "cache_read": money(cost.cache_read),
        "output": money(cost.output),
        "storage": money(cost.storage),
        "total": money(total),
    }


# ---------------------------------------------------------------------------------------------
# Observed usage: what the provider reported, as a RequestUsage we can bill and compare.


def total_input_tokens(
    reported_input_tokens: int,
    cache_read_tokens: int,
    cache_write_tokens: int,
    *,
    reported_input_includes_cached: bool,
) -> int:
    """The whole prompt length from a provider's own usage numbers.

    OpenAI-style ``prompt_tokens`` already include cached (read and written) tokens;
    Anthropic-style ``input_tokens`` count only the tokens after the last breakpoint, so the
    total is ``input + cache_read + cache_creation``. Getting this wrong is the most common
    cause of wrong cache bills (docs/billing.md).
    """
    if min(reported_input_tokens, cache_read_tokens, cache_write_tokens) < 0:
        raise BillingError("usage token counts must not be negative")
    if reported_input_includes_cached:
        if cache_read_tokens + cache_write_tokens > reported_input_tokens:
            raise BillingError(
                f"reported input {reported_input_tokens} includes cached tokens but is smaller"
                f" than read {cache_read_tokens} + written {cache_write_tokens}"
            )
        return reported_input_tokens
    return reported_input_tokens + cache_read_tokens + cache_write_tokens


def usage_from_observed(
    observed: ObservedUsage,
    contract: ContractTerms,
    *,
    request_id: str,
    line: int,
    timestamp: float,
    scope: str,
    fallback_input_tokens: int,
    fallback_output_tokens: int,
) -> RequestUsage:
    """The usage a provider reported, as a ``RequestUsage`` billable under ``contract``.

    ``observed.input_tokens`` is already the *total* prompt (the tokenizers normalise it, see
    ``ObservedUsage``); fields the provider did not report fall back to our own counts
    (input, output) or to zero (read, written): a usage without a cache-read field is billed
    as the whole reported prompt at the input price, its reads (if any) unknown
    (``simulator.reconcile`` judges no read of it). Written tokens without a TTL split are
    attributed to the contract's default TTL option; under a contract that offers no caching
    they are uncached input (there is no write price).
    """
    input_tokens = (
        observed.input_tokens if observed.input_tokens is not None else fallback_input_tokens
    )
    output_tokens = (
        observed.output_tokens if observed.output_tokens is not None else fallback_output_tokens
    )
    read = observed.cache_read_tokens or 0  # not reported: billed as uncached input
    default_ttl = contract.default_ttl
    if default_ttl is None:
        # No caching offered (mode none): written tokens are billed as the input they are;
        # reads cost the input price too (read_multiplier 1). Reconciliation disputes them.
        writes = {}
    elif observed.cache_write_by_ttl:
        writes = {name: tokens for name, tokens in observed.cache_write_by_ttl.items() if tokens}
    elif observed.cache_write_tokens:
        writes = {default_ttl.name: observed.cache_write_tokens}
    else:
        writes = {}
    uncached = input_tokens - read - sum(writes.values())
    if uncached < 0:
        raise BillingError(
            f"request {request_id} (line {line}): observed read {read} + written"
            f" {sum(writes.values())} exceed the observed prompt of {input_tokens} tokens"
        )
    return RequestUsage(
        request_id=request_id,
        line=line,
        timestamp=timestamp,
        scope=scope,
        input_tokens=input_tokens,
        output_tokens=output_tokens,
        cache_read_tokens=read,
        cache_write_tokens=writes,
        uncached_input_tokens=uncached,
    )


def bill_observed(observed: ObservedUsage, contract: ContractTerms, usage: RequestUsage) -> Cost:
    """The bill of what the provider reported: ``usage`` (``usage_from_observed``) billed as
    one request, or, where the request sampled several times (Anthropic compaction's
    ``usage.iterations``), the sum of each iteration billed as its own request: long-context
    tiers apply to each iteration's own prompt, never to their sum."""
    if not observed.iterations:
        return bill_request(usage, contract)
    total: Cost | None = None
    for index, part in enumerate(observed.iterations):
        cost = bill_request(
            usage_from_observed(
                part,
                contract,
                request_id=f"{usage.request_id} iteration {index}",
                line=usage.line,
                timestamp=usage.timestamp,
                scope=usage.scope,
                fallback_input_tokens=0,
                fallback_output_tokens=0,
            ),
            contract,
        )
        total = cost if total is None else add_costs(total, cost)
    assert total is not None
    return total


# ---------------------------------------------------------------------------------------------
# Totals over a run.


@dataclass(slots=True)
class BillTotals:
    """Running totals of token counts and bills for one target; constant memory."""

    requests: int = 0
    input_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: dict[str, int] = field(default_factory=dict)
    uncached_input_tokens: int = 0
    output_tokens: int = 0
    storage_token_seconds: int = 0
    exact_tokens: bool = True
    cost: Cost = field(default_factory=Cost.zero)
    cost_without_cache: Cost = field(default_factory=Cost.zero)

    def add(self, usage: RequestUsage, cost: Cost, cost_without_cache: Cost, exact: bool) -> None:
        self.requests += 1
        self.input_tokens += usage.input_tokens
        self.cache_read_tokens += usage.cache_read_tokens
        for name, tokens in usage.cache_write_tokens.items():
            self.cache_write_tokens[name] = self.cache_write_tokens.get(name, 0) + tokens
        self.uncached_input_tokens += usage.uncached_input_tokens
        self.output_tokens += usage.output_tokens
        self.storage_token_seconds += usage.storage_token_seconds
        self.exact_tokens = self.exact_tokens and exact
        self.cost = add_costs(self.cost, cost)
        self.cost_without_cache = add_costs(self.cost_without_cache, cost_without_cache)

    @property
    def cache_write_total(self) -> int:
        return sum(self.cache_write_tokens.values())

    @property
    def hit_rate(self) -> float:
        """Prompt tokens read from cache / all prompt tokens (0.0 for an empty run)."""
        return self.cache_read_tokens / self.input_tokens if self.input_tokens else 0.0

    @property
    def savings(self) -> Decimal:
        """Bill with caching off minus bill with caching (negative when writes cost more)."""
        with localcontext(EXACT):
            return self.cost_without_cache.total - self.cost.total
