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

from cachecast.contracts import ContractStore, UnknownContractError
from cachecast.contracts.model import CacheMode, ContractTerms
from cachecast.simulator.billing import (
    EXACT,
    BillTotals,
    bill_request,
    bill_without_cache,
    cost_strings,
    money,
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

    def fresh(self) -> TargetTotals:
        """Empty totals for the same target (a partition's starting point)."""
        return TargetTotals(self.target, self.contract, self.tokenizer)

    def merge(self, other: TargetTotals) -> None:
        """Add ``other``'s totals (same target, another part of the log): every field is a
        sum, money in billing's trapping context (the default one would round silently)."""
        with localcontext(EXACT):
            _add_fields(self.totals, other.totals)
            _add_fields(self.reconciliation, other.reconciliation)
        self.requests_with_breakpoints += other.requests_with_breakpoints
        self.assumed_breakpoint = self.assumed_breakpoint or other.assumed_breakpoint


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
) -> None:
    """Feed one ordered request stream to every target's policy, billing as it goes.

    ``progress`` gets the number of requests replayed since its last call (every
    :data:`PROGRESS_EVERY`, and once at the end)."""
    policies = [target_policy(result, auto_cache_control) for result in results]
    pending = 0
    for request in requests:
        for result, policy in zip(results, policies, strict=True):
            usage = policy.process(request)
            contract = result.contract
            cost = bill_request(usage, contract)
            cost_off = bill_without_cache(usage, contract)
            result.totals.add(usage, cost, cost_off, request.exact)
            result.requests_with_breakpoints += bool(request.breakpoints)
            reconciled = None
            if request.observed is not None and matcher.served_by(request, contract):
                reconciled = reconcile_request(usage, request.observed, contract, cost)
                result.reconciliation.add(reconciled)
            if per_request is not None:
                per_request(
                    PerRequestRow(result.target, request, usage, cost, cost_off, reconciled)
                )
        pending += 1
        if progress is not None and pending >= PROGRESS_EVERY:
            progress(pending)
            pending = 0
    if progress is not None and pending:
        progress(pending)


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
