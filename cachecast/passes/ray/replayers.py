"""The replay stage: each bucket replayed in the single-process order, on replayer actors.

A :class:`BucketReplay` is one bucket of one pass, fed the chunks of every part
(:mod:`shipping`) and replayed through every target's policy with the same priced replay as
one process (``simulator.pricing.replay_targets``). A replayer actor
(:func:`replayer_actors`) holds the buckets of any number of passes.
"""

from __future__ import annotations

import datetime as dt
import heapq
import math
import pickle
import queue
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import ray

from cachecast.contracts import ContractStore
from cachecast.core.gc_pacing import paced_collection
from cachecast.passes.ray.shipping import OrderKey, SegmentsReceiver, WireItem
from cachecast.passes.ray.stats import StageSeconds
from cachecast.simulator.ordering import Extension, ExtensionReceiver, RebuiltIds
from cachecast.simulator.pricing import (
    ObservedModelMatcher,
    PerRequestRow,
    TargetTotals,
    replay_targets,
)
from cachecast.tokenizers.types import Segment, TokenizedRequest, values_with, with_changes

SPECULATION_HOLD_SECONDS = 60.0  # of log time (see ``BucketReplay``)


@dataclass(slots=True)
class _Item:
    """One compact request in its bucket (its ids the new ones only where it extends its
    session's previous prompt: ``BucketReplay.chains`` holds how to rebuild them)."""

    order: OrderKey
    request: TokenizedRequest


@dataclass(slots=True)
class BucketResult:
    """One bucket of one pass, replayed: its targets' totals, its per-request rows (in
    single-process order), its stage seconds and how its replay went."""

    totals: list[TargetTotals]
    replayed: int = 0
    rows: list[tuple[OrderKey, list[PerRequestRow]]] = field(default_factory=list)
    stages: StageSeconds = field(default_factory=StageSeconds)
    streamed: bool = False  # replayed as its chunks came, kept
    dropped: bool = False  # replayed as its chunks came, then again, sorted


@dataclass(frozen=True, slots=True)
class ReplaySetup:
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

    def __init__(self, setup: ReplaySetup) -> None:
        self.setup = setup
        self.items: list[_Item] = []
        self.chains: list[Extension | None] = []
        self._receiver = ExtensionReceiver()
        self.segments: list[tuple[Segment, ...] | None] = []  # None: the request's own
        self._segments_receiver = SegmentsReceiver()
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
        self._outcome: BucketResult | BaseException | None = None

    def feed(self, chunk: list[WireItem], carried: float) -> None:
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

    def result(self, timeout: float | None = None) -> BucketResult | None:
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

    def _replay(self, batches: Iterator[list[int]], *, streamed: bool) -> BucketResult:
        setup = self.setup
        bucket = BucketResult([totals.fresh() for totals in setup.empty])
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

    def start(self, pass_id: str, buckets: list[int], setup: ReplaySetup) -> None:
        for bucket in buckets:
            self._buckets[pass_id, bucket] = BucketReplay(setup)

    def feed(self, pass_id: str, carried: float, buckets: list[int], packed: bytes) -> None:
        # From our own tasks (shipping.pack_chunks): nothing else reaches a replayer.
        chunks: list[list[WireItem]] = pickle.loads(packed)
        for bucket, chunk in zip(buckets, chunks, strict=True):
            self._buckets[pass_id, bucket].feed(chunk, carried)

    def close(self, pass_id: str) -> None:
        for replay in self._of(pass_id):
            replay.close()

    def progress(self, pass_id: str) -> int:
        return sum(replay.replayed for replay in self._of(pass_id))

    def results(self, pass_id: str, timeout: float) -> tuple[int, list[BucketResult] | None]:
        """The requests replayed so far, and every bucket's result once all are done
        (waiting up to ``timeout`` seconds for them)."""
        deadline = time.monotonic() + timeout
        done: list[BucketResult] = []
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


def replayer_actors(count: int) -> list[Any]:
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
