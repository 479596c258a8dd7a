"""Priced replay: one ordered request stream through every target's cache policy, billed.

This is the matcher -> usage -> bill step of the pipeline for a set of hosted targets that
share one tokenization of the log. Each target's contract picks its cache policy
(``policy_for_contract``); every request is billed exactly (``billing.bill_request``) and
added to the target's running totals, which use constant memory whatever the log size.
Where a request carries the usage its provider reported and the target is the model that
served it, the prediction is reconciled against it (``reconcile``).

Totals are sums, so partial totals (one per partition of a distributed run) merge exactly in
any order (:meth:`TargetTotals.merge`).
"""

from __future__ import annotations

import dataclasses
import datetime as dt
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from decimal import Decimal, localcontext
from typing import Any

from cachecast.contracts import ContractStore
from cachecast.contracts.batch_terms import TIERS, BatchTerm, TokenClass, term_for
from cachecast.contracts.model import CacheMode, ContractTerms, derived_per_mtok
from cachecast.core.errors import UnknownContractError
from cachecast.logs.canonical import service_tier_note
from cachecast.simulator.billing import (
    EPOCH_FLOOR,
    EXACT,
    BillTotals,
    RequestPrices,
    bill_request,
    bill_without_cache,
    cost_strings,
    discounted,
    money,
    prices_for,
)
from cachecast.simulator.misses import (
    HISTORY_BLOCK_TOKENS,
    MissSpan,
    PromptHistory,
    Sight,
    spans_total,
)
from cachecast.simulator.policies import CachePolicy, policy_for_contract
from cachecast.simulator.reconcile import (
    ReconciledRequest,
    ReconciliationSummary,
    reconcile_request,
)
from cachecast.simulator.types import Cost, RequestUsage
from cachecast.tokenizers.types import TokenizedRequest

PROGRESS_EVERY = 64
TIMELINE_WIDTHS = (1, 60, 3600, 86400, 7 * 86400)
"""Seconds per timeline bucket: the finest that keeps at most :data:`TIMELINE_BUCKETS`."""
TIMELINE_BUCKETS = 4096
_MILLION = Decimal(1_000_000)


@dataclass(frozen=True, slots=True)
class Target:
    """One provider model to price the log against (ids lower-cased)."""

    provider: str
    model: str

    def __str__(self) -> str:
        return f"{self.provider}:{self.model}"


@dataclass(frozen=True, slots=True)
class PerRequestRow:
    """One request billed under one target; what ``--per-request`` writes."""

    target: Target
    request: TokenizedRequest
    usage: RequestUsage
    cost: Cost
    cost_without_cache: Cost
    reconciled: ReconciledRequest | None
    misses: tuple[MissSpan, ...] = ()

    def as_record(self) -> dict[str, Any]:
        """A flat row; money as exact decimal strings (a float column would round)."""
        record: dict[str, Any] = {
            "target": str(self.target),
            "source": self.request.source,
            "line": self.request.line,
            "request_id": self.request.request_id,
            "timestamp": self.request.timestamp,
            "scope": self.request.scope,
            "exact_tokens": self.request.exact,
            "input_tokens": self.usage.input_tokens,
            "cache_read_tokens": self.usage.cache_read_tokens,
            "cache_write_tokens": self.usage.cache_write_total,
            "cache_write_by_ttl": ",".join(
                f"{name}={tokens}" for name, tokens in sorted(self.usage.cache_write_tokens.items())
            ),
            "uncached_input_tokens": self.usage.uncached_input_tokens,
            "output_tokens": self.usage.output_tokens,
        }
        record.update({f"cost_{name}": value for name, value in cost_strings(self.cost).items()})
        record["cost_without_cache"] = money(self.cost_without_cache.total)
        reconciled = self.reconciled
        record["observed_cache_read_tokens"] = reconciled.observed_read if reconciled else None
        record["observed_cache_write_tokens"] = reconciled.observed_write if reconciled else None
        record["observed_cost"] = money(reconciled.observed_cost) if reconciled else None
        record["miss_causes"] = ";".join(f"{span.cause}={span.tokens}" for span in self.misses)
        record["miss_details"] = " | ".join(
            f"{span.cause}@{span.start}: {span.detail}" for span in self.misses if span.detail
        )
        return record

    def slim(self) -> PerRequestRow:
        """The row without the prompt's tokens (the table needs only the request's identity):
        what a distributed worker ships back."""
        request = dataclasses.replace(
            self.request, tokens=None, block_keys=None, segments=(), prompt_keys=None
        )
        return dataclasses.replace(self, request=request)


@dataclass(slots=True)
class TargetTotals:
    """Running totals of one target over the requests replayed so far."""

    target: Target
    contract: ContractTerms
    tokenizer: str
    totals: BillTotals = field(default_factory=BillTotals)
    reconciliation: ReconciliationSummary = field(default_factory=ReconciliationSummary)
    requests_with_breakpoints: int = 0
    # Set when an explicit-breakpoint contract was simulated as if every request ended its
    # latest message with a breakpoint (Anthropic's top-level automatic cache_control).
    assumed_breakpoint: str | None = None
    # Prompt tokens not read from cache by (cause, long-context tier threshold or 0, the
    # ratio the request's batch or flex term bills input at, the ratio it bills reads at;
    # both 1 on demand): what reading them would have saved is priced from these at the end
    # (``miss_cost``), at the prices the request was billed at.
    miss_tokens_by_tier: dict[tuple[str, int, Decimal, Decimal], int] = field(default_factory=dict)
    # (bucket width in seconds, bucket index) -> sums over the requests in that bucket.
    timeline_requests: dict[tuple[int, int], int] = field(default_factory=dict)
    timeline_input: dict[tuple[int, int], int] = field(default_factory=dict)
    timeline_read: dict[tuple[int, int], int] = field(default_factory=dict)
    # Assumptions the policy made, with the number of requests each concerned.
    notes: dict[str, int] = field(default_factory=dict)
    skipped_cache_objects: int = 0  # cache creations not billed under this contract
    # The batch and flex terms of the target's provider (``contracts.batch_terms``): a request
    # served under one of those tiers is billed under the term in force on ``priced_on``
    # (the day the contract was taken for, as estimate's --at) or else on its own UTC day.
    tier_terms: tuple[BatchTerm, ...] = ()
    priced_on: dt.date | None = None

    def add_misses(
        self, spans: list[MissSpan], usage: RequestUsage, term: BatchTerm | None = None
    ) -> None:
        """Count the spans by cause, by the price tier of the request and by the ratios its
        batch or flex ``term`` bills input and cache reads at (docs/contracts.md, "Batch
        terms"; 1 where the term does not discount the class, or there is no term)."""
        tier = 0
        for threshold in self._tier_thresholds:
            if usage.input_tokens > threshold:
                tier = threshold
        one = Decimal(1)
        input_ratio = term.price_ratio if term and term.discounts(TokenClass.INPUT) else one
        read_ratio = term.price_ratio if term and term.discounts(TokenClass.CACHE_READ) else one
        counts = self.miss_tokens_by_tier
        for span in spans:
            key = (span.cause, tier, input_ratio, read_ratio)
            counts[key] = counts.get(key, 0) + span.tokens

    @property
    def _tier_thresholds(self) -> tuple[int, ...]:
        return tuple(tier.above_input_tokens for tier in self.contract.long_context_tiers)

    @property
    def miss_tokens(self) -> dict[str, int]:
        """Prompt tokens not read from cache, by cause."""
        found: dict[str, int] = {}
        for (cause, *_), tokens in self.miss_tokens_by_tier.items():
            found[cause] = found.get(cause, 0) + tokens
        return found

    @property
    def miss_cost(self) -> dict[str, Decimal]:
        """What reading the tokens of each cause would have saved: their tokens at the input
        price in force for their requests (long-context tiers included), less the read
        price, each at the ratio the request's batch or flex term bills it at (a batch
        request's miss costs what its bill would have dropped by, not the on-demand
        difference)."""
        contract = self.contract
        found: dict[str, Decimal] = {}
        with localcontext(EXACT):
            for (cause, tier, input_ratio, read_ratio), tokens in self.miss_tokens_by_tier.items():
                price = prices_for(contract, tier + 1 if tier else 0).input_per_mtok
                read_price = derived_per_mtok(price, contract.read_multiplier)
                # Never below nothing: a term that halves input but not reads (Vertex's, or a
                # contract without caching, read multiplier 1) makes a read no cheaper.
                saved_per_mtok = max(price * input_ratio - read_price * read_ratio, Decimal(0))
                lost = Decimal(tokens) * saved_per_mtok / _MILLION
                found[cause] = found.get(cause, Decimal(0)) + lost
        return found

    def add_timeline(self, usage: RequestUsage) -> None:
        """Add the request to its timeline bucket (buckets coarsen as the log spans more)."""
        width = TIMELINE_WIDTHS[0]
        for key in self.timeline_requests:
            width = max(width, key[0])
            break
        key = (width, int(usage.timestamp // width))
        self.timeline_requests[key] = self.timeline_requests.get(key, 0) + 1
        self.timeline_input[key] = self.timeline_input.get(key, 0) + usage.input_tokens
        self.timeline_read[key] = self.timeline_read.get(key, 0) + usage.cache_read_tokens
        if len(self.timeline_requests) > TIMELINE_BUCKETS and width != TIMELINE_WIDTHS[-1]:
            coarser = TIMELINE_WIDTHS[TIMELINE_WIDTHS.index(width) + 1]
            for name in ("timeline_requests", "timeline_input", "timeline_read"):
                merged: dict[tuple[int, int], int] = {}
                for (old_width, index), value in getattr(self, name).items():
                    new_key = (coarser, index * old_width // coarser)
                    merged[new_key] = merged.get(new_key, 0) + value
                setattr(self, name, merged)

    def fresh(self) -> TargetTotals:
        """Empty totals for the same target (a partition's starting point)."""
        return TargetTotals(
            self.target,
            self.contract,
            self.tokenizer,
            tier_terms=self.tier_terms,
            priced_on=self.priced_on,
        )

    def merge(self, other: TargetTotals) -> None:
        """Add ``other``'s totals (same target, another part of the log): every field is a
        sum, money in billing's trapping context (the default one would round silently)."""
        with localcontext(EXACT):
            _add_fields(self.totals, other.totals)
            _add_fields(self.reconciliation, other.reconciliation)
        self.requests_with_breakpoints += other.requests_with_breakpoints
        self.assumed_breakpoint = self.assumed_breakpoint or other.assumed_breakpoint
        for name in (
            "miss_tokens_by_tier",
            "notes",
            "timeline_requests",
            "timeline_input",
            "timeline_read",
        ):
            _add_dict(getattr(self, name), getattr(other, name))
        self.skipped_cache_objects += other.skipped_cache_objects


def _add_dict(into: dict[Any, Any], other: dict[Any, Any]) -> None:
    for key, value in other.items():
        into[key] = into[key] + value if key in into else value


def _add_fields(into: Any, other: Any) -> None:
    """Field-wise sum of two running-total dataclasses (ints, Decimals, Costs, dicts, bools).

    Generic on purpose: a field added to the totals later merges without a change here, and
    a field of a kind that cannot be summed fails loudly instead of being dropped.
    """
    for spec in dataclasses.fields(into):
        mine, theirs = getattr(into, spec.name), getattr(other, spec.name)
        if isinstance(mine, bool):
            setattr(into, spec.name, mine and theirs)  # "all exact" style flags
        elif isinstance(mine, (int, Decimal, Cost)):
            setattr(into, spec.name, mine + theirs)
        elif isinstance(mine, dict):
            for name, value in theirs.items():
                mine[name] = mine.get(name, 0) + value
        else:
            raise TypeError(f"cannot merge field {spec.name} of type {type(mine).__name__}")


def target_policy(result: TargetTotals, auto_cache_control: bool) -> CachePolicy:
    """The cache policy a target's contract implies (with an assumed breakpoint at the
    end of the latest message when ``auto_cache_control`` and the contract is explicit)."""
    if auto_cache_control and result.contract.mode is CacheMode.EXPLICIT:
        result.assumed_breakpoint = "end of the latest message"
        return policy_for_contract(result.contract, implicit_last_message=True)
    return policy_for_contract(result.contract)


def replay_targets(
    requests: Iterator[TokenizedRequest],
    results: list[TargetTotals],
    matcher: ObservedModelMatcher,
    progress: Callable[[int], None] | None,
    per_request: Callable[[PerRequestRow], None] | None,
    auto_cache_control: bool,
    *,
    explain: bool = True,
) -> None:
    """Feed one ordered request stream to every target's policy, billing as it goes.

    ``progress`` gets the number of requests replayed since its last call (every
    :data:`PROGRESS_EVERY`, and once at the end). ``explain``: attribute every request's
    tokens not read from cache to their causes (``simulator.misses``)."""
    policies = [target_policy(result, auto_cache_control) for result in results]
    history = PromptHistory(opening_tokens=history_unit(policies)) if explain else None
    pending = 0
    for request in requests:
        sight = history.observe(request) if history is not None else None
        for result, policy in zip(results, policies, strict=True):
            price_request(request, result, policy, matcher, sight, per_request)
        pending += 1
        if progress is not None and pending >= PROGRESS_EVERY:
            progress(pending)
            pending = 0
    if progress is not None and pending:
        progress(pending)
    for result, policy in zip(results, policies, strict=True):
        for note, count in policy.notes.items():
            result.notes[note] = result.notes.get(note, 0) + count


def history_unit(policies: list[CachePolicy]) -> int:
    """The opening the prompt history relates prompts by: the replay's partition unit, so
    that a partitioned replay explains misses as one process does (``PromptHistory``)."""
    from cachecast.simulator.distributed.partition import CoupledCacheError, common_unit

    try:
        return common_unit(policies) if policies else HISTORY_BLOCK_TOKENS
    except CoupledCacheError:
        return HISTORY_BLOCK_TOKENS  # a shared capacity: no partitioning anyway


OFF_PEAK_NOTE = "billed at the off-peak prices (the request's UTC time is in a window)"
NO_TIME_NOTE = (
    "no wall-clock timestamp: billed at the base (peak) prices, off-peak windows not applied"
)


def _count_off_peak(result: TargetTotals, prices: RequestPrices) -> None:
    """Count, in the target's notes, the requests billed off-peak and those whose time
    was unknown (which pay the base prices)."""
    note = {True: OFF_PEAK_NOTE, None: NO_TIME_NOTE}.get(prices.off_peak)
    if note is not None:
        result.notes[note] = result.notes.get(note, 0) + 1


def _note_service_tier(
    result: TargetTotals, request: TokenizedRequest, term: BatchTerm | None
) -> None:
    """Count, in the target's notes, the requests billed under a batch term (the term's note:
    its tier, ratio, source and dates) and those served under a tier no term prices (billed
    at on-demand prices here, the tier's note)."""
    assert request.service_tier is not None
    note = (
        term.note if term is not None else service_tier_note(request.service_tier, request.provider)
    )
    if note is not None:
        result.notes[note] = result.notes.get(note, 0) + 1


def tier_term(request: TokenizedRequest, result: TargetTotals) -> BatchTerm | None:
    """The batch (or flex) term that prices ``request`` under the target's contract: one of
    the target's provider's terms for the request's tier, in force for the target's model on
    the day the contract was taken for, else the request's own UTC day (None: no term, or a
    request without a date and no such day)."""
    tier = request.service_tier
    if tier not in TIERS or not result.tier_terms:
        return None
    day = result.priced_on
    if day is None:
        if request.timestamp < EPOCH_FLOOR:
            return None
        day = dt.datetime.fromtimestamp(request.timestamp, dt.UTC).date()
    contract = result.contract
    return term_for(result.tier_terms, contract.provider, contract.model, tier, day)


IGNORED_NOTE = "optional usage field of an unexpected shape left out, the request read without it"


def _note_ignored(result: TargetTotals, request: TokenizedRequest) -> None:
    """Count, in the target's notes, each optional usage field the reader left out
    (``ObservedUsage.ignored``), by field and reason, naming the first file and line."""
    assert request.observed is not None
    for entry in request.observed.ignored:
        prefix = f"{entry} ({IGNORED_NOTE}; first at "
        key = next((note for note in result.notes if note.startswith(prefix)), None)
        if key is None:
            key = f"{prefix}{request.source}:{request.line})"
        result.notes[key] = result.notes.get(key, 0) + 1


def below_minimum_flagged(request: TokenizedRequest, contract: ContractTerms) -> TokenizedRequest:
    """``request`` with its usage marked contradictory where it reports cached tokens on a
    whole prompt shorter than the contract's ``min_cacheable_tokens``: every cached prefix is
    part of the prompt, so no prefix could have been cached (a hand-edited recording, or a
    term that is wrong). Like any contradictory usage it is listed, never billed from or
    reconciled (docs/log-formats.md, "Observations that contradict themselves"); the
    message names the term and the contract version, so a wrong minimum is still visible.
    A record that creates a cache object (Gemini ``cachedContents``) is left alone: the
    provider accepted that object, whose minimum may not be the contract's implicit one, so
    its size is evidence about the term, judged as such, not a contradiction. So is a request
    that reads such an object by name (``cachedContent``): its read is that accepted object,
    whose size the creation already showed, not an implicit prefix the minimum governs. A
    minimum the contract inferred from its family (``inferred_fields``) is no documented term,
    and an observation never contradicts a guess: such a request is reconciled as usual."""
    observed = request.observed
    minimum = contract.min_cacheable_tokens
    if (
        observed is None
        or observed.contradiction is not None
        or minimum <= 0
        or request.controls.creates is not None
        or request.controls.cached_content is not None
        or "min_cacheable_tokens" in contract.inferred_fields
    ):
        return request
    total = observed.input_tokens
    read, written = observed.cache_read_tokens or 0, observed.cache_write_tokens or 0
    if total is None or read + written == 0 or total >= minimum:
        return request
    why = (
        f"cache read {read} + write {written} reported on a prompt of {total} input tokens,"
        f" below {contract.provider}/{contract.model}@{contract.effective_from.isoformat()}"
        f" min_cacheable_tokens {minimum}"
    )
    return dataclasses.replace(request, observed=dataclasses.replace(observed, contradiction=why))


def price_request(
    request: TokenizedRequest,
    result: TargetTotals,
    policy: CachePolicy,
    matcher: ObservedModelMatcher,
    sight: Sight | None,
    per_request: Callable[[PerRequestRow], None] | None,
) -> PerRequestRow | None:
    """One request through one target's policy: billed, explained where ``sight`` is given
    (see :class:`PromptHistory`), reconciled where its usage is the target's own, added to
    the target's totals, and handed to ``per_request``. A record that only creates a cache
    object is skipped by a contract that has none (None is returned)."""
    if request.controls.creates is not None and not policy.bills_cache_objects:
        result.skipped_cache_objects += 1
        return None
    contract = result.contract
    request = below_minimum_flagged(request, contract)
    usage = policy.process(request)
    term = tier_term(request, result)
    cost = discounted(bill_request(usage, contract), term)
    cost_off = discounted(bill_without_cache(usage, contract), term)
    if contract.off_peak is not None:
        _count_off_peak(result, prices_for(contract, usage.input_tokens, usage.timestamp))
    result.totals.add(usage, cost, cost_off, request.exact)
    if request.observed is not None and request.observed.ignored:
        _note_ignored(result, request)
    if request.service_tier is not None:
        _note_service_tier(result, request, term)
    result.requests_with_breakpoints += bool(request.breakpoints)
    result.add_timeline(usage)
    spans: list[MissSpan] = []
    if sight is not None:
        spans = policy.explain(request, usage, sight)
        if spans_total(spans) != usage.input_tokens - usage.cache_read_tokens:
            raise AssertionError(
                f"request {request.request_id}: miss causes {spans} do not add up to"
                f" {usage.input_tokens - usage.cache_read_tokens} tokens not read"
            )
        result.add_misses(spans, usage, term)
    reconciled = None
    if (
        request.observed is not None
        and request.observed.contradiction is None  # (never reconciled: docs/log-formats.md)
        and matcher.served_by(request, contract)
    ):
        reconciled = reconcile_request(usage, request.observed, contract, cost, term)
        result.reconciliation.add(reconciled)
    row = PerRequestRow(result.target, request, usage, cost, cost_off, reconciled, tuple(spans))
    if per_request is not None:
        per_request(row)
    return row


class ObservedModelMatcher:
    """Decides whether a request's observed usage came from the target's own model.

    Usage reported by gpt-4o says nothing about what gpt-5.6 would have cached, so a target
    is reconciled only against requests its own provider served with a model that resolves
    to the same contract model (``TokenizedRequest.logged_model``: the model the log names,
    whatever model the pass tokenized the request as). A request whose log names no model
    is its provider's evidence.
    """

    def __init__(self, store: ContractStore, day: dt.date) -> None:
        self._store = store
        self._day = day
        self._resolved: dict[tuple[str, str], str | None] = {}

    def served_by(self, request: TokenizedRequest, contract: ContractTerms) -> bool:
        if request.provider is None or request.provider.lower() != contract.provider:
            return False
        logged = request.logged_model
        if logged is None:
            return True
        key = (contract.provider, logged.lower())
        if key not in self._resolved:
            try:
                self._resolved[key] = self._store.as_of(*key, self._day).model
            except UnknownContractError:
                self._resolved[key] = None
        return self._resolved[key] == contract.model
