"""Pricing the requests of agent sessions for the usage report (``usecases.usage``): the
contract of each (provider, model, day), looked up once; a request's observed usage as a
billable ``RequestUsage``; what its missed cached tokens cost above reads; and the what-if
scenarios (another TTL, another model or provider) on the same requests.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from decimal import Decimal, localcontext

from pydantic import Field

from cachecast.contracts.answers import ContractLookup
from cachecast.contracts.model import ContractTerms, derived_per_mtok
from cachecast.contracts.served import ServedContract
from cachecast.core.errors import CachecastError
from cachecast.sessions.causes import IDLE_GAP
from cachecast.sessions.profiles import ClientProfile
from cachecast.sessions.reading import TTL_1H, TTL_5M, SessionRequest
from cachecast.simulator.billing import EXACT, bill_request, bill_without_cache, prices_for
from cachecast.simulator.types import RequestUsage
from cachecast.usecases.reports import ContractReference, Money, Report

TTL_SECONDS = {TTL_5M: 300, TTL_1H: 3600}
ZERO = Decimal(0)


class WhatIf(Report):
    scenario: str = Field(description="'ttl 1h', 'target openai:gpt-5.6', ...")
    cost: Money
    cost_without_cache: Money
    difference: Money = Field(description="scenario cost - observed cost (on the same requests)")
    cache_read_tokens: int
    cache_write_tokens: int
    priced_requests: int
    unpriced_requests: int
    contracts: list[str] = Field(default_factory=list)


class ContractCache:
    """Contracts by (provider, model, day), looked up once each; misses remembered."""

    def __init__(self, store: ContractLookup) -> None:
        self.store = store
        self.found: dict[tuple[str, str, dt.date], ContractTerms | str] = {}
        self.used: dict[tuple[str, str, dt.date], ContractTerms] = {}
        self.served_found: dict[tuple[str, str, dt.date], ContractTerms | str] = {}
        self.notes: dict[str, None] = {}  # what was assumed to price a served model, in order

    def use(self, terms: ContractTerms) -> None:
        """``terms`` priced a request: its version is listed in the report."""
        self.used[(terms.provider, terms.model, terms.effective_from)] = terms

    def get(self, provider: str, model: str, day: dt.date) -> ContractTerms | str:
        """The version in force on ``day`` (a what-if target's)."""
        return self._cached(
            self.found,
            (provider, model, day),
            lambda: ServedContract(self.store.as_of(provider, model, day)),
        )

    def served(self, provider: str, model: str, day: dt.date) -> ContractTerms | str:
        """The version a request that ``model`` served on ``day`` is priced under
        (``contracts.served``: a model with no known launch date, logged before its first
        stored version, is priced under that version with a note)."""
        return self._cached(
            self.served_found,
            (provider, model, day),
            lambda: self.store.served(provider, model, day, dt.datetime.now(dt.UTC).date()),
        )

    def _cached(
        self,
        cache: dict[tuple[str, str, dt.date], ContractTerms | str],
        key: tuple[str, str, dt.date],
        ask: Callable[[], ServedContract],
    ) -> ContractTerms | str:
        """``cache``'s answer for ``key``, else the store's (``ask``): the terms (their note
        kept), or why there are none (unknown model, no version on that day)."""
        found = cache.get(key)
        if found is None:
            try:
                answer = ask()
            except CachecastError as error:
                found = error.message
            else:
                found = answer.terms
                if answer.note is not None:
                    self.notes[answer.note] = None
            cache[key] = found
        return found


def cacheable_minimum(
    store: ContractLookup, profile: ClientProfile, zone: dt.tzinfo
) -> Callable[[SessionRequest], int]:
    """The shortest prompt the provider caches for a request's model, from the contract the
    request is priced under (its day in ``zone``, as the report bills it; 0 where no
    contract): what ``predict_sessions`` holds a breakpoint's prediction to. Looked up apart
    from the report's :class:`ContractCache`, whose notes list only the requests billed."""
    found: dict[tuple[str, str, dt.date], int] = {}
    today = dt.datetime.now(dt.UTC).date()

    def minimum(each: SessionRequest) -> int:
        day = dt.datetime.fromtimestamp(each.facts.timestamp, zone).date() if each.dated else today
        key = (each.provider or profile.provider, each.facts.model, day)
        if key not in found:
            try:
                found[key] = store.served(*key, today).terms.min_cacheable_tokens
            except CachecastError:
                found[key] = 0
        return found[key]

    return minimum


def usage_of(call: SessionRequest, read: int, writes: dict[str, int]) -> RequestUsage:
    facts = call.facts
    written = sum(writes.values())
    return RequestUsage(
        request_id=facts.request_id,
        line=facts.line,
        timestamp=facts.timestamp,
        scope=facts.lineage,
        input_tokens=facts.prompt_tokens,
        output_tokens=call.observed.output,
        cache_read_tokens=read,
        cache_write_tokens={name: tokens for name, tokens in writes.items() if tokens},
        uncached_input_tokens=facts.prompt_tokens - read - written,
    )


def writes_of(call: SessionRequest) -> dict[str, int]:
    return {TTL_5M: call.write_5m, TTL_1H: call.write_1h}


def writes_on(contract: ContractTerms, writes: dict[str, int]) -> dict[str, int]:
    """Writes named by a TTL ``contract`` has, the others under its default option; none
    under a contract that offers no caching (the written tokens are plain input there)."""
    default_ttl = contract.default_ttl
    if default_ttl is None:
        return {}
    names = {option.name for option in contract.ttl_options}
    moved: dict[str, int] = {}
    for name, tokens in writes.items():
        if tokens:
            chosen = name if name in names else default_ttl.name
            moved[chosen] = moved.get(chosen, 0) + tokens
    return moved


def lost_of(call: SessionRequest, contract: ContractTerms, missed: int) -> Decimal:
    """What ``missed`` tokens cost above reads: each at the input price minus the cache read
    price, at the tier the whole prompt reaches (docs/usage-report.md)."""
    prices = prices_for(contract, call.facts.prompt_tokens)
    with localcontext(EXACT):
        read_price = derived_per_mtok(prices.input_per_mtok, prices.read_multiplier)
        return Decimal(missed) * (prices.input_per_mtok - read_price) / 1_000_000


class WhatIfSums:
    def __init__(self, scenario: str) -> None:
        self.scenario = scenario
        self.cost = ZERO
        self.plain = ZERO
        self.baseline = ZERO
        self.read = 0
        self.written = 0
        self.priced = 0
        self.unpriced = 0
        self.contracts: dict[tuple[str, str, dt.date], ContractTerms] = {}

    def report(self) -> WhatIf:
        with localcontext(EXACT):
            difference = self.cost - self.baseline
        return WhatIf.read(
            self,
            cost_without_cache=self.plain,
            difference=difference,
            cache_read_tokens=self.read,
            cache_write_tokens=self.written,
            priced_requests=self.priced,
            unpriced_requests=self.unpriced,
            contracts=sorted(ContractReference.of(t).version for t in self.contracts.values()),
        )


def ttl_split(
    call: SessionRequest, ttl: str, gap: float | None, cause: str | None, missed: int
) -> tuple[int, dict[str, int]]:
    """The reads and writes of ``call`` had every write been made with ``ttl`` (module doc)."""
    read = call.observed.read
    written = call.observed.write
    if gap is not None and gap > TTL_SECONDS[ttl]:
        written, read = written + read, 0  # expired under the shorter TTL: written again
    elif cause == IDLE_GAP and missed:
        moved = min(missed, written)  # the longer TTL would have kept it
        read, written = read + moved, written - moved
    return read, {ttl: written}


def add_to_scenario(
    scenario: WhatIfSums,
    call: SessionRequest,
    terms: ContractTerms,
    baseline: Decimal,
    loss: tuple[float | None, str | None, int],
    contracts: ContractCache,
    day: dt.date,
) -> None:
    """``call`` priced under ``scenario``; ``loss``: the idle gap before it (None: first of
    its lineage), the cause of its missed reads and their count."""
    gap, cause, missed = loss
    observed = call.observed
    if scenario.scenario.startswith("ttl "):
        ttl = scenario.scenario.removeprefix("ttl ")
        if not observed.write and not observed.read:
            read, writes = 0, dict[str, int]()
        elif {option.name for option in terms.ttl_options} >= {ttl}:
            read, writes = ttl_split(call, ttl, gap, cause, missed)
        else:
            read, writes = observed.read, writes_on(terms, writes_of(call))
        contract: ContractTerms | str = terms
    else:
        provider, _, model = scenario.scenario.removeprefix("target ").partition(":")
        contract = contracts.get(provider, model, day)
        read, writes = observed.read, writes_of(call)
    if not isinstance(contract, ContractTerms):
        scenario.unpriced += 1
        return
    if not contract.offers_caching:
        read, writes = 0, {}  # no caching offered: the whole prompt at the input price
    usage = usage_of(call, read, writes_on(contract, writes))
    with localcontext(EXACT):
        scenario.cost += bill_request(usage, contract).total
        scenario.plain += bill_without_cache(usage, contract).total
        scenario.baseline += baseline
    scenario.read += read
    scenario.written += usage.cache_write_total
    scenario.priced += 1
    scenario.contracts[(contract.provider, contract.model, contract.effective_from)] = contract
