"""``estimate`` partitioned over a Ray cluster, with the single-process answer exactly.

Stages (one pass per tokenizer group, as ``estimate`` does):

1. **Tokenize and shuffle** (one Ray task per log file, a streaming generator): read and
   tokenize the file, compute each request's partition key (``partition.partition_key``)
   and yield, every ``chunk_requests`` requests, one list per shuffle bucket. A worker holds
   one chunk at a time; the chunks wait in Ray's object store (spilled to disk when full).
2. **Replay** (one Ray task per bucket): sort the bucket into the single-process order
   (timestamp, file position in the argument list, line) and replay it through every
   target's policy with ``estimate``'s own replay loop, billing each request. A worker
   holds one bucket: about ``1 / buckets`` of the log (more when one prompt prefix
   dominates the traffic; raise ``buckets`` to lower it, a single hot key cannot be split).
3. **Merge**: totals are sums (integers and exact decimals), so they merge in any order;
   per-request rows are merged back into the single-process order.

Exact because hosted contracts have no shared capacity (see ``partition``); a policy with a
capacity is refused (``CoupledCacheError``). The single-process run replays files that are
each in timestamp order merged by timestamp (ties: earlier file, then earlier line), which
is the order used here; unlike it, a partitioned run sorts fully, so it also accepts logs
whose requests are further out of order than the single-process reorder window.

Workers need the log files at the same paths (a shared filesystem on a real cluster) and
the contract database URL (used only to reconcile observed usage against the logged model).
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import heapq
import os
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from decimal import Decimal, localcontext
from pathlib import Path
from typing import Any

import ray

from cachecast.contracts import ContractStore
from cachecast.contracts.model import ContractTerms
from cachecast.simulator.billing import EXACT
from cachecast.simulator.distributed.local_cluster import bind_local_cluster_to_loopback
from cachecast.simulator.distributed.partition import bucket_of, common_unit, partition_key
from cachecast.simulator.estimate import (
    EstimateReport,
    ObservedModelMatcher,
    PerRequestRow,
    Target,
    TargetError,
    TargetResult,
    group_by_tokenizer,
    note_logged_models,
    replay_targets,
    resolve_targets,
    target_policy,
)
from cachecast.simulator.types import Cost
from cachecast.tokenizers import LogError, read_log
from cachecast.tokenizers.types import TokenizedRequest

OrderKey = tuple[float, int, int]
"""(timestamp, index of the file in the argument list, line): the single-process order."""

_NOT_LOGGED = object()  # marks a request whose logged model was not looked up
DEFAULT_CHUNK_REQUESTS = 2048
PROGRESS_POLL_SECONDS = 0.2


@dataclass(slots=True)
class _Item:
    """One tokenized request on its way to its bucket."""

    order: OrderKey
    request: TokenizedRequest
    logged_model: Any = _NOT_LOGGED  # str | None once looked up


@dataclass(slots=True)
class _BucketResult:
    results: list[TargetResult]
    replayed: int = 0
    rows: list[tuple[OrderKey, list[PerRequestRow]]] = field(default_factory=list)


@ray.remote
class _ProgressCounter:
    """Requests replayed across the cluster, read by the driver for its progress bar."""

    def __init__(self) -> None:
        self.count = 0

    def add(self, count: int) -> None:
        self.count += count

    def read(self) -> int:
        return self.count


@ray.remote
def _tokenize_and_shuffle(
    path: str,
    file_index: int,
    model: str,
    strict: bool,
    unit: int,
    buckets: int,
    chunk_requests: int,
) -> Iterator[list[_Item] | list[LogError]]:
    """Yield ``buckets`` lists per chunk of requests, then the file's bad lines."""
    errors: list[LogError] = []
    logged: dict[tuple[str, int], str | None] = {}
    requests = note_logged_models(
        read_log(path, model=model, strict=strict, errors=errors), Path(path), logged
    )
    chunk: list[list[_Item]] = [[] for _ in range(buckets)]
    held = 0
    for request in requests:
        item = _Item((request.timestamp, file_index, request.line), request)
        if request.observed is not None:
            item.logged_model = logged.pop((request.source, request.line), None)
        chunk[bucket_of(partition_key(request, unit), buckets)].append(item)
        held += 1
        if held >= chunk_requests:
            for bucket_items in chunk:  # not ``yield from``: Ray resumes with send()
                yield bucket_items
            chunk = [[] for _ in range(buckets)]
            held = 0
    for bucket_items in chunk:
        yield bucket_items
    yield errors


@ray.remote
def _replay_bucket(
    chunk_refs: list[ray.ObjectRef],  # type: ignore[type-arg]
    targets: list[Target],
    contracts: list[ContractTerms],
    tokenizer_name: str,
    database_url: str,
    day: dt.date,
    auto_cache_control: bool,
    keep_rows: bool,
    counter: Any,
) -> _BucketResult:
    """Replay one bucket in the single-process order through every target of one group."""
    items: list[_Item] = [item for chunk in ray.get(chunk_refs) for item in chunk]
    del chunk_refs
    items.sort(key=lambda item: item.order)
    results = [
        TargetResult(target, contract, tokenizer_name)
        for target, contract in zip(targets, contracts, strict=True)
    ]
    logged = {
        (item.request.source, item.request.line): item.logged_model
        for item in items
        if item.logged_model is not _NOT_LOGGED
    }
    store = ContractStore(database_url)
    bucket = _BucketResult(results)
    current: list[PerRequestRow] = []

    def keep(row: PerRequestRow) -> None:
        current.append(row)

    def ordered() -> Iterator[TokenizedRequest]:
        for item in items:
            if current:
                bucket.rows.append((previous_order[0], list(current)))
                current.clear()
            previous_order[0] = item.order
            yield item.request
        if current:
            bucket.rows.append((previous_order[0], list(current)))
            current.clear()

    previous_order: list[OrderKey] = [(0.0, 0, 0)]
    replay_targets(
        ordered(),
        results,
        ObservedModelMatcher(store, day, logged),
        lambda count: counter.add.remote(count),
        keep if keep_rows else None,
        auto_cache_control,
    )
    bucket.replayed = len(items)
    if keep_rows:
        bucket.rows = [(order, [_slim(row) for row in rows]) for order, rows in bucket.rows]
    return bucket


def _slim(row: PerRequestRow) -> PerRequestRow:
    """The row without the prompt's tokens (all the table needs is the request's identity)."""
    request = dataclasses.replace(row.request, tokens=None, block_keys=None, segments=())
    return dataclasses.replace(row, request=request)


def merge_target_results(into: TargetResult, other: TargetResult) -> None:
    """Add ``other``'s totals to ``into`` (same target): every field is a sum."""
    # Money in billing's trapping context, as BillTotals.add sums it (the default context
    # would round at 28 digits without a word).
    with localcontext(EXACT):
        _add_fields(into.totals, other.totals)
        _add_fields(into.reconciliation, other.reconciliation)
    into.requests_with_breakpoints += other.requests_with_breakpoints
    into.assumed_breakpoint = into.assumed_breakpoint or other.assumed_breakpoint


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


def default_buckets() -> int:
    """Four buckets per CPU of the cluster: small enough buckets, even with some skew."""
    cpus = int(ray.cluster_resources().get("CPU", 1))  # type: ignore[no-untyped-call]
    return max(4 * cpus, 1)


def connect(address: str | None, *, object_store_bytes: int | None = None) -> None:
    """Join the cluster at ``address``, or start a local one (no address) if none is up."""
    if ray.is_initialized():
        return
    if address:
        ray.init(address=address, log_to_driver=False)
    else:
        # A local cluster must bind to loopback; callers set that up before importing ray.
        bind_local_cluster_to_loopback()
        ray.init(
            num_cpus=os.cpu_count() or 1,
            object_store_memory=object_store_bytes,
            include_dashboard=False,
            log_to_driver=False,
        )


def estimate_on_ray(
    paths: Sequence[Path],
    targets: list[Target],
    at: dt.date | None,
    store: ContractStore,
    database_url: str,
    progress: Callable[[int], None] | None = None,
    *,
    strict: bool = False,
    per_request: Callable[[PerRequestRow], None] | None = None,
    auto_cache_control: bool = False,
    address: str | None = None,
    buckets: int | None = None,
    chunk_requests: int = DEFAULT_CHUNK_REQUESTS,
) -> EstimateReport:
    """``estimate`` over log files, partitioned on Ray; same report, same per-request rows.

    ``progress`` is called with requests replayed since its last call, counted across the
    cluster (as ``estimate``: once per tokenizer group). ``per_request`` rows arrive in the
    single-process order after each group's replay (the driver then holds that group's rows,
    without token ids). Bad lines are listed by file (argument order), then line.
    """
    if not targets:
        raise TargetError("give at least one target PROVIDER:MODEL")
    day = at or dt.datetime.now(dt.UTC).date()
    contracts = resolve_targets(targets, store, day)
    connect(address)
    bucket_count = buckets or default_buckets()
    groups = group_by_tokenizer(targets, contracts)
    counter = _ProgressCounter.remote()  # type: ignore[attr-defined]
    reported = 0

    def report_progress(done: int = 0) -> None:
        """Advance to the cluster's count, or to ``done`` (exact) once a group is over:
        the counter's updates are fire-and-forget and may still be on their way."""
        nonlocal reported
        if progress is None:
            return
        count: int = max(done, ray.get(counter.read.remote()))
        if count > reported:
            progress(count - reported)
            reported = count

    results: list[TargetResult] = []
    errors: list[LogError] = []
    for group_number, (tokenizer_name, (model, indices)) in enumerate(groups.items()):
        group_targets = [targets[i] for i in indices]
        group_contracts = [contracts[i] for i in indices]
        probes = [
            TargetResult(target, contract, tokenizer_name)
            for target, contract in zip(group_targets, group_contracts, strict=True)
        ]
        unit = common_unit(target_policy(probe, auto_cache_control) for probe in probes)
        per_bucket, group_errors = _shuffle(
            paths, model, strict, unit, bucket_count, chunk_requests
        )
        if group_number == 0:
            errors.extend(group_errors)
        pending = [
            _replay_bucket.remote(
                refs,
                group_targets,
                group_contracts,
                tokenizer_name,
                database_url,
                day,
                auto_cache_control,
                per_request is not None,
                counter,
            )
            for refs in per_bucket
        ]
        del per_bucket
        reported_before = reported
        finished: list[_BucketResult] = []
        while pending:
            done, pending = ray.wait(pending, num_returns=1, timeout=PROGRESS_POLL_SECONDS)
            finished.extend(_unwrapped(ray.get, done))
            report_progress()
        report_progress(done=reported_before + sum(bucket.replayed for bucket in finished))
        merged = [
            TargetResult(target, contract, tokenizer_name)
            for target, contract in zip(group_targets, group_contracts, strict=True)
        ]
        for bucket in finished:
            for into, other in zip(merged, bucket.results, strict=True):
                merge_target_results(into, other)
        if per_request is not None:
            streams = [bucket.rows for bucket in finished]
            for _, rows in heapq.merge(*streams, key=lambda entry: entry[0]):
                for row in rows:
                    per_request(row)
        results.extend(merged)
    order = {target: position for position, target in enumerate(targets)}
    results.sort(key=lambda result: order[result.target])
    return EstimateReport(
        at=day, targets=results, sources=[str(path) for path in paths], errors=errors
    )


def _shuffle(
    paths: Sequence[Path],
    model: str,
    strict: bool,
    unit: int,
    buckets: int,
    chunk_requests: int,
) -> tuple[list[list[Any]], list[LogError]]:
    """Run the tokenize-and-shuffle tasks; the object refs of each bucket, and bad lines."""
    # A generator task returns an ObjectRefGenerator (Ray's stubs say ObjectRef).
    generators: list[Any] = [
        _tokenize_and_shuffle.remote(str(path), index, model, strict, unit, buckets, chunk_requests)
        for index, path in enumerate(paths)
    ]
    per_bucket: list[list[Any]] = [[] for _ in range(buckets)]
    errors: list[LogError] = []
    for generator in generators:
        refs = list(generator)
        *chunks, error_ref = refs
        errors.extend(_unwrapped(ray.get, [error_ref])[0])
        for position, ref in enumerate(chunks):
            per_bucket[position % buckets].append(ref)
    return per_bucket, errors


def _unwrapped(get: Callable[[Any], Any], refs: list[Any]) -> list[Any]:
    """``ray.get`` that re-raises a task's own exception (a LogError, an OutOfOrderError)."""
    try:
        values: list[Any] = get(refs)
    except ray.exceptions.RayTaskError as error:
        cause = error.cause
        if isinstance(cause, Exception):
            raise cause from error
        raise
    return values


def wait_for_cluster(min_cpus: int, timeout_seconds: float = 60.0) -> None:
    """Block until the cluster offers ``min_cpus`` CPUs (workers joining take a moment)."""
    deadline = time.monotonic() + timeout_seconds
    while ray.cluster_resources().get("CPU", 0) < min_cpus:  # type: ignore[no-untyped-call]
        if time.monotonic() > deadline:
            raise TimeoutError(f"the Ray cluster did not reach {min_cpus} CPUs")
        time.sleep(0.2)
