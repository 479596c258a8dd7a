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
import json
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

from cachecast.contracts import ContractStore, UnknownContractError
from cachecast.contracts.model import CacheMode, ContractTerms
from cachecast.simulator import CachePolicy, policy_for_contract
from cachecast.simulator.billing import (
    BillTotals,
    bill_request,
    bill_without_cache,
    cost_strings,
    money,
)
from cachecast.simulator.ordering import DEFAULT_REORDER_WINDOW, OutOfOrderError, in_timestamp_order
from cachecast.simulator.reconcile import (
    ReconciledRequest,
    ReconciliationSummary,
    reconcile_request,
)
from cachecast.simulator.types import Cost, RequestUsage
from cachecast.tokenizers import LogError, UnknownModelError, get_tokenizer, read_log
from cachecast.tokenizers.types import TokenizedRequest

HIT_RATE_DEFINITION = (
    "cache_read_tokens / input_tokens (prompt tokens read from cache, all targets)"
)
PROGRESS_EVERY = 64


class TargetError(ValueError):
    """A ``PROVIDER:MODEL`` target that is malformed or names no known contract."""

    def __init__(self, message: str, close_matches: Sequence[str] = ()) -> None:
        super().__init__(message)
        self.close_matches = list(close_matches)


# A request too far out of timestamp order (see ``replay.in_timestamp_order``).
OrderError = OutOfOrderError


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
        record.update({f"cost_{name}": value for name, value in cost_strings(self.cost).items()})
        record["cost_without_cache"] = money(self.cost_without_cache.total)
        reconciled = self.reconciled
        record["observed_cache_read_tokens"] = reconciled.observed_read if reconciled else None
        record["observed_cache_write_tokens"] = reconciled.observed_write if reconciled else None
        record["observed_cost"] = money(reconciled.observed_cost) if reconciled else None
        return record


@dataclass(slots=True)
class TargetResult:
    """Totals of one target over the whole log."""

    target: Target
    contract: ContractTerms
    tokenizer: str
    totals: BillTotals = field(default_factory=BillTotals)
    reconciliation: ReconciliationSummary = field(default_factory=ReconciliationSummary)
    requests_with_breakpoints: int = 0
    # Set when an explicit-breakpoint contract was simulated as if every request ended its
    # latest message with a breakpoint (Anthropic's top-level automatic cache_control).
    assumed_breakpoint: str | None = None

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
            "requests_with_breakpoints": self.requests_with_breakpoints,
            "assumed_breakpoint": self.assumed_breakpoint,
            "cost": cost_strings(totals.cost),
            "cost_without_cache": money(totals.cost_without_cache.total),
            "savings": money(totals.savings),
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


def tokenizer_for_target(target: Target, contract: ContractTerms) -> tuple[str, str]:
    """The model name to tokenize the log with for ``target``, and its tokenizer's name.

    The target's own id comes first, then the contract's canonical id and plain aliases (a
    target may name a dated alias the tokenizer registry does not list). ``TargetError``
    when none of them has a tokenizer.
    """
    candidates = [target.model, contract.model]
    candidates += [alias for alias in contract.aliases if not any(c in alias for c in "*?[")]
    patterns: list[str] = []
    for candidate in candidates:
        try:
            return candidate, get_tokenizer(candidate).name
        except UnknownModelError as error:
            patterns = error.known_patterns
    raise TargetError(
        f"{target}: no tokenizer is known for {' or '.join(dict.fromkeys(candidates))};"
        f" known model patterns: {', '.join(patterns)}"
    )


def group_by_tokenizer(
    targets: Sequence[Target], contracts: Sequence[ContractTerms]
) -> dict[str, tuple[str, list[int]]]:
    """The targets' indices by tokenizer name, in first-seen order, each group with the model
    its pass tokenizes the log as (its first target's): one pass serves the whole group."""
    groups: dict[str, tuple[str, list[int]]] = {}
    for index, (target, contract) in enumerate(zip(targets, contracts, strict=True)):
        model, tokenizer_name = tokenizer_for_target(target, contract)
        groups.setdefault(tokenizer_name, (model, []))[1].append(index)
    return groups


def estimate(
    sources: Sequence[Path] | Iterable[TokenizedRequest],
    targets: list[Target],
    at: dt.date | None,
    store: ContractStore,
    progress: Callable[[int], None] | None = None,
    *,
    strict: bool = False,
    per_request: Callable[[PerRequestRow], None] | None = None,
    auto_cache_control: bool = False,
) -> EstimateReport:
    """Price ``sources`` (log files, or requests already tokenized) under every target.

    ``progress`` is called with the number of requests replayed since its last call (one
    pass per tokenizer group, so a log priced under two tokenizers counts its requests
    twice). ``per_request`` receives every billed request of every target, in replay order.
    Bad log lines are collected in the report (``strict`` raises the first instead).

    ``auto_cache_control``: a log written for one provider rarely carries another's cache
    breakpoints, and under an explicit-breakpoint contract (Anthropic) a request without any
    caches nothing. With this flag such targets are simulated as if each request put one
    breakpoint at the end of its latest message, as Anthropic's top-level automatic
    ``cache_control`` does; the log's own breakpoints still count. Off by default: the
    default answers "this log, sent as it is".
    """
    if not targets:
        raise TargetError("give at least one target PROVIDER:MODEL")
    day = at or dt.datetime.now(dt.UTC).date()
    contracts = resolve_targets(targets, store, day)
    errors: list[LogError] = []
    results: list[TargetResult] = []
    paths = _as_paths(sources)
    if paths is not None:
        for tokenizer_name, (model, indices) in group_by_tokenizer(targets, contracts).items():
            seen_errors = len(errors)
            pass_errors: list[LogError] = []
            # The model argument asks for that model's tokenization; the provider is left to
            # the log, so that each body is read as the API it was written for.
            logged_models: dict[tuple[str, int], str | None] = {}
            streams = [
                note_logged_models(
                    read_log(
                        path,
                        model=model,
                        strict=strict,
                        errors=pass_errors,
                    ),
                    path,
                    logged_models,
                )
                for path in paths
            ]
            group_results = [
                TargetResult(targets[i], contracts[i], tokenizer_name) for i in indices
            ]
            replay_targets(
                _time_ordered(streams),
                group_results,
                ObservedModelMatcher(store, day, logged_models),
                progress,
                per_request,
                auto_cache_control,
            )
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
        replay_targets(
            _time_ordered([iter(pretokenized)]),
            group_results,
            ObservedModelMatcher(store, day, {}),
            progress,
            per_request,
            auto_cache_control,
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


# target_policy, replay_targets, ObservedModelMatcher and note_logged_models are the
# steps of ``estimate``; the distributed runner (simulator/distributed) runs the same
# steps per partition, so they are public here rather than copied there.


def target_policy(result: TargetResult, auto_cache_control: bool) -> CachePolicy:
    """The cache policy a target's contract implies (with an assumed breakpoint at the
    end of the latest message when ``auto_cache_control`` and the contract is explicit)."""
    if auto_cache_control and result.contract.mode is CacheMode.EXPLICIT:
        result.assumed_breakpoint = "end of the latest message"
        return policy_for_contract(result.contract, implicit_last_message=True)
    return policy_for_contract(result.contract)


def replay_targets(
    requests: Iterator[TokenizedRequest],
    results: list[TargetResult],
    matcher: ObservedModelMatcher,
    progress: Callable[[int], None] | None,
    per_request: Callable[[PerRequestRow], None] | None,
    auto_cache_control: bool,
) -> None:
    """Feed one ordered request stream to every target's policy, billing as it goes."""
    policies = [target_policy(result, auto_cache_control) for result in results]
    pending = 0
    for request in requests:
        logged_model = matcher.logged_model(request)
        for result, policy in zip(results, policies, strict=True):
            usage = policy.process(request)
            contract = result.contract
            cost = bill_request(usage, contract)
            cost_off = bill_without_cache(usage, contract)
            result.totals.add(usage, cost, cost_off, request.exact)
            result.requests_with_breakpoints += bool(request.breakpoints)
            reconciled = None
            if request.observed is not None and matcher.same_model(request, logged_model, contract):
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
    to the same contract model. Since the log is tokenized for the target's model (the
    tokenizer's model argument overrides the record's), the model the log line itself names
    is read separately (``note_logged_models``); for requests handed over already
    tokenized, ``request.model`` is all there is.
    """

    def __init__(
        self, store: ContractStore, day: dt.date, logged: dict[tuple[str, int], str | None]
    ) -> None:
        self._store = store
        self._day = day
        self._logged = logged
        self._resolved: dict[tuple[str, str], str | None] = {}

    def logged_model(self, request: TokenizedRequest) -> str | None:
        return self._logged.pop((request.source, request.line), request.model)

    def same_model(
        self, request: TokenizedRequest, logged_model: str | None, contract: ContractTerms
    ) -> bool:
        if request.provider is None or request.provider.lower() != contract.provider:
            return False
        if logged_model is None:
            return True  # the log names no model: its provider's usage is the evidence
        key = (contract.provider, logged_model.lower())
        if key not in self._resolved:
            try:
                self._resolved[key] = self._store.as_of(*key, self._day).model
            except UnknownContractError:
                self._resolved[key] = None
        return self._resolved[key] == contract.model


def note_logged_models(
    requests: Iterator[TokenizedRequest], path: Path, logged: dict[tuple[str, int], str | None]
) -> Iterator[TokenizedRequest]:
    """Pass requests through, noting the model their own log line names where they carry
    observed usage (only those are ever reconciled). A second handle on the file follows the
    stream forward, so this costs one extra JSON parse per such line and no memory beyond the
    reorder window (entries are removed as requests are replayed)."""
    with open(path, encoding="utf-8") as handle:
        position = 0
        for request in requests:
            if request.observed is not None:
                text = ""
                while position < request.line:
                    text = handle.readline()
                    position += 1
                logged[(request.source, request.line)] = _model_named_in(text)
            yield request


def _model_named_in(line: str) -> str | None:
    """The wrapper's model, else the body's, as the tokenizers read it (None if absent)."""
    try:
        record = json.loads(line)
    except json.JSONDecodeError:
        return None
    if not isinstance(record, dict):
        return None
    model = record.get("model")
    if not isinstance(model, str):
        bodies = [record[key] for key in ("request", "body") if isinstance(record.get(key), dict)]
        model = bodies[0].get("model") if bodies else None
    return model if isinstance(model, str) else None


def _time_ordered(streams: Sequence[Iterator[TokenizedRequest]]) -> Iterator[TokenizedRequest]:
    """Merge per-file streams by timestamp, then reorder within the replay window.

    Each file is expected in (nearly) timestamp order; ``in_timestamp_order`` places stragglers
    within ``DEFAULT_REORDER_WINDOW`` requests and raises ``OutOfOrderError`` (naming file and
    line) for anything later, rather than give the cache a false history.
    """
    if len(streams) == 1:
        return in_timestamp_order(streams[0], DEFAULT_REORDER_WINDOW)
    merged = heapq.merge(*streams, key=lambda request: request.timestamp)
    return in_timestamp_order(merged, DEFAULT_REORDER_WINDOW)


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
