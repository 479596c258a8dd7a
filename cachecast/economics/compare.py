"""Self-hosted vLLM for a prompt log: hit rate, GPU time, GPU-hours and cost. The formulas
and their sources are in docs/economics.md.

``compare_self_hosted`` takes the log (a :class:`~cachecast.economics.sizing.RequestLog`:
read twice, each time in the replay order of every other command, timestamp order within the
reorder window; or a list of requests, sorted by timestamp) and

1. sizes the deployment (:func:`sizing.size_deployment`: KV blocks after weights, from a
   first pass that keeps only numbers per request and the trace's block size);
2. replays the log, in one more pass, through the simulator's vLLM prefix-cache policy with
   ``num_blocks`` equal to that capacity, giving each request's cached prefix C
   (self-hosted hit rate), and at once through the same policy at every other capacity
   asked for, unbounded, and with the host tier (:func:`pools.replay_pools`: each request
   goes to every pool in turn, so the memory is the pools' live cache states and the
   reorder window, not the log);
3. times every request with the roofline model (:mod:`timing`): prefill(C, S) and decode at
   the batch the deployment sustains; or uses a vLLM measurement when one is given;
4. turns GPU time into GPU-hours twice (:mod:`gpu_hours`): at full utilization (the marginal
   cost: only the busy time is paid) and at the log's arrival rate (enough replicas kept up
   for the log's span);
5. prices both with the user's $/GPU-hour;
6. derives the effect of a host-DRAM KV tier (:mod:`host_tier`) and the hit rate at several
   KV capacities.

:func:`versus.versus` then sets one hosted bill against it: break-even monthly volume and
hit rate.

Model assumptions, all listed by :func:`comparison_assumptions`: one replica runs requests
one after the other through the cache (the simulator is sequential, so blocks held by
concurrent requests are not modelled); decode runs at the Little's-law batch of the arrival
rate (capped by KV capacity and ``max_num_seqs``) at the memory-bound ceiling; prefill at
the roofline ceiling. GPU-hours are float model outputs; money is Decimal, computed from
GPU-hours rounded to 1e-6 h.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from decimal import Decimal
from fractions import Fraction

import numpy as np

from cachecast.core.errors import Location
from cachecast.economics.capacity import DEFAULT_MAX_NUM_SEQS, Deployment
from cachecast.economics.errors import ComparisonError
from cachecast.economics.gpu_hours import check_gpu_price, gpu_hours_of, round_dollars
from cachecast.economics.host_tier import HostTier, host_tier
from cachecast.economics.pools import replay_pools
from cachecast.economics.sizing import RequestLog, SizedLog, size_deployment
from cachecast.economics.timing import (
    ROOFLINE_TIMING,
    FloatArray,
    PrefillMeasurement,
    b_star,
    decode_batch_at_rate,
    decode_ceiling,
    decode_seconds_per_token,
    pollaczek_khinchine_wait,
    prefill_seconds_many,
)
from cachecast.tokenizers.types import TokenizedRequest

# Replicas are added at the arrival rate until each is at most this busy: an M/G/1 queue's
# wait grows as 1/(1 - utilization), so a fleet run at 98% would give minutes of TTFT.
DEFAULT_MAX_UTILIZATION = 0.8
DEFAULT_CAPACITY_FACTORS: tuple[Fraction, ...] = tuple(
    Fraction(2) ** exponent for exponent in range(-5, 4)
)
HIT_RATE_DEFINITION = (
    "cache_read_tokens / input_tokens over the whole log from a cold cache"
    " (self-hosted: the simulator's vLLM policy; hosted: each contract's policy)"
)
COST_SPLIT = "GPU time split between prefill (input) and decode (output) as modelled"


# ---------------------------------------------------------------------------------------------
# What the self-hosted side comes to (the figures of the report)


@dataclass(frozen=True, slots=True)
class CapacityPoint:
    """The self-hosted hit rate re-simulated at one KV capacity (None: unbounded)."""

    num_blocks: int | None
    kv_capacity_tokens: int | None
    factor_of_deployment: float | None
    hit_tokens: int
    hit_rate: float


@dataclass(frozen=True, slots=True)
class PrefillSpread:
    """Prefill time per request, in milliseconds."""

    mean: float
    p50: float
    p95: float
    max: float


@dataclass(frozen=True, slots=True)
class FullUtilization:
    """The log's GPU time when the replica does nothing else: the marginal cost."""

    gpu_hours: Decimal
    requests_per_s: float
    input_tokens_per_s: float
    output_tokens_per_s: float


@dataclass(frozen=True, slots=True)
class AtArrivalRate:
    """Enough replicas kept up for the log's span at its own arrival rate."""

    replicas: int
    gpus: int
    utilization: float
    max_utilization: float
    decode_batch: float
    decode_batch_saturated: bool
    inter_token_latency_ms: float
    gpu_hours: Decimal
    ttft_mean_ms: float
    queue_wait_mean_ms: float
    fleet_input_tokens_per_s: float
    fleet_output_tokens_per_s: float


@dataclass(frozen=True, slots=True)
class SelfHostedCost:
    """The GPU-hours priced at the user's $/GPU-hour (rounded to 1e-6 $)."""

    full_utilization: Decimal
    at_arrival_rate: Decimal | None
    per_million_input_tokens_full_utilization: Decimal | None
    per_million_output_tokens_full_utilization: Decimal | None
    per_million_input_tokens_at_arrival_rate: Decimal | None
    per_million_output_tokens_at_arrival_rate: Decimal | None
    split: str = COST_SPLIT


@dataclass(frozen=True, slots=True)
class SelfHosted:
    """One replica serving the log through vLLM prefix caching."""

    hit_tokens: int
    hit_rate: float
    num_blocks: int
    kv_capacity_tokens: int
    prefill_ms: PrefillSpread
    prefill_gpu_seconds: float
    decode_gpu_seconds: float
    decode_batch_full: int
    decode_ceiling_tokens_per_s: float
    b_star: float
    full_utilization: FullUtilization
    at_arrival_rate: AtArrivalRate | None
    cost: SelfHostedCost | None


@dataclass(frozen=True, slots=True)
class SelfHostedComparison:
    """Everything the self-hosted side of a comparison comes to."""

    sized: SizedLog
    self_hosted: SelfHosted
    host_tier: HostTier
    capacity_curve: list[CapacityPoint]
    timing_source: str
    measured: bool
    gpu_price: Decimal | None
    busy_seconds_full: float  # one log's GPU time at full utilization (per replica)
    decode_seconds_full: float
    assumptions: list[str]
    # With a measurement: what the roofline model would have said for the same requests.
    roofline_prefill_ms: PrefillSpread | None = None
    roofline_prefill_seconds: float | None = None


def compare_self_hosted(
    requests: RequestLog | Iterable[TokenizedRequest],
    deployment: Deployment,
    *,
    block_size: int | None = None,
    gpu_price: Decimal | None = None,
    max_num_seqs: int = DEFAULT_MAX_NUM_SEQS,
    max_utilization: float = DEFAULT_MAX_UTILIZATION,
    host_tier_bytes: int | None = None,
    state_checkpoint_tokens: int | None = None,
    measurement: PrefillMeasurement | None = None,
    capacity_factors: Sequence[Fraction] = DEFAULT_CAPACITY_FACTORS,
) -> SelfHostedComparison:
    """Self-host the log on ``deployment``; see the module docstring. ``requests`` is read
    twice (:func:`size_deployment`, then :func:`replay_pools`); a list is sorted first.

    ``gpu_price`` ($/GPU-hour) has no default: without it only GPU-hours are given.
    ``host_tier_bytes``: host DRAM for offloaded KV (None: unbounded, an upper bound on the
    tier's benefit). ``state_checkpoint_tokens``: a hybrid model's recurrent-state
    checkpoint interval (hits are rounded down to it, docs/economics.md). ``measurement``: a
    vLLM measurement of this deployment's prefill; when given it replaces the roofline model
    and ``timing_source`` says so.
    """
    check_comparison_options(gpu_price, max_utilization, host_tier_bytes, state_checkpoint_tokens)
    sized = size_deployment(requests, deployment, block_size)
    size, deployment, kv = sized.block_size, sized.deployment, sized.capacity
    inputs, outputs, duration = sized.inputs, sized.outputs, sized.duration
    decode_context, gpus = sized.decode_context, deployment.gpus
    count, total_input, total_output = sized.count, sized.input_tokens, sized.output_tokens
    if total_input == 0:
        # Every figure below is per prompt token (hit rate, throughput, cost per million).
        raise ComparisonError("the log's requests have no prompt tokens: nothing to compare")

    # --- self-hosted hit rate at the deployment's capacity, around it, unbounded and with
    # the host tier: one pass, every pool fed each request in turn
    factor_blocks = [max(2, int(kv.num_blocks * factor)) for factor in capacity_factors]
    host_blocks = None if host_tier_bytes is None else int(host_tier_bytes // kv.block_bytes)
    tier_blocks = None if host_blocks is None else kv.num_blocks + host_blocks
    replayed = replay_pools(
        sized,
        [kv.num_blocks, *factor_blocks, None, tier_blocks],
        per_request=(kv.num_blocks, tier_blocks),
        state_checkpoint_tokens=state_checkpoint_tokens,
    )
    cached, tier_cached = replayed.cached[kv.num_blocks], replayed.cached[tier_blocks]
    hit_tokens = replayed.hits[kv.num_blocks]
    curve: list[CapacityPoint] = []
    for factor, blocks in zip(capacity_factors, factor_blocks, strict=True):
        hits = replayed.hits[blocks]
        curve.append(CapacityPoint(blocks, blocks * size, float(factor), hits, hits / total_input))
    unbounded_hits = replayed.hits[None]
    curve.append(CapacityPoint(None, None, None, unbounded_hits, unbounded_hits / total_input))

    # --- time
    roofline = prefill_seconds_many(deployment, cached, inputs - cached)
    if measurement is not None:
        prefill = np.array(
            [
                measurement.prefill_seconds(int(c), int(i - c))
                for c, i in zip(cached, inputs, strict=True)
            ],
            dtype=np.float64,
        )
        timing_source = f"vLLM measurement: {measurement.source}"
    else:
        prefill = roofline
        timing_source = ROOFLINE_TIMING
    batch_cap = min(kv.max_concurrent_requests, max_num_seqs)
    decode_full_per_token = decode_seconds_per_token(deployment, batch_cap, decode_context)
    prefill_total = float(prefill.sum())
    decode_full = total_output * decode_full_per_token
    busy_full = prefill_total + decode_full

    at_rate: AtArrivalRate | None = None
    if duration > 0:
        rate = count / duration
        mean_output = total_output / count
        # Replicas are sized on the fully-used GPU time: under load vLLM's chunked prefill
        # batches the decode tokens with the prefill chunks, so the weights are read once per
        # mixed step, as in the full-utilization figure. The Little's-law decode batch below
        # then gives the inter-token latency at this rate (few sequences: weights per token).
        replicas = max(1, math.ceil(busy_full / (duration * max_utilization)))
        utilization = busy_full / (replicas * duration)
        replica_rate = rate / replicas
        decode_batch, saturated = decode_batch_at_rate(
            deployment, replica_rate, mean_output, decode_context, batch_cap
        )
        step_seconds = (
            decode_seconds_per_token(deployment, decode_batch, decode_context) * decode_batch
        )
        service = prefill + outputs * decode_full_per_token
        # Pollaczek-Khinchine mean wait of an M/G/1 queue (Poisson arrivals, as Mooncake's).
        wait = pollaczek_khinchine_wait(replica_rate, service, utilization)
        # Replicas were added until utilization <= max_utilization < 1: never saturated.
        assert wait is not None
        at_rate = AtArrivalRate(
            replicas=replicas,
            gpus=replicas * gpus,
            utilization=utilization,
            max_utilization=max_utilization,
            decode_batch=decode_batch,
            decode_batch_saturated=saturated,
            inter_token_latency_ms=step_seconds * 1000,
            gpu_hours=gpu_hours_of(replicas * duration, gpus),
            ttft_mean_ms=(wait + float(prefill.mean())) * 1000,
            queue_wait_mean_ms=wait * 1000,
            fleet_input_tokens_per_s=total_input / duration,
            fleet_output_tokens_per_s=total_output / duration,
        )
    gpu_hours_full = gpu_hours_of(busy_full, gpus)
    cost: SelfHostedCost | None = None
    if gpu_price is not None:
        cost = _self_hosted_cost(
            gpu_price, gpu_hours_full, at_rate, prefill_total / busy_full, total_input, total_output
        )
    self_hosted = SelfHosted(
        hit_tokens=hit_tokens,
        hit_rate=hit_tokens / total_input,
        num_blocks=kv.num_blocks,
        kv_capacity_tokens=kv.kv_capacity_tokens,
        prefill_ms=spread_ms(prefill),
        prefill_gpu_seconds=prefill_total * gpus,
        decode_gpu_seconds=decode_full * gpus,
        decode_batch_full=batch_cap,
        decode_ceiling_tokens_per_s=float(decode_ceiling(deployment, batch_cap, decode_context)),
        b_star=float(b_star(deployment, decode_context)),
        full_utilization=FullUtilization(
            gpu_hours=gpu_hours_full,
            requests_per_s=count / busy_full,
            input_tokens_per_s=total_input / busy_full,
            output_tokens_per_s=total_output / busy_full,
        ),
        at_arrival_rate=at_rate,
        cost=cost,
    )
    tier = host_tier(
        sized,
        cached,
        tier_cached,
        prefill,
        host_tier_bytes=host_tier_bytes,
        host_blocks=host_blocks,
        measured=measurement is not None,
        gpu_price=gpu_price,
    )
    return SelfHostedComparison(
        sized=sized,
        self_hosted=self_hosted,
        host_tier=tier,
        capacity_curve=curve,
        timing_source=timing_source,
        measured=measurement is not None,
        gpu_price=gpu_price,
        busy_seconds_full=busy_full,
        decode_seconds_full=decode_full,
        assumptions=comparison_assumptions(decode_context, max_utilization),
        roofline_prefill_ms=spread_ms(roofline) if measurement is not None else None,
        roofline_prefill_seconds=float(roofline.sum()) if measurement is not None else None,
    )


def spread_ms(seconds: FloatArray) -> PrefillSpread:
    """Mean, median, 95th percentile and maximum of per-request times, in milliseconds."""
    return PrefillSpread(
        mean=float(seconds.mean()) * 1000,
        p50=float(np.percentile(seconds, 50)) * 1000,
        p95=float(np.percentile(seconds, 95)) * 1000,
        max=float(seconds.max()) * 1000,
    )


def check_comparison_options(
    gpu_price: Decimal | None,
    max_utilization: float,
    host_tier_bytes: int | None,
    state_checkpoint_tokens: int | None,
) -> None:
    """The options of :func:`compare_self_hosted` that need no log, checked (a caller may
    check them before reading one)."""
    if not 0 < max_utilization < 1:
        raise ComparisonError(
            f"must be in (0, 1), got {max_utilization}",
            location=Location(field="max_utilization"),
        )
    check_gpu_price(gpu_price)
    if host_tier_bytes is not None and host_tier_bytes < 0:
        raise ComparisonError(
            f"must be >= 0, got {host_tier_bytes} bytes",
            location=Location(field="host_memory_gib"),
        )
    if state_checkpoint_tokens is not None and state_checkpoint_tokens < 1:
        raise ComparisonError(
            f"must be >= 1 token, got {state_checkpoint_tokens}",
            location=Location(field="state_checkpoint"),
        )


def _self_hosted_cost(
    gpu_price: Decimal,
    gpu_hours_full: Decimal,
    at_rate: AtArrivalRate | None,
    prefill_share: float,
    total_input: int,
    total_output: int,
) -> SelfHostedCost:
    cost_full = round_dollars(gpu_hours_full * gpu_price)
    cost_rate = round_dollars(at_rate.gpu_hours * gpu_price) if at_rate is not None else None
    share = Decimal(repr(prefill_share))

    def per_million(cost: Decimal | None, part: Decimal, tokens: int) -> Decimal | None:
        if cost is None or tokens == 0:
            return None
        return round_dollars(cost * part * 1_000_000 / tokens)

    return SelfHostedCost(
        full_utilization=cost_full,
        at_arrival_rate=cost_rate,
        per_million_input_tokens_full_utilization=per_million(cost_full, share, total_input),
        per_million_output_tokens_full_utilization=per_million(cost_full, 1 - share, total_output),
        per_million_input_tokens_at_arrival_rate=per_million(cost_rate, share, total_input),
        per_million_output_tokens_at_arrival_rate=per_million(cost_rate, 1 - share, total_output),
    )


def comparison_assumptions(decode_context: int, max_utilization: float) -> list[str]:
    """What the self-hosted figures assume, in words (the report lists them)."""
    return [
        "self-hosted hit rate: simulator vLLM policy, one request at a time, capacity_blocks ="
        " the KV capacity of one replica, that replica seeing the whole log; with N replicas"
        " and prefix-aware routing the pool is N times larger but split: the capacity curve's"
        " 2x/4x/8x points bound what routing could reach",
        "KV capacity: gpu_memory_utilization x memory - weights; vLLM's activation and CUDA"
        " graph reservations are not subtracted (capacity is a few GB per GPU high)",
        "prefill: roofline ceiling at dense BF16 peak and full memory bandwidth (real kernels"
        " reach 40-70% of peak); decode: memory-bound ceiling at min(KV-limited concurrency,"
        " max_num_seqs); replicas at the arrival rate sized on that fully-batched GPU time"
        " (chunked prefill rides decode tokens on prefill steps); inter-token latency at the"
        " Little's-law decode batch",
        f"decode context: the log's mean input + output/2 = {decode_context} tokens",
        "TTFT: M/G/1 (Pollaczek-Khinchine) mean wait + mean prefill, per replica; replicas"
        f" are added until each is at most {max_utilization:.0%} busy",
        "a month is 730 hours; a replica is paid for whole months in the volume projection",
        "GPU-hours are model outputs rounded to 1e-6 h; money is exact Decimal from them",
    ]
