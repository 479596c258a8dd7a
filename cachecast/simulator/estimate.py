"""``estimate``: what a prompt log costs under several providers' dated caching contracts.

For every target (provider, model) the contract in force on ``at`` is looked up in the
contract store (``at`` defaults to today, UTC). The same contract applies to every request of
the log whatever the request's own date: the question answered is "what would this traffic
cost under the terms in force on ``at``". Each target gets its own cache policy, chosen from
its contract by ``policy_for_contract``, replays the log in timestamp order, and every request
is billed exactly (``billing.bill_request``).

The log is tokenized once per distinct tokenizer, not once per target: targets whose models
share a tokenizer (gpt-4o and gpt-5.x both use o200k_base) are fed from one pass, request by
request in lockstep, so memory stays bounded by the reorder window whatever the log size.

Where a request carries the usage its provider reported and the target is that provider's
model, the prediction is reconciled against it (``reconcile``).
"""

from __future__ import annotations

import datetime as dt
import difflib
import heapq
import itertools
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

from cachecast.contracts import ContractStore, UnknownContractError
from cachecast.contracts.model import ContractTerms
from cachecast.simulator import policy_for_contract
from cachecast.simulator.billing import BillTotals, bill_request, bill_without_cache
from cachecast.simulator.reconcile import (
    ReconciledRequest,
    ReconciliationSummary,
    reconcile_request,
)
from cachecast.simulator.types import Cost, RequestUsage
from cachecast.tokenizers import LogError, get_tokenizer, read_log
from cachecast.tokenizers.types import TokenizedRequest

HIT_RATE_DEFINITION = (
    "cache_read_tokens / input_tokens (prompt tokens read from cache, all targets)"
)
# Requests may be slightly out of timestamp order within a file (concurrent writers); they are
# reordered within this many requests, and anything later than that is an error, never a
# silent reorder of the cache's history.
REORDER_WINDOW = 4096
PROGRESS_EVERY = 64


class TargetError(ValueError):
    """A ``PROVIDER:MODEL`` target that is malformed or names no known contract."""

    def __init__(self, message: str, close_matches: Sequence[str] = ()) -> None:
        super().__init__(message)
        self.close_matches = list(close_matches)


class OrderError(ValueError):
    """A request whose timestamp is earlier than one already replayed (beyond the window)."""


@dataclass(frozen=True, slots=True)
class Target:
    """One provider model to price the log against."""

    provider: str
    model: str

    @classmethod
    def parse(cls, text: str) -> Target:
        provider, sep, model = text.strip().partition(":")
        if not sep or not provider.strip() or not model.strip():
            raise TargetError(f"target {text!r} is not PROVIDER:MODEL (e.g. openai:gpt-4o)")
        return cls(provider.strip().lower(), model.strip().lower())

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
        record.update({f"cost_{name}": value for name, value in self.cost.as_strings().items()})
        record["cost_without_cache"] = str(self.cost_without_cache.total)
        reconciled = self.reconciled
        record["observed_cache_read_tokens"] = reconciled.observed_read if reconciled else None
        record["observed_cache_write_tokens"] = reconciled.observed_write if reconciled else None
        record["observed_cost"] = str(reconciled.observed_cost) if reconciled else None
        return record


@dataclass(slots=True)
class TargetResult:
    """Totals of one target over the whole log."""

    target: Target
    contract: ContractTerms
    tokenizer: str
    totals: BillTotals = field(default_factory=BillTotals)
    reconciliation: ReconciliationSummary = field(default_factory=ReconciliationSummary)

    def to_json(self) -> dict[str, Any]:
        totals = self.totals
        contract = self.contract
        return {
            "provider": self.target.provider,
            "model": self.target.model,
            "contract": contract_reference(contract),
            "tokenizer": self.tokenizer,
            "requests": totals.requests,
            "input_tokens": totals.input_tokens,
            "cache_read_tokens": totals.cache_read_tokens,
            "cache_write_tokens": totals.cache_write_total,
            "cache_write_tokens_by_ttl": dict(sorted(totals.cache_write_tokens.items())),
            "uncached_input_tokens": totals.uncached_input_tokens,
            "output_tokens": totals.output_tokens,
            "hit_rate": totals.hit_rate,
            "exact_tokens": totals.exact_tokens,
            "cost": totals.cost.as_strings(),
            "cost_without_cache": str(totals.cost_without_cache.total),
            "savings": str(totals.savings),
            "reconciliation": (
                self.reconciliation.to_json() if self.reconciliation.requests else None
            ),
        }


def contract_reference(contract: ContractTerms) -> dict[str, Any]:
    """Which dated contract version priced a result, and where its terms come from."""
    return {
        "version": f"{contract.provider}/{contract.model}@{contract.effective_from.isoformat()}",
        "provider": contract.provider,
        "model": contract.model,
        "effective_from": contract.effective_from.isoformat(),
        "effective_to": contract.effective_to.isoformat() if contract.effective_to else None,
        "verified_on": contract.verified_on.isoformat(),
        "source": contract.source,
        "mode": str(contract.mode),
        "input_per_mtok": str(contract.input_per_mtok),
        "output_per_mtok": str(contract.output_per_mtok),
        "read_multiplier": str(contract.read_multiplier),
        "ttl_options": [
            {
                "name": option.name,
                "ttl_seconds": option.ttl_seconds,
                "refresh_on_hit": option.refresh_on_hit,
                "write_multiplier": str(option.write_multiplier),
            }
            for option in contract.ttl_options
        ],
    }


@dataclass(slots=True)
class EstimateReport:
    """Everything ``cachecast estimate`` prints."""

    at: dt.date
    targets: list[TargetResult]
    sources: list[str]
    errors: list[LogError]

    @property
    def skipped_lines(self) -> int:
        return len({(error.file, error.line) for error in self.errors})

    def to_json(self) -> dict[str, Any]:
        return {
            "at": self.at.isoformat(),
            "hit_rate_definition": HIT_RATE_DEFINITION,
            "sources": self.sources,
            "skipped_lines": self.skipped_lines,
            "errors": [
                {"file": str(e.file), "line": e.line, "field": e.field, "reason": e.reason}
                for e in self.errors
            ],
            "targets": [result.to_json() for result in self.targets],
        }


def resolve_targets(
    targets: Sequence[Target], store: ContractStore, at: dt.date
) -> list[ContractTerms]:
    """The contract in force on ``at`` for each target; ``TargetError`` with close matches."""
    contracts = []
    for target in targets:
        try:
            contracts.append(store.as_of(target.provider, target.model, at))
        except UnknownContractError as error:
            close = list(error.close_matches)
            if not close:
                known = [f"{p}:{m}" for p, m in store.known_models()]
                close = difflib.get_close_matches(str(target), known, n=5, cutoff=0.4)
            raise TargetError(f"{target}: {error}", close) from error
    return contracts


def estimate(
    sources: Sequence[Path] | Iterable[TokenizedRequest],
    targets: list[Target],
    at: dt.date | None,
    store: ContractStore,
    progress: Callable[[int], None] | None = None,
    *,
    strict: bool = False,
    per_request: Callable[[PerRequestRow], None] | None = None,
) -> EstimateReport:
    """Price ``sources`` (log files, or requests already tokenized) under every target.

    ``progress`` is called with the number of requests replayed since its last call (one
    pass per tokenizer group, so a log priced under two tokenizers counts its requests
    twice). ``per_request`` receives every billed request of every target, in replay order.
    Bad log lines are collected in the report (``strict`` raises the first instead).
    """
    if not targets:
        raise TargetError("give at least one target PROVIDER:MODEL")
    day = at or dt.datetime.now(dt.UTC).date()
    contracts = resolve_targets(targets, store, day)
    errors: list[LogError] = []
    results: list[TargetResult] = []
    paths = _as_paths(sources)
    if paths is not None:
        groups: dict[str, list[int]] = {}
        for index, target in enumerate(targets):
            groups.setdefault(get_tokenizer(target.model).name, []).append(index)
        for tokenizer_name, indices in groups.items():
            lead = targets[indices[0]]
            seen_errors = len(errors)
            pass_errors: list[LogError] = []
            streams = [
                read_log(
                    path,
                    model=lead.model,
                    provider=lead.provider,
                    strict=strict,
                    errors=pass_errors,
                )
                for path in paths
            ]
            group_results = [
                TargetResult(targets[i], contracts[i], tokenizer_name) for i in indices
            ]
            _replay(_time_ordered(streams), group_results, store, day, progress, per_request)
            # Every pass reads the same lines; keep each bad line once.
            if seen_errors == 0:
                errors.extend(pass_errors)
            results.extend(group_results)
        order = {target: position for position, target in enumerate(targets)}
        results.sort(key=lambda result: order[result.target])
    else:
        pretokenized = cast(Iterable[TokenizedRequest], sources)
        group_results = [
            TargetResult(target, contract, "as given")
            for target, contract in zip(targets, contracts, strict=True)
        ]
        _replay(
            _time_ordered([iter(pretokenized)]), group_results, store, day, progress, per_request
        )
        results = group_results
    return EstimateReport(
        at=day,
        targets=results,
        sources=[str(path) for path in paths] if paths is not None else ["<requests>"],
        errors=errors,
    )


def _as_paths(sources: Sequence[Path] | Iterable[TokenizedRequest]) -> list[Path] | None:
    """The log files when ``sources`` names files; None when it holds tokenized requests."""
    if not isinstance(sources, Sequence):
        return None
    paths = [Path(source) for source in sources if isinstance(source, (str, Path))]
    return paths if len(paths) == len(sources) else None


def _replay(
    requests: Iterator[TokenizedRequest],
    results: list[TargetResult],
    store: ContractStore,
    day: dt.date,
    progress: Callable[[int], None] | None,
    per_request: Callable[[PerRequestRow], None] | None,
) -> None:
    """Feed one ordered request stream to every target's policy, billing as it goes."""
    policies = [policy_for_contract(result.contract) for result in results]
    matcher = _ObservedMatcher(store, day)
    pending = 0
    for request in requests:
        for result, policy in zip(results, policies, strict=True):
            usage = policy.process(request)
            contract = result.contract
            cost = bill_request(usage, contract)
            cost_off = bill_without_cache(usage, contract)
            result.totals.add(usage, cost, cost_off, request.exact)
            reconciled = None
            if request.observed is not None and matcher.same_model(request, contract):
                reconciled = reconcile_request(usage, request.observed, contract)
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


class _ObservedMatcher:
    """Decides whether a request's observed usage came from the target's own model."""

    def __init__(self, store: ContractStore, day: dt.date) -> None:
        self._store = store
        self._day = day
        self._resolved: dict[tuple[str, str], str | None] = {}

    def same_model(self, request: TokenizedRequest, contract: ContractTerms) -> bool:
        if request.provider is None or request.provider.lower() != contract.provider:
            return False
        if request.model is None:
            return True  # the log names no model: the provider's usage is the best evidence
        key = (contract.provider, request.model.lower())
        if key not in self._resolved:
            try:
                self._resolved[key] = self._store.as_of(*key, self._day).model
            except UnknownContractError:
                self._resolved[key] = None
        return self._resolved[key] == contract.model


def _time_ordered(streams: Sequence[Iterator[TokenizedRequest]]) -> Iterator[TokenizedRequest]:
    """Merge per-file streams by timestamp, reordering within ``REORDER_WINDOW`` requests.

    Ties keep the order in which requests were read. A request that would have to be replayed
    before one already replayed raises ``OrderError`` naming it: replaying it late would give
    the cache a false history.
    """
    sequence = itertools.count()
    merged = heapq.merge(
        *(
            ((request.timestamp, next(sequence), request) for request in stream)
            for stream in streams
        )
    )
    window: list[tuple[float, int, TokenizedRequest]] = []
    last_timestamp = float("-inf")
    for item in itertools.chain(merged, itertools.repeat(None, REORDER_WINDOW + 1)):
        if item is not None:
            heapq.heappush(window, item)
            if len(window) <= REORDER_WINDOW:
                continue
        if not window:
            return
        timestamp, _, request = heapq.heappop(window)
        if timestamp < last_timestamp:
            raise OrderError(
                f"{request.source}:{request.line}: timestamp {timestamp} is earlier than a"
                f" request already replayed ({last_timestamp}): more than {REORDER_WINDOW}"
                " requests out of order"
            )
        last_timestamp = timestamp
        yield request


# ---------------------------------------------------------------------------------------------
# The per-request table (``--per-request FILE``).

PER_REQUEST_FORMATS = (".csv", ".parquet")
_COLUMN_TYPES: dict[str, str] = {
    "target": "string",
    "source": "string",
    "line": "int64",
    "request_id": "string",
    "timestamp": "float64",
    "scope": "string",
    "exact_tokens": "bool",
    "input_tokens": "int64",
    "cache_read_tokens": "int64",
    "cache_write_tokens": "int64",
    "cache_write_by_ttl": "string",
    "uncached_input_tokens": "int64",
    "output_tokens": "int64",
    "cost_input": "string",
    "cost_cache_write": "string",
    "cost_cache_read": "string",
    "cost_output": "string",
    "cost_storage": "string",
    "cost_total": "string",
    "cost_without_cache": "string",
    "observed_cache_read_tokens": "Int64",
    "observed_cache_write_tokens": "Int64",
    "observed_cost": "string",
}


class PerRequestTable:
    """Writes billed requests with pandas in chunks, so memory stays bounded.

    CSV by appending each chunk; Parquet as one row group per chunk. Money columns are exact
    decimal strings: a float column would round them.
    """

    def __init__(self, path: Path, chunk_rows: int = 20_000) -> None:
        suffix = path.suffix.lower()
        if suffix not in PER_REQUEST_FORMATS:
            raise ValueError(
                f"--per-request {path}: use a .csv or .parquet file name, not {suffix!r}"
            )
        self.path = path
        self.rows_written = 0
        self._parquet = suffix == ".parquet"
        self._chunk_rows = chunk_rows
        self._buffer: list[dict[str, Any]] = []
        self._writer: Any = None
        path.unlink(missing_ok=True)

    def __call__(self, row: PerRequestRow) -> None:
        self._buffer.append(row.as_record())
        if len(self._buffer) >= self._chunk_rows:
            self._flush()

    def _flush(self) -> None:
        import pandas as pd

        frame = pd.DataFrame(self._buffer, columns=list(_COLUMN_TYPES)).astype(_COLUMN_TYPES)
        self._buffer = []
        if self._parquet:
            import pyarrow as pa
            import pyarrow.parquet as pq

            table = pa.Table.from_pandas(frame, preserve_index=False)
            if self._writer is None:
                self._writer = pq.ParquetWriter(self.path, table.schema)
            self._writer.write_table(table)
        else:
            frame.to_csv(self.path, mode="a", header=self.rows_written == 0, index=False)
        self.rows_written += len(frame)

    def close(self) -> None:
        if self._buffer or self.rows_written == 0:
            self._flush()
        if self._writer is not None:
            self._writer.close()
            self._writer = None

    def __enter__(self) -> PerRequestTable:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()
