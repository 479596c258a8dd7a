"""A pass of ``estimate`` partitioned over a Ray cluster, with the single-process answer exactly.

:class:`RayExecutor` is an executor of ``app.estimate`` (the pipeline around it, from target
resolution to the report, is the same code as in one process). One pass, in three stages:

1. **Tokenize and shuffle** (one Ray task per *part*, a streaming generator). A part is a
   whole log file, or for cachecast JSON lines a byte range of one cut at line starts
   (``logs.ranges``), so that several workers share a large file; parts are about
   ``1 / (PARTS_PER_CPU * CPUs)`` of the log. A task reads and tokenizes its part exactly
   as one process does (``LogReading.source_requests``), computes each request's partition
   key (``partition.partition_key``) and replaces its token ids by the keys the replay's
   policies will look up (``simulator.compact``: 16 bytes per block instead of 4 bytes per
   token). Every ``chunk_requests`` requests it yields one list per shuffle bucket; a worker
   holds one chunk at a time, the chunks wait in Ray's object store.
2. **Replay** (one Ray task per bucket): sort the bucket into the single-process order
   (timestamp, file position in the argument list, line) and replay it through every
   target's policy with the same priced replay (``simulator.pricing.replay_targets``). A
   worker holds one bucket: about ``1 / buckets`` of the log's keys (more when one prompt
   prefix dominates the traffic; raise ``buckets`` to lower it, a single hot key cannot be
   split).
3. **Merge**: totals are sums (integers and exact decimals), so they merge in any order;
   per-request rows are merged back into the single-process order.

A record without a timestamp takes the previous record's. A part that starts inside a file
does not know that one, so it reads its records with NaN for it; those records get, before
the replay sorts them, the last timestamp of the parts before theirs (what one process
reading the whole file would have given them).

Exact because hosted contracts have no shared capacity (see ``partition``); a policy with a
capacity is refused (``CoupledCacheError``). Unlike one process, a partitioned run sorts fully,
so it also accepts logs whose requests are further out of order than the reorder window.

Each pass's time by stage (read, tokenize, shuffle, replay, merge) is kept in
:attr:`RayExecutor.stats` (:class:`PassStats`).

Workers need the log files at the same paths (a shared filesystem on a real cluster) and the
contract database URL (to reconcile observed usage against the logged model). Only files can
be partitioned: inline records are refused.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import heapq
import math
import os
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from cachecast.app.estimate import PassOutcome, PassWork
from cachecast.app.logs import LogInput, LogReading
from cachecast.app.progress import progress_events
from cachecast.contracts import ContractStore
from cachecast.errors import BadInputError, Location, LogRecordError, MissingExtraError
from cachecast.logs import LogStream, detect_format, open_log
from cachecast.logs.errors import LogFileError
from cachecast.logs.ranges import SPLITTABLE_FORMATS, LineRange, open_range, split_lines
from cachecast.logs.stream import Item as LogItem
from cachecast.simulator.compact import Compactor, KeyNeeds, key_needs
from cachecast.simulator.distributed.local_cluster import bind_local_cluster_to_loopback
from cachecast.simulator.distributed.partition import bucket_of, common_unit, partition_key
from cachecast.simulator.ordering import ExtensionReceiver, PromptPacker
from cachecast.simulator.pricing import (
    ObservedModelMatcher,
    PerRequestRow,
    TargetTotals,
    replay_targets,
    target_policy,
)
from cachecast.tokenizers import calibration as calibrating
from cachecast.tokenizers import get_tokenizer
from cachecast.tokenizers.calibration import RatioStats
from cachecast.tokenizers.encode import THREADS_ENV
from cachecast.tokenizers.types import TokenizedRequest

try:
    import ray
except ModuleNotFoundError as error:  # an optional extra
    raise MissingExtraError("--ray", "distributed", "ray") from error

OrderKey = tuple[float, int, int]
"""(timestamp, index of the file in the argument list, line): the single-process order."""

DEFAULT_CHUNK_REQUESTS = 2048
PROGRESS_POLL_SECONDS = 0.2
PARTS_PER_CPU = 2  # a few parts per CPU even out parts that tokenize slower than others
MIN_PART_BYTES = 4 * 1024 * 1024  # below this a part's fixed costs outweigh the split
UNKNOWN_TIMESTAMP = math.nan


@dataclass(slots=True)
class StageSeconds:
    """Seconds spent in each stage, summed over the tasks that ran it."""

    read: float = 0.0  # reading the file and parsing its JSON
    tokenize: float = 0.0  # rendering, encoding and keying the prompts
    shuffle: float = 0.0  # bucketing, storing, fetching and sorting the compact requests
    replay: float = 0.0  # the policies and the bills
    merge: float = 0.0  # adding the buckets' totals and ordering their rows

    def add(self, other: StageSeconds) -> None:
        for spec in dataclasses.fields(self):
            setattr(self, spec.name, getattr(self, spec.name) + getattr(other, spec.name))


@dataclass(slots=True)
class PassStats:
    """One pass: the stages' task seconds (``stages``, over every worker) and the driver's
    wall-clock seconds of the pass's two waits and its merge."""

    parts: int
    buckets: int
    requests: int
    stages: StageSeconds = field(default_factory=StageSeconds)
    tokenize_wall: float = 0.0  # from the first part submitted to the last part done
    replay_wall: float = 0.0  # from the first bucket submitted to the last bucket done
    merge_wall: float = 0.0


@dataclass(frozen=True, slots=True)
class _Part:
    """A whole file (``lines`` None: read by its format's reader) or one range of it."""

    index: int  # position among all the pass's parts
    file_index: int
    lines: LineRange | None


@dataclass(slots=True)
class _Item:
    """One compact request on its way to its bucket. Where the replay reads ids, a request
    that extends its session's previous prompt in the bucket travels with its new ids only
    (``extends``: how many it takes from that prompt; see ``ordering.ExtensionReceiver``)."""

    order: OrderKey
    request: TokenizedRequest
    part: int
    extends: int = 0


@dataclass(slots=True)
class _PartOutcome:
    """What reading one part found besides its requests."""

    errors: list[LogRecordError]
    requests: int
    last_timestamp: float  # NaN: no request of the part had a timestamp of its own
    inherits: bool  # some request took its timestamp from before the part
    stages: StageSeconds
    calibration: dict[str, RatioStats] | None = None


@dataclass(slots=True)
class _BucketResult:
    totals: list[TargetTotals]
    replayed: int = 0
    rows: list[tuple[OrderKey, list[PerRequestRow]]] = field(default_factory=list)
    stages: StageSeconds = field(default_factory=StageSeconds)


def _timed(stream: LogStream, stages: StageSeconds) -> LogStream:
    """``stream`` with the time spent producing its records added to ``stages.read``."""

    def records(_: LogStream) -> Iterator[LogItem]:
        clock = time.perf_counter
        items = iter(stream)
        while True:
            began = clock()
            item = next(items, None)
            stages.read += clock() - began
            if item is None:
                return
            yield item

    timed = LogStream(stream.path, stream.format, records, counts_itself=True)
    timed.source = stream.source
    return timed


def _open_part(log: LogInput, part: _Part) -> LogStream:
    file = log.files[part.file_index]
    name = log.source_names[part.file_index]
    if part.lines is None:
        return open_log(file.path, format=file.format, results=file.results, name=name)
    return open_range(file.path, part.lines, name)


@ray.remote
def _tokenize_and_shuffle(
    log: LogInput,
    part: _Part,
    tokenize_as: str,
    unit: int,
    buckets: int,
    chunk_requests: int,
    needs: KeyNeeds,
    ids: bool,
) -> Iterator[list[_Item] | _PartOutcome]:
    """Yield ``buckets`` lists per chunk of compact requests, then the part's outcome."""
    # A task holds one CPU: the tokenizer's encoding thread would only contend with the
    # other tasks on the node (unless the environment says otherwise).
    os.environ.setdefault(THREADS_ENV, "1")
    clock = time.perf_counter
    began = clock()
    stages = StageSeconds()
    reading = LogReading(log, tokenize_as)
    inside = part.lines is not None and part.lines.start > 0
    requests = reading.source_requests(
        part.file_index,
        _timed(_open_part(log, part), stages),
        UNKNOWN_TIMESTAMP if inside else 0.0,
    )
    compactor = Compactor(needs, keep_ids=ids)
    packer = PromptPacker() if ids else None
    chunk: list[list[_Item]] = [[] for _ in range(buckets)]
    held = 0
    last, inherits = UNKNOWN_TIMESTAMP, False
    shuffled = 0.0
    for request in requests:
        timestamp = request.timestamp
        if math.isnan(timestamp):
            inherits = True
        else:
            last = timestamp
        bucket = bucket_of(partition_key(request, unit), buckets)
        compact = compactor.compact(request)
        extends = 0
        node = packer.extension(compact, bucket) if packer is not None else None
        if node is not None and node.parent is not None:
            compact = dataclasses.replace(compact, tokens=node.tail)
            extends = node.parent.length
        item = _Item((timestamp, part.file_index, request.line), compact, part.index, extends)
        chunk[bucket].append(item)
        held += 1
        if held >= chunk_requests:
            moved = clock()
            for bucket_items in chunk:  # not ``yield from``: Ray resumes with send()
                yield bucket_items
            shuffled += clock() - moved
            chunk = [[] for _ in range(buckets)]
            held = 0
    moved = clock()
    for bucket_items in chunk:
        yield bucket_items
    shuffled += clock() - moved
    stages.shuffle = shuffled
    stages.tokenize = clock() - began - stages.read - shuffled
    name = log.source_names[part.file_index]
    yield _PartOutcome(
        reading.errors,
        reading.requests_by_source[name],
        last,
        inherits,
        stages,
        reading.calibration,
    )


@dataclass(frozen=True, slots=True)
class _ReplaySetup:
    """What every replay task of a pass needs besides its bucket."""

    carried: dict[int, float]  # see ``replay_bucket``
    empty: list[TargetTotals]
    database_url: str
    day: dt.date
    auto_cache_control: bool
    keep_rows: bool
    explain_misses: bool


@ray.remote
def _replay_bucket(
    chunk_refs: list[ray.ObjectRef],  # type: ignore[type-arg]
    setup: _ReplaySetup,
) -> Iterator[int | _BucketResult]:
    """Replay one bucket (see :func:`replay_bucket`), yielding the number of requests
    replayed about every ``PROGRESS_POLL_SECONDS``, then the result. (Progress streams back
    from the task itself: a counter actor would do, but starting its process cost seconds
    on a busy host.)"""
    yield from progress_events(
        lambda progress: replay_bucket(ray.get(chunk_refs), setup, progress),
        PROGRESS_POLL_SECONDS,
    )


def replay_bucket(
    chunks: list[list[_Item]], setup: _ReplaySetup, progress: Callable[[int], None]
) -> _BucketResult:
    """Replay one bucket in the single-process order through every target of one pass.

    ``setup.carried``: for each part some of whose records had no timestamp of their own
    nor an earlier one in the part, the timestamp one process would have given them."""
    carried = setup.carried
    clock = time.perf_counter
    began = clock()
    items: list[_Item] = [item for chunk in chunks for item in chunk]
    del chunks
    # In the order each part sent them: the ids' chains are rebuilt as they were packed.
    receiver = ExtensionReceiver()
    chains = [receiver.receive(item.request, item.extends, item.part) for item in items]
    del receiver
    for item in items:
        timestamp = item.order[0]
        if math.isnan(timestamp):
            timestamp = carried[item.part]
            item.order = (timestamp, item.order[1], item.order[2])
            item.request = dataclasses.replace(item.request, timestamp=timestamp)
    replay_order = sorted(range(len(items)), key=lambda index: items[index].order)
    bucket = _BucketResult([totals.fresh() for totals in setup.empty])
    sorted_at = clock()
    current: list[PerRequestRow] = []
    previous_order: list[OrderKey] = [(0.0, 0, 0)]

    def ordered() -> Iterator[TokenizedRequest]:
        for index in replay_order:
            item = items[index]
            if current:
                bucket.rows.append((previous_order[0], list(current)))
                current.clear()
            previous_order[0] = item.order
            chain = chains[index]
            # The whole ids only while the request is replayed: the bucket holds the tails.
            if chain is None:
                yield item.request
            else:
                yield dataclasses.replace(item.request, tokens=chain.ids())
        if current:
            bucket.rows.append((previous_order[0], list(current)))
            current.clear()

    replay_targets(
        ordered(),
        bucket.totals,
        ObservedModelMatcher(ContractStore(setup.database_url), setup.day),
        progress,
        current.append if setup.keep_rows else None,
        setup.auto_cache_control,
        explain=setup.explain_misses,
    )
    bucket.replayed = len(items)
    if setup.keep_rows:
        bucket.rows = [(order, [row.slim() for row in rows]) for order, rows in bucket.rows]
    bucket.stages.shuffle = sorted_at - began
    bucket.stages.replay = clock() - sorted_at
    return bucket


def connect(address: str | None, *, object_store_bytes: int | None = None) -> None:
    """Join the cluster at ``address``, or start a local one (no address) if none is up."""
    if ray.is_initialized():
        return
    if address:
        ray.init(address=address, log_to_driver=False)
    else:
        # A local cluster must bind to loopback; callers set that up before importing ray.
        # "local": a new cluster of our own, never one another program started here.
        bind_local_cluster_to_loopback()
        ray.init(
            address="local",
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
    """Runs each pass of ``estimate`` partitioned over a Ray cluster (see the module).

    ``buckets``: replay tasks per pass (default :func:`default_buckets`); ``part_bytes``: the
    size a file is cut at (default: the log over ``PARTS_PER_CPU`` parts per CPU, at least
    :data:`MIN_PART_BYTES`); ``chunk_requests``: requests a tokenizing task holds before
    it hands them on. :attr:`stats` gets one :class:`PassStats` per pass run.
    """

    def __init__(
        self,
        address: str | None = None,
        *,
        buckets: int | None = None,
        chunk_requests: int = DEFAULT_CHUNK_REQUESTS,
        part_bytes: int | None = None,
    ) -> None:
        self.address = address
        self.buckets = buckets
        self.chunk_requests = chunk_requests
        self.part_bytes = part_bytes
        self.stats: list[PassStats] = []

    def run_pass(self, work: PassWork) -> PassOutcome:
        if work.log.records is not None:
            raise BadInputError(
                "a distributed run reads log files, not inline records",
                location=Location(field="--ray"),
            )
        connect(self.address)
        buckets = self.buckets or default_buckets()
        empty = work.empty_totals()
        policies = [target_policy(totals, work.auto_cache_control) for totals in empty]
        unit = common_unit(policies)
        # An approximate tokenizer is calibrated on the log as it is read (a ratio learned from
        # earlier usage applies to later records): its files are read whole, as one process
        # reads them, never cut into parts that would each start uncalibrated.
        calibrated = not get_tokenizer(work.tokenizer_pass.tokenize_as).exact
        parts = plan_parts(
            work.log, self.part_bytes or default_part_bytes(work.log), split=not calibrated
        )
        stats = PassStats(len(parts), buckets, 0)
        began = time.perf_counter()
        # The policies read keys computed by the tokenizing tasks; explaining misses reads
        # the ids too (as a policy that matches ids does): they travel as a session's new
        # ids where a prompt extends the previous one (``ordering.PromptPacker``).
        needs = key_needs(policies)
        ids = needs.tokens or work.explain_misses
        per_bucket, outcomes = self._shuffle(work, parts, unit, buckets, needs, ids)
        stats.tokenize_wall = time.perf_counter() - began
        carried = _carried_timestamps(parts, outcomes)
        began = time.perf_counter()
        setup = _ReplaySetup(
            carried,
            empty,
            work.store.url,
            work.day,
            work.auto_cache_control,
            work.per_request is not None,
            work.explain_misses,
        )
        waiting: list[Any] = [_replay_bucket.remote(refs, setup) for refs in per_bucket]
        del per_bucket
        finished: list[_BucketResult] = []
        while waiting:
            ready: list[Any]
            ready, waiting = ray.wait(waiting, num_returns=1, timeout=PROGRESS_POLL_SECONDS)
            for generator in ready:
                value = _unwrapped(ray.get, [next(generator)])[0]
                if isinstance(value, int):
                    work.progress(value)
                    waiting.append(generator)
                else:
                    finished.append(value)  # a bucket's last item
        stats.replay_wall = time.perf_counter() - began
        began = time.perf_counter()
        stats.requests = sum(bucket.replayed for bucket in finished)
        merged = [totals.fresh() for totals in empty]
        for bucket in finished:
            stats.stages.add(bucket.stages)
            for into, other in zip(merged, bucket.totals, strict=True):
                into.merge(other)
        if work.per_request is not None:
            streams = [bucket.rows for bucket in finished]
            for _, rows in heapq.merge(*streams, key=lambda entry: entry[0]):
                for row in rows:
                    work.per_request(row)
        names = work.log.source_names
        requests_by_source = dict.fromkeys(names, 0)
        for part, outcome in zip(parts, outcomes, strict=True):
            requests_by_source[names[part.file_index]] += outcome.requests
            stats.stages.add(outcome.stages)
        stats.merge_wall = time.perf_counter() - began
        stats.stages.merge += stats.merge_wall
        self.stats.append(stats)
        return PassOutcome(
            merged,
            [error for outcome in outcomes for error in outcome.errors],
            requests_by_source,
            calibrating.merged([outcome.calibration or {} for outcome in outcomes]),
        )

    def _shuffle(
        self,
        work: PassWork,
        parts: list[_Part],
        unit: int,
        buckets: int,
        needs: KeyNeeds,
        ids: bool,
    ) -> tuple[list[list[Any]], list[_PartOutcome]]:
        """Run the tokenize-and-shuffle tasks: each bucket's object refs, each part's
        outcome (in part order: bad lines by file in argument order, then line)."""
        # A generator task returns an ObjectRefGenerator (Ray's stubs say ObjectRef).
        generators: list[Any] = [
            _tokenize_and_shuffle.remote(
                work.log,
                part,
                work.tokenizer_pass.tokenize_as,
                unit,
                buckets,
                self.chunk_requests,
                needs,
                ids,
            )
            for part in parts
        ]
        per_bucket: list[list[Any]] = [[] for _ in range(buckets)]
        outcomes: list[_PartOutcome] = []
        for generator in generators:
            refs = list(generator)
            *chunks, outcome_ref = refs
            outcomes.append(_unwrapped(ray.get, [outcome_ref])[0])
            for position, ref in enumerate(chunks):
                per_bucket[position % buckets].append(ref)
        return per_bucket, outcomes


def default_part_bytes(log: LogInput) -> int:
    """``PARTS_PER_CPU`` parts per CPU of the cluster over the whole log, at least
    :data:`MIN_PART_BYTES` each."""
    cpus = int(ray.cluster_resources().get("CPU", 1))  # type: ignore[no-untyped-call]
    total = sum(file.path.stat().st_size for file in log.files)
    return max(MIN_PART_BYTES, -(-total // max(PARTS_PER_CPU * cpus, 1)))


def plan_parts(log: LogInput, part_bytes: int, *, split: bool = True) -> list[_Part]:
    """Every file as one part, except (``split``) cachecast JSON lines over ``part_bytes``,
    cut into ranges of about that size (see ``logs.ranges``)."""
    parts: list[_Part] = []
    for file_index, file in enumerate(log.files):
        ranges: list[LineRange | None] = [None]
        size = file.path.stat().st_size
        if split and size > part_bytes and file.results is None and _splittable(log, file_index):
            ranges = list(split_lines(file.path, -(-size // part_bytes)))
        parts.extend(_Part(len(parts) + n, file_index, lines) for n, lines in enumerate(ranges))
    return parts


def _splittable(log: LogInput, file_index: int) -> bool:
    file = log.files[file_index]
    if file.format is not None:
        return file.format in SPLITTABLE_FORMATS
    try:
        found, _ = detect_format(file.path)  # from the file's first lines (no parse of it all)
    except LogFileError:
        return False  # the part's task reports it as one process would
    return found.name in SPLITTABLE_FORMATS


def _carried_timestamps(parts: list[_Part], outcomes: list[_PartOutcome]) -> dict[int, float]:
    """For each part with records that inherit a timestamp from before it, the last
    timestamp of the parts of its file before it (0.0 at the file's start, as one process
    reading the file from its start gives records before any timestamp)."""
    carried: dict[int, float] = {}
    last: dict[int, float] = {}
    for part, outcome in zip(parts, outcomes, strict=True):
        if outcome.inherits:
            carried[part.index] = last.get(part.file_index, 0.0)
        if not math.isnan(outcome.last_timestamp):
            last[part.file_index] = outcome.last_timestamp
    return carried


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
