"""A fleet of K self-hosted vLLM replicas under each routing policy, priced and timed.

:func:`route_fleet` is the math behind ``cachecast fleet``. From a log sized as ``compare``
sizes it (:func:`sizing.size_deployment`: one replica's KV blocks after weights, at the
log's mean decode context), it

1. takes that replica as the unit of the fleet;
2. replays the log, in one more pass after the sizing's (the replay order of every other
   command: timestamp order within the reorder window), through the simulator's fleet
   (:mod:`cachecast.simulator.routing`) of every routing policy at once: K vLLM prefix
   caches of that many blocks each behind each policy, giving every request its replica and
   its cached prefix under each. The memory is the fleets' live cache states and the
   reorder window, which holds each request as its block keys (and, for prefix-hash
   routing, its first block's ids: what that router hashes), not the log;
3. times every request with the same roofline prefill and fully-batched decode that
   ``compare`` uses, and queues it on its own replica: each replica is an M/G/1 queue fed at
   its own arrival rate (requests routed to it / the log's span) with its own service times;
4. turns the fleet's time into GPU-hours and cost.

Definitions (also in the JSON):

- hit rate: hit tokens / input tokens over the whole log, cold start (the simulator's);
- load of a replica: prompt tokens it computed (input - hit); imbalance = max / mean load;
- TTFT of a request: its replica's M/G/1 (Pollaczek-Khinchine) mean queue wait + its own
  prefill. The mean is over requests; p90 is over requests of that sum (the spread of the
  wait itself is not modelled). A replica at or above 100% busy has no steady state: its
  wait and the fleet's TTFT are reported as null and the replica listed as saturated;
- makespan: the fleet is held for the log's span, or for the busiest replica's busy time if
  that is longer (it cannot finish its share sooner); fleet GPU-hours = K x GPUs per replica
  x makespan; busy GPU-hours = the GPU time actually used (what a perfectly packed fleet
  would pay). Cost = GPU-hours x $/GPU-hour, Decimal, GPU-hours rounded to 1e-6 h.
"""

from __future__ import annotations

from array import array
from collections.abc import Sequence
from dataclasses import dataclass
from decimal import Decimal

import numpy as np
import numpy.typing as npt

from cachecast.core.errors import Location
from cachecast.economics.capacity import DEFAULT_MAX_NUM_SEQS, Deployment
from cachecast.economics.errors import ComparisonError
from cachecast.economics.gpu_hours import check_gpu_price, gpu_hours_of, round_dollars
from cachecast.economics.pools import (
    block_key_prepare,
    check_all_read,
    check_same_request,
    vllm_pool,
)
from cachecast.economics.sizing import SizedLog
from cachecast.economics.timing import (
    FloatArray,
    decode_seconds_per_token,
    pollaczek_khinchine_wait,
    prefill_seconds_many,
)
from cachecast.simulator.routing import DEFAULT_WINDOW_SECONDS, Fleet, Routing, RoutingStats

DEFINITIONS = {
    "hit_rate": "hit tokens / input tokens over the whole log, cold start",
    "load": "prompt tokens a replica computed (input - hit)",
    "imbalance": "max / mean of prompt tokens computed per replica (1.0 = even)",
    "ttft": "per request: its replica's M/G/1 (Pollaczek-Khinchine) mean queue wait + its own"
    " roofline prefill; mean and p90 over requests; null when a replica is saturated",
    "makespan_s": "max(log span, busiest replica's busy seconds)",
    "gpu_hours": "replicas x GPUs per replica x makespan",
    "busy_gpu_hours": "GPU time used: sum of every replica's busy seconds x GPUs per replica",
    "service_seconds": "prefill (roofline) + output tokens x decode time per token at the"
    " fully batched decode ceiling, as compare's full-utilization figure",
}


@dataclass(frozen=True, slots=True)
class ReplicaTiming:
    """One replica's share of the log, timed."""

    requests: int
    input_tokens: int
    hit_tokens: int
    computed_tokens: int
    hit_rate: float
    busy_seconds: float
    arrival_rate_per_s: float | None
    utilization: float | None
    saturated: bool
    queue_wait_mean_ms: float | None
    prefill_mean_ms: float | None
    ttft_mean_ms: float | None


@dataclass(frozen=True, slots=True)
class Ttft:
    """Time to first token over the fleet's requests, in milliseconds (None: saturated)."""

    mean: float | None
    p90: float | None


@dataclass(frozen=True, slots=True)
class PolicyResult:
    """One routing policy over the log: the simulator's hits plus time and money."""

    routing: Routing
    options: dict[str, float | int]
    input_tokens: int
    hit_tokens: int
    hit_rate: float
    computed_tokens: int
    imbalance: float
    ttft_ms: Ttft
    saturated_replicas: list[int]
    makespan_s: float
    gpu_hours: Decimal
    busy_gpu_hours: Decimal
    cost: Decimal | None
    busy_cost: Decimal | None
    cost_per_million_input_tokens: Decimal | None
    replicas: list[ReplicaTiming]


def fleet_assumptions(window_seconds: float) -> list[str]:
    """What the fleet's figures assume, in words (the report lists them)."""
    return [
        "each replica: the simulator's vLLM prefix cache with capacity_blocks = the KV"
        " capacity of one replica (compare's sizing), requests replayed one at a time",
        "routing load for least-loaded / sticky / cache-aware: computed prompt tokens over a"
        f" sliding {window_seconds:g} s window (the simulator's definition)",
        "prefill: roofline ceiling; decode: memory-bound ceiling at the fully batched"
        " min(KV-limited concurrency, max_num_seqs), as compare's full-utilization figure",
        "queueing: each replica an M/G/1 queue at its own arrival rate over the log's span;"
        " the wait's spread is not modelled (p90 TTFT = mean wait + p90 of prefill mix)",
        "GPU-hours are model outputs rounded to 1e-6 h; money is exact Decimal from them",
    ]


def check_fleet_options(replicas: int, window_seconds: float, gpu_price: Decimal | None) -> None:
    """The options of :func:`route_fleet` that need no log, checked (a caller may check them
    before reading one)."""
    if replicas < 1:
        raise ComparisonError(f"must be >= 1, got {replicas}", location=Location(field="replicas"))
    if not window_seconds > 0:
        raise ComparisonError(
            f"must be positive, got {window_seconds}", location=Location(field="window_seconds")
        )
    check_gpu_price(gpu_price)


def route_fleet(
    sized: SizedLog,
    *,
    replicas: int,
    routings: Sequence[Routing] = tuple(Routing),
    gpu_price: Decimal | None = None,
    max_num_seqs: int = DEFAULT_MAX_NUM_SEQS,
    window_seconds: float = DEFAULT_WINDOW_SECONDS,
) -> list[PolicyResult]:
    """Route the sized log (read once more) over ``replicas`` replicas of its deployment
    under each of ``routings`` at once; hit rate, load, TTFT, GPU-hours and (with
    ``gpu_price``) cost."""
    if not routings:
        raise ComparisonError("no routing policy given", location=Location(field="routings"))
    check_fleet_options(replicas, window_seconds, gpu_price)
    size, deployment, kv = sized.block_size, sized.deployment, sized.capacity
    decode_per_token = decode_seconds_per_token(
        deployment, min(kv.max_concurrent_requests, max_num_seqs), sized.decode_context
    )
    fleets = [
        Fleet(
            [vllm_pool(size, kv.num_blocks) for _ in range(replicas)],
            routing,
            window_seconds=window_seconds,
        )
        for routing in routings
    ]
    hashed = [fleet.prefix_tokens for fleet in fleets if fleet.routing is Routing.prefix_hash]
    prepare = block_key_prepare(size, prefix_tokens=max(hashed, default=0))
    placed: list[array[int]] = [array("q") for _ in fleets]
    cached: list[array[float]] = [array("d") for _ in fleets]
    steps = list(zip((fleet.process for fleet in fleets), placed, cached, strict=True))
    count = 0
    for request in sized.log.read(prepare):
        check_same_request(request, count, sized)
        count += 1
        for process, replica_of, hits in steps:
            replica, usage = process(request)
            replica_of.append(replica)
            hits.append(usage.cache_read_tokens)
    check_all_read(count, sized)
    return [
        _time_policy(
            fleet.report(),
            deployment,
            np.frombuffer(replica_of, dtype=np.int64),
            np.frombuffer(hits, dtype=np.float64),
            sized.inputs,
            sized.outputs,
            decode_per_token,
            sized.duration,
            gpu_price,
        )
        for fleet, replica_of, hits in zip(fleets, placed, cached, strict=True)
    ]


def _time_policy(
    report: RoutingStats,
    deployment: Deployment,
    placed: npt.NDArray[np.int64],
    cached: FloatArray,
    inputs: FloatArray,
    outputs: FloatArray,
    decode_per_token: float,
    duration: float,
    gpu_price: Decimal | None,
) -> PolicyResult:
    prefill = prefill_seconds_many(deployment, cached, inputs - cached)
    service = prefill + outputs * decode_per_token
    ttft = np.empty_like(prefill)
    timings = []
    saturated = False
    for index, stats in enumerate(report.replicas):
        mine = placed == index
        busy = float(service[mine].sum())
        rate = stats.requests / duration if duration > 0 else None
        utilization = busy / duration if duration > 0 else None
        wait = (
            None
            if rate is None or utilization is None
            else pollaczek_khinchine_wait(rate, service[mine], utilization)
        )
        if wait is None:
            saturated = True
        else:
            ttft[mine] = wait + prefill[mine]
        prefill_mean = float(prefill[mine].mean()) if stats.requests else None
        timings.append(
            ReplicaTiming(
                requests=stats.requests,
                input_tokens=stats.input_tokens,
                hit_tokens=stats.hit_tokens,
                computed_tokens=stats.input_tokens - stats.hit_tokens,
                hit_rate=stats.hit_tokens / stats.input_tokens if stats.input_tokens else 0.0,
                busy_seconds=busy,
                arrival_rate_per_s=rate,
                utilization=utilization,
                saturated=utilization is not None and utilization >= 1,
                queue_wait_mean_ms=None if wait is None else wait * 1000,
                prefill_mean_ms=None if prefill_mean is None else prefill_mean * 1000,
                ttft_mean_ms=(
                    None if wait is None or prefill_mean is None else (wait + prefill_mean) * 1000
                ),
            )
        )
    busiest = max(timing.busy_seconds for timing in timings)
    makespan = max(duration, busiest)
    gpu_hours = gpu_hours_of(len(timings) * makespan, deployment.gpus)
    busy_gpu_hours = gpu_hours_of(sum(timing.busy_seconds for timing in timings), deployment.gpus)
    cost = None if gpu_price is None else round_dollars(gpu_hours * gpu_price)
    input_tokens = report.input_tokens
    return PolicyResult(
        routing=report.routing,
        options=dict(report.options),
        input_tokens=input_tokens,
        hit_tokens=report.hit_tokens,
        hit_rate=report.hit_rate,
        computed_tokens=input_tokens - report.hit_tokens,
        imbalance=report.imbalance,
        ttft_ms=Ttft(
            mean=None if saturated else float(ttft.mean()) * 1000,
            p90=None if saturated else float(np.percentile(ttft, 90)) * 1000,
        ),
        saturated_replicas=[index for index, timing in enumerate(timings) if timing.saturated],
        makespan_s=makespan,
        gpu_hours=gpu_hours,
        busy_gpu_hours=busy_gpu_hours,
        cost=cost,
        busy_cost=None if gpu_price is None else round_dollars(busy_gpu_hours * gpu_price),
        cost_per_million_input_tokens=(
            None
            if cost is None or input_tokens == 0
            else round_dollars(cost * 1_000_000 / input_tokens)
        ),
        replicas=timings,
    )
