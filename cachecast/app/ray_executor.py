"""A pass of ``estimate`` partitioned over a Ray cluster, with the single-process answer exactly.

:class:`RayExecutor` is an executor of ``app.estimate`` (the pipeline around it, from target
resolution to the report, is the same code as in one process). One pass, in three stages:

1. **Tokenize and shuffle** (one Ray task per log file, a streaming generator): read and
   tokenize the file exactly as one process does (``LogReading.source_requests``), compute
   each request's partition key (``partition.partition_key``) and yield, every
   ``chunk_requests`` requests, one list per shuffle bucket. A worker holds one chunk at a
   time; the chunks wait in Ray's object store (spilled to disk when full).
2. **Replay** (one Ray task per bucket): sort the bucket into the single-process order
   (timestamp, file position in the argument list, line) and replay it through every
   target's policy with the same priced replay (``simulator.pricing.replay_targets``). A
   worker holds one bucket: about ``1 / buckets`` of the log (more when one prompt prefix
   dominates the traffic; raise ``buckets`` to lower it, a single hot key cannot be split).
3. **Merge**: totals are sums (integers and exact decimals), so they merge in any order;
   per-request rows are merged back into the single-process order.

Exact because hosted contracts have no shared capacity (see ``partition``); a policy with a
capacity is refused (``CoupledCacheError``). Unlike one process, a partitioned run sorts fully,
so it also accepts logs whose requests are further out of order than the reorder window.

Workers need the log files at the same paths (a shared filesystem on a real cluster) and the
contract database URL (to reconcile observed usage against the logged model). Only files can
be partitioned: inline records are refused.
"""

from __future__ import annotations

import datetime as dt
import heapq
import os
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from cachecast.app.estimate import PassOutcome, PassWork
from cachecast.app.logs import LogInput, LogReading
from cachecast.contracts import ContractStore
from cachecast.errors import BadInputError, Location, LogRecordError, MissingExtraError
from cachecast.simulator.distributed.local_cluster import bind_local_cluster_to_loopback
from cachecast.simulator.distributed.partition import bucket_of, common_unit, partition_key
from cachecast.simulator.pricing import (
    ObservedModelMatcher,
    PerRequestRow,
    TargetTotals,
    replay_targets,
    target_policy,
)
from cachecast.tokenizers import calibration as calibrating
from cachecast.tokenizers.calibration import RatioStats
from cachecast.tokenizers.types import TokenizedRequest

try:
    import ray
except ModuleNotFoundError as error:  # an optional extra
    raise MissingExtraError("--ray", "distributed", "ray") from error

OrderKey = tuple[float, int, int]
"""(timestamp, index of the file in the argument list, line): the single-process order."""

DEFAULT_CHUNK_REQUESTS = 2048
PROGRESS_POLL_SECONDS = 0.2


@dataclass(slots=True)
class _Item:
    """One tokenized request on its way to its bucket."""

    order: OrderKey
    request: TokenizedRequest


@dataclass(slots=True)
class _FileOutcome:
    """What reading one file found besides its requests."""

    errors: list[LogRecordError]
    requests: int
    calibration: dict[str, RatioStats] | None = None


@dataclass(slots=True)
class _BucketResult:
    totals: list[TargetTotals]
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
    log: LogInput,
    file_index: int,
    tokenize_as: str,
    unit: int,
    buckets: int,
    chunk_requests: int,
) -> Iterator[list[_Item] | _FileOutcome]:
    """Yield ``buckets`` lists per chunk of requests, then the file's outcome."""
    reading = LogReading(log, tokenize_as)
    chunk: list[list[_Item]] = [[] for _ in range(buckets)]
    held = 0
    for request in reading.source_requests(file_index):
        item = _Item((request.timestamp, file_index, request.line), request)
        chunk[bucket_of(partition_key(request, unit), buckets)].append(item)
        held += 1
        if held >= chunk_requests:
            for bucket_items in chunk:  # not ``yield from``: Ray resumes with send()
                yield bucket_items
            chunk = [[] for _ in range(buckets)]
            held = 0
    for bucket_items in chunk:
        yield bucket_items
    name = log.source_names[file_index]
    yield _FileOutcome(reading.errors, reading.requests_by_source[name], reading.calibration)


@ray.remote
def _replay_bucket(
    chunk_refs: list[ray.ObjectRef],  # type: ignore[type-arg]
    empty: list[TargetTotals],
    database_url: str,
    day: dt.date,
    auto_cache_control: bool,
    keep_rows: bool,
    counter: Any,
) -> _BucketResult:
    """Replay one bucket in the single-process order through every target of one pass."""
    items: list[_Item] = [item for chunk in ray.get(chunk_refs) for item in chunk]
    del chunk_refs
    items.sort(key=lambda item: item.order)
    bucket = _BucketResult([totals.fresh() for totals in empty])
    current: list[PerRequestRow] = []
    previous_order: list[OrderKey] = [(0.0, 0, 0)]

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

    replay_targets(
        ordered(),
        bucket.totals,
        ObservedModelMatcher(ContractStore(database_url), day),
        lambda count: counter.add.remote(count),
        current.append if keep_rows else None,
        auto_cache_control,
    )
    bucket.replayed = len(items)
    if keep_rows:
        bucket.rows = [(order, [row.slim() for row in rows]) for order, rows in bucket.rows]
    return bucket


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


def default_buckets() -> int:
    """Four buckets per CPU of the cluster: small enough buckets, even with some skew."""
    cpus = int(ray.cluster_resources().get("CPU", 1))  # type: ignore[no-untyped-call]
    return max(4 * cpus, 1)


class RayExecutor:
    """Runs each pass of ``estimate`` partitioned over a Ray cluster (see the module)."""

    def __init__(
        self,
        address: str | None = None,
        *,
        buckets: int | None = None,
        chunk_requests: int = DEFAULT_CHUNK_REQUESTS,
    ) -> None:
        self.address = address
        self.buckets = buckets
        self.chunk_requests = chunk_requests

    def run_pass(self, work: PassWork) -> PassOutcome:
        if work.log.records is not None:
            raise BadInputError(
                "a distributed run reads log files, not inline records",
                location=Location(field="--ray"),
            )
        connect(self.address)
        buckets = self.buckets or default_buckets()
        empty = work.empty_totals()
        unit = common_unit(target_policy(totals, work.auto_cache_control) for totals in empty)
        per_bucket, outcomes = self._shuffle(work, unit, buckets)
        counter = _ProgressCounter.remote()  # type: ignore[attr-defined]
        pending = [
            _replay_bucket.remote(
                refs,
                empty,
                work.store.url,
                work.day,
                work.auto_cache_control,
                work.per_request is not None,
                counter,
            )
            for refs in per_bucket
        ]
        del per_bucket
        reported = 0

        def report_progress(done: int | None = None) -> None:
            """Advance to the cluster's count, or to ``done`` (exact) once the pass is over:
            the counter's updates are fire-and-forget and may still be on their way."""
            nonlocal reported
            count: int = done if done is not None else ray.get(counter.read.remote())
            if count > reported:
                work.progress(count - reported)
                reported = count

        finished: list[_BucketResult] = []
        while pending:
            done, pending = ray.wait(pending, num_returns=1, timeout=PROGRESS_POLL_SECONDS)
            finished.extend(_unwrapped(ray.get, done))
            report_progress()
        report_progress(done=sum(bucket.replayed for bucket in finished))
        merged = [totals.fresh() for totals in empty]
        for bucket in finished:
            for into, other in zip(merged, bucket.totals, strict=True):
                into.merge(other)
        if work.per_request is not None:
            streams = [bucket.rows for bucket in finished]
            for _, rows in heapq.merge(*streams, key=lambda entry: entry[0]):
                for row in rows:
                    work.per_request(row)
        names = work.log.source_names
        return PassOutcome(
            merged,
            [error for outcome in outcomes for error in outcome.errors],
            {names[index]: outcome.requests for index, outcome in enumerate(outcomes)},
            calibrating.merged([outcome.calibration or {} for outcome in outcomes]),
        )

    def _shuffle(
        self, work: PassWork, unit: int, buckets: int
    ) -> tuple[list[list[Any]], list[_FileOutcome]]:
        """Run the tokenize-and-shuffle tasks: each bucket's object refs, each file's
        outcome (bad lines by file in argument order, then line)."""
        # A generator task returns an ObjectRefGenerator (Ray's stubs say ObjectRef).
        generators: list[Any] = [
            _tokenize_and_shuffle.remote(
                work.log,
                index,
                work.tokenizer_pass.tokenize_as,
                unit,
                buckets,
                self.chunk_requests,
            )
            for index in range(len(work.log.files))
        ]
        per_bucket: list[list[Any]] = [[] for _ in range(buckets)]
        outcomes: list[_FileOutcome] = []
        for generator in generators:
            refs = list(generator)
            *chunks, outcome_ref = refs
            outcomes.append(_unwrapped(ray.get, [outcome_ref])[0])
            for position, ref in enumerate(chunks):
                per_bucket[position % buckets].append(ref)
        return per_bucket, outcomes


def _unwrapped(get: Callable[[Any], Any], refs: list[Any]) -> list[Any]:
    """``ray.get`` that re-raises a task's own exception (a bad line under ``stop``, records
    out of order)."""
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
