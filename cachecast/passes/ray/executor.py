"""The executor of distributed passes: :class:`RayExecutor` (see the package for the stages).

It joins or starts the cluster (:func:`connect`), plans the parts (:mod:`planning`), starts
the tokenize-and-shuffle tasks (:mod:`shipping`), hands every chunk to its buckets' replayer
(:mod:`replayers`) as it comes, and merges the buckets' totals and rows.
"""

from __future__ import annotations

import heapq
import math
import os
import time
import uuid
from collections.abc import Callable
from typing import Any

import ray

from cachecast.core.errors import BadInputError, Location
from cachecast.core.identity import SCOPE_KEY_ENV, scope_key
from cachecast.passes.executors import PassOutcome, PassWork
from cachecast.passes.ray.planning import (
    LogPart,
    cluster_cpus,
    default_part_bytes,
    plan_parts,
)
from cachecast.passes.ray.replayers import BucketResult, ReplaySetup, replayer_actors
from cachecast.passes.ray.shipping import PartOutcome, tokenize_and_shuffle
from cachecast.passes.ray.stats import PassStats
from cachecast.simulator.compact import KeyNeeds, key_needs
from cachecast.simulator.distributed.local_cluster import bind_local_cluster_to_loopback
from cachecast.simulator.distributed.partition import common_unit
from cachecast.simulator.pricing import target_policy
from cachecast.tokenizers import calibration as calibrating
from cachecast.tokenizers import get_tokenizer

# Small enough that a part streams to its replay while it is read (a chunk a few tens of
# milliseconds of tokenizing), large enough that a chunk's fixed cost is small.
DEFAULT_CHUNK_REQUESTS = 256
PROGRESS_POLL_SECONDS = 0.2


def connect(address: str | None, *, object_store_bytes: int | None = None) -> None:
    """Join the cluster at ``address``, or start a local one (no address) if none is up."""
    if ray.is_initialized():
        return
    if address:
        # The workers of a remote cluster hash identity fields with this run's key, so that
        # one scope stays one scope on every node (core.identity).
        key = {SCOPE_KEY_ENV: scope_key()}
        ray.init(address=address, log_to_driver=False, runtime_env={"env_vars": key})
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
    return max(4 * cluster_cpus(), 1)


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
        # earlier usage applies to later records, a segment keeps the size first fitted to
        # it), one calibration per cache: its files are read whole and together, in the
        # order one process reads them, never cut into parts that would each start
        # uncalibrated or size a shared prefix apart (docs/predictions.md, calibration).
        calibrated = not get_tokenizer(work.tokenizer_pass.tokenize_as).exact
        parts = plan_parts(
            work.log,
            self.part_bytes or default_part_bytes(work.log),
            split=not calibrated,
            taper=None if self.part_bytes else cluster_cpus(),
            together=calibrated,
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
        setup = ReplaySetup(
            empty,
            work.store.url,
            work.day,
            work.auto_cache_control,
            work.per_request is not None,
            work.explain_misses,
            speculate=len(work.log.files) == 1,
        )
        replayers = replayer_actors(min(buckets, cluster_cpus()))
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
            finished: list[BucketResult] = []
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
        elsewhere: dict[str, int] = {}
        for outcome in outcomes:
            for name, count in outcome.requests_by_source.items():
                requests_by_source[name] += count
            for name, count in (outcome.counted_elsewhere or {}).items():
                elsewhere[name] = elsewhere.get(name, 0) + count
            stats.stages.add(outcome.stages)
        stats.merge_wall = time.perf_counter() - began
        stats.stages.merge += stats.merge_wall
        self.stats.append(stats)
        return PassOutcome(
            merged,
            [error for outcome in outcomes for error in outcome.errors],
            requests_by_source,
            calibrating.merged([outcome.calibration or {} for outcome in outcomes]),
            elsewhere,
        )

    def _shuffle(
        self,
        work: PassWork,
        parts: list[LogPart],
        unit: int,
        buckets: int,
        needs: KeyNeeds,
        ids: bool,
        pass_id: str,
        replayers: list[Any],
        handed: list[Any],
    ) -> list[PartOutcome]:
        """Run the tokenize-and-shuffle tasks, handing each chunk to the replayers as it
        comes, part after part in plan order; returns each part's outcome (in part order:
        bad lines by file in argument order, then line)."""
        owned = [list(range(number, buckets, len(replayers))) for number in range(len(replayers))]
        # A generator task returns an ObjectRefGenerator (Ray's stubs say ObjectRef).
        generators: list[Any] = [
            tokenize_and_shuffle.remote(
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

        outcomes: list[PartOutcome] = []
        last: dict[int | None, float] = {}  # the last timestamp of each file's parts so far
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
            outcome: PartOutcome = _unwrapped(ray.get, [outcome_ref])[0]
            if chunk:
                hand_on(chunk, carried)
            outcomes.append(outcome)
            if not math.isnan(outcome.last_timestamp):
                last[part.file_index] = outcome.last_timestamp
        return outcomes


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
