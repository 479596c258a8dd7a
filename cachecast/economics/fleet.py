"""A fleet of K self-hosted vLLM replicas under each routing policy, priced and timed.

``fleet`` is what ``cachecast fleet`` calls. It

1. sizes one replica as ``compare`` does (:mod:`capacity`): KV blocks after weights, at the
   log's mean decode context;
2. replays the log through the simulator's fleet (:mod:`cachecast.simulator.routing`): K
   vLLM prefix caches of that many blocks each, behind one routing policy, giving every
   request its replica and its cached prefix;
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

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np

from cachecast.economics.capacity import (
    DEFAULT_GPU_MEMORY_UTILIZATION,
    Capacity,
    Deployment,
)
from cachecast.economics.compare import (
    DEFAULT_MAX_NUM_SEQS,
    ComparisonError,
    decode_seconds_per_token,
    gpu_hours_of,
    money,
    reporting_progress,
    size_deployment,
)
from cachecast.economics.geometry import ModelGeometry
from cachecast.economics.hardware import Accelerator
from cachecast.economics.timing import (
    FloatArray,
    pollaczek_khinchine_wait,
    prefill_seconds_many,
)
from cachecast.simulator import build_policy
from cachecast.simulator.policies import VllmPrefixCache
from cachecast.simulator.routing import DEFAULT_WINDOW_SECONDS, Fleet, FleetReport, Routing
from cachecast.tokenizers import LogError
from cachecast.tokenizers.types import TokenizedRequest

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


@dataclass(slots=True)
class ReplicaTiming:
    """One replica's share of the log, timed."""

    requests: int
    input_tokens: int
    hit_tokens: int
    busy_seconds: float
    arrival_rate_per_s: float | None
    utilization: float | None
    queue_wait_s: float | None
    prefill_seconds: FloatArray

    def to_json(self) -> dict[str, Any]:
        prefill_mean = float(self.prefill_seconds.mean()) if self.requests else None
        ttft = (
            None
            if self.queue_wait_s is None or prefill_mean is None
            else (self.queue_wait_s + prefill_mean) * 1000
        )
        return {
            "requests": self.requests,
            "input_tokens": self.input_tokens,
            "hit_tokens": self.hit_tokens,
            "computed_tokens": self.input_tokens - self.hit_tokens,
            "hit_rate": self.hit_tokens / self.input_tokens if self.input_tokens else 0.0,
            "busy_seconds": self.busy_seconds,
            "arrival_rate_per_s": self.arrival_rate_per_s,
            "utilization": self.utilization,
            "saturated": self.utilization is not None and self.utilization >= 1,
            "queue_wait_mean_ms": None if self.queue_wait_s is None else self.queue_wait_s * 1000,
            "prefill_mean_ms": None if prefill_mean is None else prefill_mean * 1000,
            "ttft_mean_ms": ttft,
        }


@dataclass(slots=True)
class PolicyResult:
    """One routing policy over the log: the simulator's report plus time and money."""

    routing: Routing
    simulation: FleetReport
    replicas: list[ReplicaTiming]
    ttft_mean_s: float | None
    ttft_p90_s: float | None
    makespan_s: float
    gpu_hours: Decimal
    busy_gpu_hours: Decimal
    cost: Decimal | None
    busy_cost: Decimal | None

    @property
    def saturated_replicas(self) -> list[int]:
        return [
            index
            for index, replica in enumerate(self.replicas)
            if replica.utilization is not None and replica.utilization >= 1
        ]

    def to_json(self) -> dict[str, Any]:
        report = self.simulation
        input_tokens = report.input_tokens

        def per_million(cost: Decimal | None) -> str | None:
            if cost is None or input_tokens == 0:
                return None
            return str(money(cost * 1_000_000 / input_tokens))

        return {
            "routing": str(self.routing),
            "options": report.options,
            "input_tokens": input_tokens,
            "hit_tokens": report.hit_tokens,
            "hit_rate": report.hit_rate,
            "computed_tokens": input_tokens - report.hit_tokens,
            "imbalance": report.imbalance,
            "ttft_ms": {
                "mean": None if self.ttft_mean_s is None else self.ttft_mean_s * 1000,
                "p90": None if self.ttft_p90_s is None else self.ttft_p90_s * 1000,
            },
            "saturated_replicas": self.saturated_replicas,
            "makespan_s": self.makespan_s,
            "gpu_hours": str(self.gpu_hours),
            "busy_gpu_hours": str(self.busy_gpu_hours),
            "cost": None if self.cost is None else str(self.cost),
            "busy_cost": None if self.busy_cost is None else str(self.busy_cost),
            "cost_per_million_input_tokens": per_million(self.cost),
            "replicas": [replica.to_json() for replica in self.replicas],
        }


@dataclass(slots=True)
class FleetComparison:
    """Every routing policy asked for, on the same fleet and log."""

    deployment: Deployment
    capacity: Capacity
    replica_count: int
    gpu_price: Decimal | None
    log: dict[str, Any]
    policies: list[PolicyResult]
    assumptions: list[str]
    errors: list[LogError] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {
            "inputs": {
                "sources": self.log["sources"],
                "model": self.deployment.model.name,
                "accelerator": self.deployment.accelerator.label,
                "gpus_per_replica": self.deployment.gpus,
                "replicas": self.replica_count,
                "routing": [str(result.routing) for result in self.policies],
                "gpu_price_per_hour": None if self.gpu_price is None else str(self.gpu_price),
                "kv_dtype": self.deployment.kv_dtype,
                "block_size": self.deployment.block_size,
                "num_blocks_per_replica": self.capacity.num_blocks,
                "kv_capacity_tokens_per_replica": self.capacity.kv_capacity_tokens,
            },
            "deployment": self.deployment.describe(),
            "capacity": self.capacity.to_json(),
            "log": self.log,
            "timing_source": "roofline model: max(FLOPs/peak, bytes/bandwidth) per prefill,"
            " memory-bound decode ceiling; no vLLM measurement",
            "definitions": DEFINITIONS,
            "policies": [result.to_json() for result in self.policies],
            "skipped_lines": len({(error.file, error.line) for error in self.errors}),
            "assumptions": self.assumptions,
        }


def fleet(
    sources: Sequence[Path] | Iterable[TokenizedRequest],
    *,
    model: ModelGeometry,
    accelerator: Accelerator,
    replicas: int,
    routings: Sequence[Routing] = tuple(Routing),
    gpus: int = 1,
    gpu_price: Decimal | None = None,
    kv_dtype: str = "bf16",
    weight_dtype: str | None = None,
    block_size: int | None = None,
    gpu_memory_utilization: Fraction = DEFAULT_GPU_MEMORY_UTILIZATION,
    max_num_seqs: int = DEFAULT_MAX_NUM_SEQS,
    window_seconds: float = DEFAULT_WINDOW_SECONDS,
    tokenizer_model: str | None = None,
    progress: Callable[[int], None] | None = None,
) -> FleetComparison:
    """Route ``sources`` over ``replicas`` replicas of ``gpus`` x ``accelerator`` under each
    of ``routings``; hit rate, load, TTFT, GPU-hours and (with ``gpu_price``) cost."""
    if replicas < 1:
        raise ComparisonError(f"replicas must be >= 1, got {replicas}")
    if not routings:
        raise ComparisonError("no routing policy given")
    if gpu_price is not None and gpu_price < 0:
        raise ComparisonError(f"--gpu-price must be >= 0, got {gpu_price}")
    sized = size_deployment(
        sources,
        tokenizer_model=tokenizer_model,
        block_size=block_size,
        model=model,
        accelerator=accelerator,
        gpus=gpus,
        kv_dtype=kv_dtype,
        weight_dtype=weight_dtype,
        gpu_memory_utilization=gpu_memory_utilization,
    )
    requests, paths, errors = sized.requests, sized.paths, sized.errors
    size, deployment, kv = sized.block_size, sized.deployment, sized.capacity
    inputs, outputs, duration = sized.inputs, sized.outputs, sized.duration
    decode_context = sized.decode_context
    decode_per_token = decode_seconds_per_token(
        deployment, min(kv.max_concurrent_requests, max_num_seqs), decode_context
    )

    def make_replica() -> VllmPrefixCache:
        replica = build_policy("vllm", None, block_size=size, capacity_blocks=kv.num_blocks)
        assert isinstance(replica, VllmPrefixCache)
        return replica

    results = []
    for routing in routings:
        simulated = Fleet(
            [make_replica() for _ in range(replicas)], routing, window_seconds=window_seconds
        )
        placed = np.empty(len(requests), dtype=np.int64)
        cached = np.empty(len(requests), dtype=np.float64)
        for index, request in enumerate(reporting_progress(requests, progress)):
            placed[index], usage = simulated.process(request)
            cached[index] = usage.cache_read_tokens
        results.append(
            _time_policy(
                simulated.report(),
                deployment,
                placed,
                cached,
                inputs,
                outputs,
                decode_per_token,
                duration,
                gpu_price,
            )
        )
    log_summary: dict[str, Any] = {
        "sources": [str(p) for p in paths] if paths is not None else ["<requests>"],
        "requests": len(requests),
        "input_tokens": int(inputs.sum()),
        "output_tokens": int(outputs.sum()),
        "duration_s": duration,
        "arrival_rate_per_s": len(requests) / duration if duration > 0 else None,
        "mean_decode_context_tokens": decode_context,
        "block_size": size,
    }
    assumptions = [
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
    return FleetComparison(
        deployment=deployment,
        capacity=kv,
        replica_count=replicas,
        gpu_price=gpu_price,
        log=log_summary,
        policies=results,
        assumptions=assumptions,
        errors=errors,
    )


def _time_policy(
    report: FleetReport,
    deployment: Deployment,
    placed: np.ndarray[Any, np.dtype[np.int64]],
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
        timings.append(
            ReplicaTiming(
                requests=stats.requests,
                input_tokens=stats.input_tokens,
                hit_tokens=stats.hit_tokens,
                busy_seconds=busy,
                arrival_rate_per_s=rate,
                utilization=utilization,
                queue_wait_s=wait,
                prefill_seconds=prefill[mine],
            )
        )
    busiest = max(timing.busy_seconds for timing in timings)
    makespan = max(duration, busiest)
    gpu_hours = gpu_hours_of(len(timings) * makespan, deployment.gpus)
    busy_gpu_hours = gpu_hours_of(sum(timing.busy_seconds for timing in timings), deployment.gpus)
    return PolicyResult(
        routing=report.routing,
        simulation=report,
        replicas=timings,
        ttft_mean_s=None if saturated else float(ttft.mean()),
        ttft_p90_s=None if saturated else float(np.percentile(ttft, 90)),
        makespan_s=makespan,
        gpu_hours=gpu_hours,
        busy_gpu_hours=busy_gpu_hours,
        cost=None if gpu_price is None else money(gpu_hours * gpu_price),
        busy_cost=None if gpu_price is None else money(busy_gpu_hours * gpu_price),
    )


def format_table_rows(comparison: FleetComparison) -> list[list[str]]:
    """The summary table, header first: one row per routing policy."""
    rows = [
        [
            "routing",
            "hit rate",
            "imbalance",
            "busiest util.",
            "TTFT mean ms",
            "TTFT p90 ms",
            "GPU-h",
            "cost",
        ]
    ]
    for result in comparison.policies:
        busiest = max((r.utilization or 0.0) for r in result.replicas)
        rows.append(
            [
                str(result.routing),
                f"{result.simulation.hit_rate:.1%}",
                f"{result.simulation.imbalance:.3f}",
                f"{busiest:.1%}",
                "saturated" if result.ttft_mean_s is None else f"{result.ttft_mean_s * 1000:,.1f}",
                "saturated" if result.ttft_p90_s is None else f"{result.ttft_p90_s * 1000:,.1f}",
                str(result.gpu_hours),
                "-" if result.cost is None else f"${result.cost}",
            ]
        )
    return rows
