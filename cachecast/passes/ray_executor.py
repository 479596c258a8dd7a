"""A pass of ``estimate`` partitioned over a Ray cluster, with the single-process answer exactly.

:class:`RayExecutor` is an executor of ``usecases.estimate`` (the pipeline around it, from target
resolution to the report, is the same code as in one process). One pass, in three stages:

1. **Tokenize and shuffle** (one Ray task per *part*, a streaming generator). A part is a
   whole log file, or for cachecast JSON lines a byte range of one cut at line starts
   (``logs.ranges``), so that several workers share a large file; parts are about
   ``1 / (PARTS_PER_CPU * CPUs)`` of the log, or for a log of one file parts that get
   smaller towards its end (:func:`tapered_cuts`: less is left to replay once the
   tokenizing ends). A task reads and tokenizes its part exactly
   as one process does (``LogReading.source_requests``), computes each request's partition
   key (``partition.partition_key``) and, where the replay does not read the ids, the keys
   the replay's policies will look up instead of them (``simulator.compact``: 16 bytes per
   block instead of 4 bytes per token). Where the replay reads the ids (explaining misses
   compares each prompt's ids with earlier ones), they travel instead of keys (the
   replay's policies key them as one process does), a prompt that extends its session's
   previous one in the bucket as its new ids only (``ordering.PromptPacker.extension``),
   and its segments as those the previous one did not have (:class:`_SegmentsSender`).
   Every ``chunk_requests`` requests it yields, per replayer, the lists of its shuffle
   buckets, pickled in one call (:func:`_packed`); a worker holds one chunk at a time, the
   chunks wait in Ray's object store.
2. **Replay** (:class:`BucketReplay`, on replayer actors: one process per CPU, kept from
   pass to pass). The driver hands each chunk to its buckets' replayer as it comes, part
   after part in plan order. A bucket is replayed in the single-process order (timestamp,
   file position in the argument list, line) through every target's policy with the same
   priced replay (``simulator.pricing.replay_targets``). For a pass over one file its
   chunks are replayed as they come, while later parts are still being tokenized, as long
   as each sorts after what was replayed before it; a chunk that goes back in time makes
   its bucket replayed again, sorted, once every chunk is in (``PassStats.replayed_again``).
   A replayer asks for no CPU: it works while the tokenizing tasks hold the CPUs (the host
   shares its cores), so the replay of the hottest bucket (one prompt prefix shared by all
   the traffic is one partition: it cannot be split) overlaps the tokenizing instead of
   following it. A replayer holds its buckets' requests: about ``1 / replayers`` of the
   log's keys and new ids (more when one prompt prefix dominates the traffic).
3. **Merge**: totals are sums (integers and exact decimals), so they merge in any order;
   per-request rows are merged back into the single-process order.

A record without a timestamp takes the previous record's. A part that starts inside a file
does not know that one, so it reads its records with NaN for it; those records get, as
their chunk is handed on, the last timestamp of the parts before theirs (what one process
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
import pickle
import queue
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from cachecast.contracts import ContractStore
from cachecast.core.errors import BadInputError, Location, LogRecordError, MissingExtraError
from cachecast.core.gc_pacing import paced_collection
from cachecast.logs import LogStream, detect_format, open_log
from cachecast.logs.errors import LogFileError
from cachecast.logs.ranges import (
    SPLITTABLE_FORMATS,
    LineRange,
    open_range,
    split_at,
    split_lines,
)
from cachecast.logs.stream import Item as LogItem
from cachecast.passes.executors import PassOutcome, PassWork
from cachecast.passes.log_input import LogInput, LogReading
from cachecast.simulator.compact import Compactor, KeyNeeds, key_needs
from cachecast.simulator.distributed.local_cluster import bind_local_cluster_to_loopback
from cachecast.simulator.distributed.partition import bucket_of, common_unit, partition_key
from cachecast.simulator.ordering import Extension, ExtensionReceiver, PromptPacker, RebuiltIds
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
from cachecast.tokenizers.types import (
    Segment,
    TokenizedRequest,
    request_values,
    values_with,
    with_changes,
)

try:
    import ray
except ModuleNotFoundError as error:  # an optional extra
    raise MissingExtraError("--ray", "distributed", "ray") from error

OrderKey = tuple[float, int, int]
"""(timestamp, index of the file in the argument list, line): the single-process order."""

# Small enough that a part streams to its replay while it is read (a chunk a few tens of
# milliseconds of tokenizing), large enough that a chunk's fixed cost is small.
DEFAULT_CHUNK_REQUESTS = 256
PROGRESS_POLL_SECONDS = 0.2
SPECULATION_HOLD_SECONDS = 60.0  # of log time (see ``BucketReplay``)
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
    replay_wall: float = 0.0  # from then to the last bucket done (what was left to replay)
    merge_wall: float = 0.0
    chunk_requests: int = 0
    streamed: int = 0  # buckets replayed as their chunks came (``BucketReplay``)
    replayed_again: int = 0  # buckets whose streamed replay was dropped (out of order)


@dataclass(frozen=True, slots=True)
class _Part:
    """A whole file (``lines`` None: read by its format's reader) or one range of it."""

    index: int  # position among all the pass's parts
    file_index: int
    lines: LineRange | None


@dataclass(slots=True)
class _Item:
    """One compact request in its bucket (its ids the new ones only where it extends its
    session's previous prompt: ``BucketReplay.chains`` holds how to rebuild them)."""

    order: OrderKey
    request: TokenizedRequest


_WireItem = tuple[OrderKey, int, int, int, tuple[Any, ...]]
"""One compact request on its way to its bucket: (order, part, ``extends``, ``shared``,
its field values, ``tokenizers.types.request_values``). Where the replay reads ids, a
request that extends its session's previous prompt in the bucket travels with its new ids
only (``extends``: how many it takes from that prompt; ``ordering.ExtensionReceiver``) and
without the leading segments that are that prompt's (``shared`` of them;
:class:`_SegmentsSender`). Plain tuples: they pickle without a Python call per request,
and nothing is built on the sending side that is not shipped."""


_SessionKey = tuple[str | None, str, str | None]


class _SegmentsSender:
    """A request's segments as those it shares with its session's previous request in the
    same channel (a bucket) and the rest.

    An agent's request repeats its session's previous prompt, and the tokenizer hands on the
    previous request's ``Segment`` objects for it (one per tool, message and content part:
    dozens): shipping them all again would cost more than the request's new token ids
    (pickling a segment is a Python object each way). Only leading segments that are the
    very same objects count as shared (``is``: no comparison of values)."""

    def __init__(self) -> None:
        self._latest: dict[tuple[int, _SessionKey], tuple[Segment, ...]] = {}

    def split(self, request: TokenizedRequest, channel: int) -> int:
        """How many of ``request``'s leading segments the receiver has already."""
        if request.session is None or not request.segments:
            return 0
        key = (channel, (request.model, request.scope, request.session))
        previous = self._latest.get(key, ())
        segments = request.segments
        self._latest[key] = segments
        shared = 0
        for old, new in zip(previous, segments, strict=False):
            if old is not new:
                break
            shared += 1
        return shared


class _SegmentsReceiver:
    """Rebuilds the segments :class:`_SegmentsSender` split, fed in the sender's order;
    ``stream`` tells apart the senders feeding one receiver."""

    def __init__(self) -> None:
        self._latest: dict[tuple[int, _SessionKey], tuple[Segment, ...]] = {}

    def receive(self, request: TokenizedRequest, shared: int, stream: int) -> tuple[Segment, ...]:
        if request.session is None or (not request.segments and not shared):
            return request.segments
        key = (stream, (request.model, request.scope, request.session))
        segments = request.segments
        if shared:
            previous = self._latest.get(key, ())
            if len(previous) < shared:
                raise ValueError(
                    f"{request.source} line {request.line}: {shared} shared segments,"
                    f" {len(previous)} received before"
                )
            segments = previous[:shared] + segments
        self._latest[key] = segments
        return segments


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
    streamed: bool = False  # replayed as its chunks came, kept
    dropped: bool = False  # replayed as its chunks came, then again, sorted


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


def _packed(chunks: list[list[_WireItem]]) -> bytes:
    """A chunk for one replayer, as the bytes Ray stores as they are.

    Why not the lists themselves: Ray serializes an object through msgpack, calling back
    into Python for every value msgpack does not know (each request's tuple), then pickles
    those, and reads them back the same way: measured on the benchmark's agent log, 2.3
    times the CPU of pickling the chunk in one call when storing it and 3.7 times when
    reading it (docs/capacity-plan.md, "Shipping")."""
    return pickle.dumps(chunks, protocol=pickle.HIGHEST_PROTOCOL)


@ray.remote
def _tokenize_and_shuffle(
    log: LogInput,
    part: _Part,
    tokenize_as: str,
    unit: int,
    owners: list[list[int]],
    chunk_requests: int,
    needs: KeyNeeds,
    ids: bool,
) -> Iterator[bytes | _PartOutcome]:
    """Yield, per chunk of compact requests, one object per replayer (``owners``: the
    buckets each replayer holds), the lists of its buckets (pickled: :func:`_packed`); then
    the part's outcome. (One object per bucket would cost every bucket a put, a handle and
    a fetch, most of them empty or small.)"""
    buckets = sum(len(owned) for owned in owners)
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
    # Where the ids travel the replay's policies key them as in one process (reusing each
    # session's earlier keys): shipping keys besides would only cost their pickling.
    compact = None if ids else Compactor(needs).compact
    packer = PromptPacker() if ids else None
    segments = _SegmentsSender()
    chunk: list[list[_WireItem]] = [[] for _ in range(buckets)]
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
        if compact is not None:
            request = compact(request)
        extends = 0
        node = packer.extension(request, bucket) if packer is not None else None
        shared = segments.split(request, bucket)
        values = request_values(request)
        if node is not None and node.parent is not None:
            extends = node.parent.length
            values = values_with(values, tokens=node.tail, segments=request.segments[shared:])
        elif shared:
            values = values_with(values, segments=request.segments[shared:])
        chunk[bucket].append(
            ((timestamp, part.file_index, request.line), part.index, extends, shared, values)
        )
        held += 1
        if held >= chunk_requests:
            moved = clock()
            for owned in owners:  # not ``yield from``: Ray resumes with send()
                yield _packed([chunk[bucket] for bucket in owned])
            shuffled += clock() - moved
            chunk = [[] for _ in range(buckets)]
            held = 0
    moved = clock()
    for owned in owners:
        yield _packed([chunk[bucket] for bucket in owned])
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
    """What every bucket replay of a pass needs besides its requests."""

    empty: list[TargetTotals]
    database_url: str
    day: dt.date
    auto_cache_control: bool
    keep_rows: bool
    explain_misses: bool
    speculate: bool  # replay each chunk as it comes (see ``BucketReplay``)


class BucketReplay:
    """One bucket replayed in the single-process order through every target of one pass.

    Fed each part's chunks in the order the part sent them, parts in plan order: the ids'
    chains are rebuilt as they were packed (``ordering.ExtensionReceiver``), and records
    without a timestamp of their own nor an earlier one in their part get ``carried``, the
    timestamp one process would have given them (the last one of the parts before theirs).

    ``setup.speculate`` (a pass over one file, whose parts follow each other in line order):
    the requests are replayed as their chunks come, on a thread of its own, while later
    parts are still being tokenized, in order, each once a request
    :data:`SPECULATION_HOLD_SECONDS` later in the log has come (writers' records a little
    out of order are sorted). That holds as long as no request comes that sorts before one
    already replayed (a log written in time order, give or take the hold); one that does
    drops that replay: :meth:`close` replays the whole bucket again, sorted, as without
    speculation. Either way the requests reach the policies in the order one process gives
    them."""

    def __init__(self, setup: _ReplaySetup) -> None:
        self.setup = setup
        self.items: list[_Item] = []
        self.chains: list[Extension | None] = []
        self._receiver = ExtensionReceiver()
        self.segments: list[tuple[Segment, ...] | None] = []  # None: the request's own
        self._segments_receiver = _SegmentsReceiver()
        self.replayed = 0  # requests through the policies so far (a progress count)
        self._shuffle_seconds = 0.0
        self._last: OrderKey | None = None  # the latest request handed to the replay
        self._held: list[tuple[OrderKey, int]] = []  # a heap: those not handed on yet
        self._newest = -math.inf  # the latest timestamp fed
        self._streaming = setup.speculate
        self._dropped = False
        self._finished = False  # the result has its counts
        self._batches: queue.SimpleQueue[list[int] | None] = queue.SimpleQueue()
        self._thread: threading.Thread | None = None
        self._outcome: _BucketResult | BaseException | None = None

    def feed(self, chunk: list[_WireItem], carried: float) -> None:
        began = time.perf_counter()
        items, first = self.items, len(self.items)
        receive_ids, receive_segments = self._receiver.receive, self._segments_receiver.receive
        for order, part, extends, shared, values in chunk:
            if math.isnan(order[0]):
                order = (carried, order[1], order[2])
                values = values_with(values, timestamp=carried)
            request = TokenizedRequest(*values)
            self.chains.append(receive_ids(request, extends, part))
            whole = receive_segments(request, shared, part)
            self.segments.append(whole if shared else None)
            items.append(_Item(order, request))
        if self._streaming and chunk:
            held = self._held
            for index in range(first, len(items)):
                heapq.heappush(held, (items[index].order, index))
            earliest = min(items[index].order for index in range(first, len(items)))
            if self._last is not None and earliest < self._last:
                self._streaming = False  # the streamed replay stops at its next batch
                self._dropped = True
                self._batches.put(None)
            else:
                newest = max(items[index].order[0] for index in range(first, len(items)))
                self._newest = max(self._newest, newest)
                self._release(self._newest - SPECULATION_HOLD_SECONDS)
        self._shuffle_seconds += time.perf_counter() - began

    def _release(self, until: float) -> None:
        """Hand the held requests up to timestamp ``until`` to the streamed replay."""
        held, batch = self._held, []
        while held and held[0][0][0] <= until:
            batch.append(heapq.heappop(held)[1])
        if batch:
            self._last = self.items[batch[-1]].order
            self._batches.put(batch)
        self._start(self._batches)

    def close(self) -> None:
        """No more chunks: the streamed replay ends, or the whole bucket is replayed now."""
        if self._streaming:
            self._release(math.inf)
            self._batches.put(None)
            return
        if self._thread is not None:
            self._thread.join()  # a dropped speculation: its result is not used
            self._thread = None
        began = time.perf_counter()
        items = self.items
        order = sorted(range(len(items)), key=lambda index: items[index].order)
        self._shuffle_seconds += time.perf_counter() - began
        whole: queue.SimpleQueue[list[int] | None] = queue.SimpleQueue()
        whole.put(order)
        whole.put(None)
        self._start(whole)

    def result(self, timeout: float | None = None) -> _BucketResult | None:
        """The bucket's totals and rows after :meth:`close` (None: not done within
        ``timeout`` seconds); a replay's exception is raised here."""
        assert self._thread is not None, "result follows close"
        self._thread.join(timeout)
        if self._thread.is_alive():
            return None
        outcome = self._outcome
        if isinstance(outcome, BaseException):
            raise outcome
        assert outcome is not None
        if not self._finished:
            self._finished = True
            outcome.replayed = len(self.items)
            outcome.streamed = self._streaming and bool(self.items)
            outcome.dropped = self._dropped
            outcome.stages.shuffle += self._shuffle_seconds
        return outcome

    def abandon(self) -> None:
        """Stop a streamed replay (the pass failed)."""
        self._streaming = False
        self._batches.put(None)

    def _start(self, batches: queue.SimpleQueue[list[int] | None]) -> None:
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, args=(batches,), daemon=True)
            self._thread.start()

    def _run(self, batches: queue.SimpleQueue[list[int] | None]) -> None:
        try:
            self._outcome = self._replay(iter(batches.get, None), streamed=batches is self._batches)
        except BaseException as error:  # raised by ``result``
            self._outcome = error

    def _replay(self, batches: Iterator[list[int]], *, streamed: bool) -> _BucketResult:
        setup = self.setup
        bucket = _BucketResult([totals.fresh() for totals in setup.empty])
        began = time.perf_counter()
        current: list[PerRequestRow] = []
        previous_order: list[OrderKey] = [(0.0, 0, 0)]
        items, chains, segments = self.items, self.chains, self.segments
        waited = 0.0  # for the next chunk (not replay time)
        rebuilt = RebuiltIds()

        def ordered() -> Iterator[TokenizedRequest]:
            nonlocal waited
            while True:
                asked = time.perf_counter()
                batch = next(batches, None)
                waited += time.perf_counter() - asked
                if batch is None:
                    break
                if streamed and not self._streaming:
                    return  # dropped: replayed again, sorted
                for index in batch:
                    item = items[index]
                    if current:
                        bucket.rows.append((previous_order[0], list(current)))
                        current.clear()
                    previous_order[0] = item.order
                    chain, whole = chains[index], segments[index]
                    # The whole ids only while the request is replayed: the bucket holds tails.
                    changes: dict[str, Any] = {}
                    if chain is not None:
                        changes["tokens"] = rebuilt.ids(chain)
                    if whole is not None:
                        changes["segments"] = whole
                    yield with_changes(item.request, **changes) if changes else item.request
            if current:
                bucket.rows.append((previous_order[0], list(current)))
                current.clear()

        def progress(count: int) -> None:
            self.replayed += count

        self.replayed = 0
        with paced_collection():  # as in one process, where the pass's reading paces it
            replay_targets(
                ordered(),
                bucket.totals,
                ObservedModelMatcher(ContractStore(setup.database_url), setup.day),
                progress,
                current.append if setup.keep_rows else None,
                setup.auto_cache_control,
                explain=setup.explain_misses,
            )
        if setup.keep_rows:
            bucket.rows = [(order, [row.slim() for row in rows]) for order, rows in bucket.rows]
        bucket.stages.replay = time.perf_counter() - began - waited
        return bucket


@ray.remote(num_cpus=0)
class _Replayer:
    """Holds buckets of any number of passes and replays them (:class:`BucketReplay`).

    One process per CPU of the cluster (at most one per bucket), started by the first pass
    and kept by the ones after it (named, in the driver's job: gone with the driver). It
    asks for no CPU: it replays while the tokenizing tasks, which hold the CPUs, still run,
    and the host shares its cores between them."""

    def __init__(self) -> None:
        self._buckets: dict[tuple[str, int], BucketReplay] = {}

    def start(self, pass_id: str, buckets: list[int], setup: _ReplaySetup) -> None:
        for bucket in buckets:
            self._buckets[pass_id, bucket] = BucketReplay(setup)

    def feed(self, pass_id: str, carried: float, buckets: list[int], packed: bytes) -> None:
        chunks: list[list[_WireItem]] = pickle.loads(packed)  # from our own tasks: _packed
        for bucket, chunk in zip(buckets, chunks, strict=True):
            self._buckets[pass_id, bucket].feed(chunk, carried)

    def close(self, pass_id: str) -> None:
        for replay in self._of(pass_id):
            replay.close()

    def progress(self, pass_id: str) -> int:
        return sum(replay.replayed for replay in self._of(pass_id))

    def results(self, pass_id: str, timeout: float) -> tuple[int, list[_BucketResult] | None]:
        """The requests replayed so far, and every bucket's result once all are done
        (waiting up to ``timeout`` seconds for them)."""
        deadline = time.monotonic() + timeout
        done: list[_BucketResult] = []
        for replay in self._of(pass_id):
            result = replay.result(max(0.0, deadline - time.monotonic()))
            if result is None:
                return self.progress(pass_id), None
            done.append(result)
        self.abandon(pass_id)  # forgets the pass
        return sum(result.replayed for result in done), done

    def abandon(self, pass_id: str) -> None:
        for key in [key for key in self._buckets if key[0] == pass_id]:
            self._buckets.pop(key).abandon()

    def _of(self, pass_id: str) -> list[BucketReplay]:
        return [replay for (owner, _), replay in self._buckets.items() if owner == pass_id]


_REPLAYERS: dict[str, list[Any]] = {}  # by driver job: the handles keep the actors alive


def _replayers(count: int) -> list[Any]:
    """``count`` replayer actors, started once per driver (see :class:`_Replayer`). An
    actor lives while a handle to it does: the handles are kept for the driver's job."""
    context = ray.get_runtime_context()
    job = f"{context.get_job_id()}/{context.get_node_id()}"  # job ids restart with a cluster
    kept = _REPLAYERS.setdefault(job, [])
    while len(kept) < count:
        kept.append(
            _Replayer.options(  # type: ignore[attr-defined]
                name=f"cachecast-replayer-{len(kept)}",
                get_if_exists=True,
                scheduling_strategy="SPREAD",
            ).remote()
        )
    for other in [other for other in _REPLAYERS if other != job]:
        del _REPLAYERS[other]  # an earlier connection's (shut down)
    return kept[:count]


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
    return max(4 * _cluster_cpus(), 1)


class RayExecutor:
    """Runs each pass of ``estimate`` partitioned over a Ray cluster (see the module).

    ``buckets``: shuffle buckets per pass (default :func:`default_buckets`); ``part_bytes``: the
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
        if work.log.inline:
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
            work.log,
            self.part_bytes or default_part_bytes(work.log),
            split=not calibrated,
            taper=None if self.part_bytes else _cluster_cpus(),
        )
        stats = PassStats(
            len(parts),
            buckets,
            0,
            chunk_requests=self.chunk_requests,
        )
        # The policies read keys computed by the tokenizing tasks; explaining misses reads
        # the ids too (as a policy that matches ids does): they travel as a session's new
        # ids where a prompt extends the previous one (``ordering.PromptPacker``).
        needs = key_needs(policies)
        ids = needs.tokens or work.explain_misses
        setup = _ReplaySetup(
            empty,
            work.store.url,
            work.day,
            work.auto_cache_control,
            work.per_request is not None,
            work.explain_misses,
            speculate=len(work.log.files) == 1,
        )
        replayers = _replayers(min(buckets, _cluster_cpus()))
        owned = [list(range(number, buckets, len(replayers))) for number in range(len(replayers))]
        pass_id = uuid.uuid4().hex
        # What the replayers were handed: checked before their results are used (a chunk
        # lost on the way must fail the pass, never leave a bucket short).
        handed: list[Any] = []
        for replayer, its_buckets in zip(replayers, owned, strict=True):
            handed.append(replayer.start.remote(pass_id, its_buckets, setup))
        reported = [0] * len(replayers)

        def report(counts: list[int]) -> None:
            for number, count in enumerate(counts):
                if count > reported[number]:  # a dropped speculation counts again from 0
                    work.progress(count - reported[number])
                    reported[number] = count

        try:
            began = time.perf_counter()
            outcomes = self._shuffle(
                work, parts, unit, buckets, needs, ids, pass_id, replayers, handed
            )
            stats.tokenize_wall = time.perf_counter() - began
            began = time.perf_counter()
            for replayer in replayers:
                handed.append(replayer.close.remote(pass_id))
            _unwrapped(ray.get, handed)
            finished: list[_BucketResult] = []
            waiting = list(range(len(replayers)))
            while waiting:
                answers = _unwrapped(
                    ray.get,
                    [replayers[n].results.remote(pass_id, PROGRESS_POLL_SECONDS) for n in waiting],
                )
                counts = list(reported)
                for number, (count, results) in zip(waiting, answers, strict=True):
                    counts[number] = count
                    if results is not None:
                        finished.extend(results)
                report(counts)
                waiting = [
                    n for n, (_, results) in zip(waiting, answers, strict=True) if results is None
                ]
        except BaseException:
            for replayer in replayers:
                replayer.abandon.remote(pass_id)
            raise
        stats.replay_wall = time.perf_counter() - began
        began = time.perf_counter()
        stats.requests = sum(bucket.replayed for bucket in finished)
        merged = [totals.fresh() for totals in empty]
        for bucket in finished:
            stats.stages.add(bucket.stages)
            stats.streamed += bucket.streamed
            stats.replayed_again += bucket.dropped
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
        pass_id: str,
        replayers: list[Any],
        handed: list[Any],
    ) -> list[_PartOutcome]:
        """Run the tokenize-and-shuffle tasks, handing each chunk to the replayers as it
        comes, part after part in plan order; returns each part's outcome (in part order:
        bad lines by file in argument order, then line)."""
        owned = [list(range(number, buckets, len(replayers))) for number in range(len(replayers))]
        # A generator task returns an ObjectRefGenerator (Ray's stubs say ObjectRef).
        generators: list[Any] = [
            _tokenize_and_shuffle.remote(
                work.log,
                part,
                work.tokenizer_pass.tokenize_as,
                unit,
                owned,
                self.chunk_requests,
                needs,
                ids,
            )
            for part in parts
        ]
        per_chunk = len(replayers)

        def hand_on(chunk: list[Any], carried: float) -> None:
            for replayer, its_buckets, ref in zip(replayers, owned, chunk, strict=True):
                handed.append(replayer.feed.remote(pass_id, carried, its_buckets, ref))

        outcomes: list[_PartOutcome] = []
        last: dict[int, float] = {}  # the last timestamp of each file's parts so far
        for part, generator in zip(parts, generators, strict=True):
            # What one process reading the file from its start gives the part's records
            # that have no timestamp of their own nor an earlier one in the part.
            carried = last.get(part.file_index, 0.0)
            pending: list[Any] = []
            for ref in generator:
                pending.append(ref)
                if len(pending) > per_chunk:  # a whole chunk, and more after it
                    hand_on(pending[:per_chunk], carried)
                    del pending[:per_chunk]
            *chunk, outcome_ref = pending  # the last chunk (if any) and the outcome
            outcome: _PartOutcome = _unwrapped(ray.get, [outcome_ref])[0]
            if chunk:
                hand_on(chunk, carried)
            outcomes.append(outcome)
            if not math.isnan(outcome.last_timestamp):
                last[part.file_index] = outcome.last_timestamp
        return outcomes


def default_part_bytes(log: LogInput) -> int:
    """``PARTS_PER_CPU`` parts per CPU of the cluster over the whole log, at least
    :data:`MIN_PART_BYTES` each."""
    cpus = _cluster_cpus()
    total = sum(file.path.stat().st_size for file in log.files)
    return max(MIN_PART_BYTES, -(-total // max(PARTS_PER_CPU * cpus, 1)))


def plan_parts(
    log: LogInput, part_bytes: int, *, split: bool = True, taper: int | None = None
) -> list[_Part]:
    """Every file as one part, except (``split``) cachecast JSON lines over ``part_bytes``,
    cut into ranges of about that size (see ``logs.ranges``); ``taper``: a log of one file
    is cut into parts that get smaller towards its end instead, for that many CPUs
    (:func:`tapered_cuts`)."""
    parts: list[_Part] = []
    for file_index, file in enumerate(log.files):
        ranges: list[LineRange | None] = [None]
        size = file.path.stat().st_size
        if split and size > part_bytes and file.results is None and _splittable(log, file_index):
            if taper is not None and len(log.files) == 1:
                ranges = list(split_at(file.path, tapered_cuts(size, taper, MIN_PART_BYTES)))
            else:
                ranges = list(split_lines(file.path, -(-size // part_bytes)))
        parts.extend(_Part(len(parts) + n, file_index, lines) for n, lines in enumerate(ranges))
    return parts


def tapered_cuts(size: int, cpus: int, smallest: int) -> list[int]:
    """Byte offsets that cut ``size`` bytes into parts, each ``1 / (2 * cpus)`` of the bytes
    from its start on, down to ``smallest`` (guided self-scheduling).

    Why: a one-file pass replays its parts in file order while later ones are tokenized, so
    the chunks of a part that is tokenized beside an earlier one wait until that one is
    done, and what the last parts hold is replayed after every CPU has finished
    tokenizing: the pass's tail. Equal parts leave ``1 / parts`` of the log to that tail;
    tapered ones a part of ``smallest`` bytes or so, at the cost of a few more parts (each
    starts its sessions' prompts afresh)."""
    cuts: list[int] = []
    position = 0
    while True:
        remaining = size - position
        step = remaining // max(2 * cpus, 1)
        if step < smallest:  # the rest in equal parts of ``smallest`` bytes at least
            count = max(remaining // max(smallest, 1), 1)
            cuts += [position + remaining * number // count for number in range(1, count)]
            return cuts
        position += step
        cuts.append(position)


def _splittable(log: LogInput, file_index: int) -> bool:
    file = log.files[file_index]
    if file.format is not None:
        return file.format in SPLITTABLE_FORMATS
    try:
        found, _ = detect_format(file.path)  # from the file's first lines (no parse of it all)
    except LogFileError:
        return False  # the part's task reports it as one process would
    return found.name in SPLITTABLE_FORMATS


def _cluster_cpus() -> int:
    return max(int(ray.cluster_resources().get("CPU", 1)), 1)  # type: ignore[no-untyped-call]


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
