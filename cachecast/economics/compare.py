"""Self-hosted vLLM for a prompt log: hit rate, GPU time, GPU-hours and cost, and how they
compare with a hosted bill. The formulas and their sources are in docs/economics.md.

``compare_self_hosted`` takes the log (a :class:`RequestLog`: read twice, each time in the
replay order of every other command, timestamp order within the reorder window; or a list
of requests, sorted by timestamp) and

1. sizes the deployment (:mod:`capacity`): KV blocks after weights (:func:`size_deployment`),
   from a first pass that keeps only numbers per request (input, output tokens) and the
   trace's block size;
2. replays the log, in one more pass, through the simulator's vLLM prefix-cache policy with
   ``num_blocks`` equal to that capacity, giving each request's cached prefix C
   (self-hosted hit rate), and at once through the same policy at every other capacity
   asked for, unbounded, and with the host tier: each request goes to every pool in turn,
   so the memory is the pools' live cache states and the reorder window, not the log;
3. times every request with the roofline model (:mod:`timing`): prefill(C, S) and decode at
   the batch the deployment sustains; or uses a vLLM measurement when one is given;
4. turns GPU time into GPU-hours twice: at full utilization (the marginal cost: only the busy
   time is paid) and at the log's arrival rate (enough replicas kept up for the log's span);
5. prices both with the user's $/GPU-hour;
6. derives the effect of a host-DRAM KV tier and the hit rate at several KV capacities.

:func:`versus` then sets one hosted bill against it: break-even monthly volume and hit rate.

Model assumptions, all listed in ``assumptions``: one replica runs requests one after the
other through the cache (the simulator is sequential, so blocks held by concurrent requests
are not modelled); decode runs at the Little's-law batch of the arrival rate (capped by KV
capacity and ``max_num_seqs``) at the memory-bound ceiling; prefill at the roofline ceiling.
GPU-hours are float model outputs; money is Decimal, computed from GPU-hours rounded to
1e-6 h.
"""

from __future__ import annotations

import math
from array import array
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, replace
from decimal import ROUND_HALF_EVEN, Decimal
from fractions import Fraction
from typing import Any, Protocol, runtime_checkable

import numpy as np

from cachecast.core.errors import BadInputError, Location
from cachecast.economics.capacity import DEFAULT_BLOCK_SIZE, Capacity, Deployment, capacity
from cachecast.economics.timing import (
    FloatArray,
    PrefillMeasurement,
    b_star,
    decode_ceiling,
    pollaczek_khinchine_wait,
    prefill_seconds_many,
)
from cachecast.simulator import build_policy
from cachecast.simulator.compact import Compactor, KeyNeeds
from cachecast.simulator.policies import VllmPrefixCache
from cachecast.simulator.policies.vllm_unbounded import NeverEvictingVllmCache
from cachecast.tokenizers.types import TokenizedRequest

HOURS_PER_MONTH = Decimal(730)  # 365 * 24 / 12
SECONDS_PER_MONTH = 730 * 3600
# vLLM 0.32's --max-num-seqs default on GPUs under 70 GB and on A100; on H100, H200, B200
# (70 GB and more) it is 1024 (docs/economics.md).
DEFAULT_MAX_NUM_SEQS = 256
# Replicas are added at the arrival rate until each is at most this busy: an M/G/1 queue's
# wait grows as 1/(1 - utilization), so a fleet run at 98% would give minutes of TTFT.
DEFAULT_MAX_UTILIZATION = 0.8
DEFAULT_CAPACITY_FACTORS: tuple[Fraction, ...] = tuple(
    Fraction(2) ** exponent for exponent in range(-5, 4)
)
GPU_HOURS_QUANTUM = Decimal("0.000001")
MONEY_QUANTUM = Decimal("0.000001")
HIT_RATE_DEFINITION = (
    "cache_read_tokens / input_tokens over the whole log from a cold cache"
    " (self-hosted: the simulator's vLLM policy; hosted: each contract's policy)"
)
ROOFLINE_TIMING = (
    "roofline model: max(FLOPs/peak, bytes/bandwidth) per prefill, memory-bound decode"
    " ceiling; no vLLM measurement of this deployment was given"
)
COST_SPLIT = "GPU time split between prefill (input) and decode (output) as modelled"
TIER_RULE = (
    "fetch when tokens*b_kv/host_link_bw < recompute time saved; fetch not"
    " overlapped with compute (conservative)"
)


class ComparisonError(BadInputError):
    """The comparison cannot be made (empty log, model does not fit...); says why."""

    title = "Comparison not possible"


def gpu_hours_of(seconds: float, gpus: int) -> Decimal:
    return Decimal(repr(seconds * gpus / 3600)).quantize(GPU_HOURS_QUANTUM, ROUND_HALF_EVEN)


def money(value: Decimal) -> Decimal:
    return value.quantize(MONEY_QUANTUM, ROUND_HALF_EVEN)


def check_gpu_price(gpu_price: Decimal | None) -> None:
    if gpu_price is not None and (not gpu_price.is_finite() or gpu_price < 0):
        raise ComparisonError(
            f"must be a non-negative number, got {gpu_price}", location=Location(field="gpu_price")
        )


# ---------------------------------------------------------------------------------------------
# Reading the log: twice, in replay order

Prepare = Callable[[TokenizedRequest], TokenizedRequest]


@runtime_checkable
class RequestLog(Protocol):
    """A log that can be read more than once, in the same replay order every time."""

    def read(self, prepare: Prepare | None = None) -> Iterator[TokenizedRequest]:
        """Every request, in replay order; ``prepare`` is applied to each before a reorder
        window holds it (``simulator.compact``: keys instead of token ids)."""
        ...


class SortedRequests:
    """Requests already in memory (a library caller's, a test's) as a :class:`RequestLog`:
    sorted by timestamp, equal timestamps in their given order, which is the order the
    reorder window gives a log whose requests are within it."""

    def __init__(self, requests: Iterable[TokenizedRequest]) -> None:
        self.requests = sorted(requests, key=lambda request: request.timestamp)

    def read(self, prepare: Prepare | None = None) -> Iterator[TokenizedRequest]:
        return iter(self.requests) if prepare is None else map(prepare, self.requests)


def as_log(requests: RequestLog | Iterable[TokenizedRequest]) -> RequestLog:
    """``requests`` as a log to read twice (a list is sorted, see :class:`SortedRequests`)."""
    return requests if isinstance(requests, RequestLog) else SortedRequests(requests)


def numbers_only(request: TokenizedRequest) -> TokenizedRequest:
    """``request`` without its prompt (ids, keys, segments): what the sizing pass reads is
    its numbers. An empty ``block_keys`` still says that it came from a block-key trace
    (:func:`trace_block_size` reads only that and its block size)."""
    return replace(
        request,
        tokens=None,
        block_keys=None if request.block_keys is None else (),
        segments=(),
        breakpoints=(),
        prompt_keys=None,
    )


def block_key_prepare(block_size: int, *, prefix_tokens: int = 0) -> Prepare:
    """What the replay pass holds of each request: the chained key of every full block at
    ``block_size`` (all a vLLM pool reads, ``simulator.compact``), and its first
    ``prefix_tokens`` ids where a router hashes them (prefix-hash routing reads only those:
    ``simulator.distributed.partition.partition_key``)."""
    compact = Compactor(KeyNeeds(blocks=frozenset({block_size}))).compact
    if not prefix_tokens:
        return compact

    def keep_opening(request: TokenizedRequest) -> TokenizedRequest:
        tokens = request.tokens
        compacted = compact(request)
        if tokens is None or compacted is request:
            return compacted
        # The pools read the keys (a request's prompt_keys come first, simulator.blocks).
        return replace(compacted, tokens=tokens[:prefix_tokens])

    return keep_opening


def check_same_request(request: TokenizedRequest, index: int, sized: SizedLog) -> None:
    """The replay pass must read what the sizing pass read: the same requests, as many."""
    if index >= sized.count or request.input_tokens != sized.inputs[index]:
        raise ComparisonError(
            "the log changed between its two readings (a file written to meanwhile?)",
            location=Location(source=request.source, line=request.line),
        )


def check_all_read(count: int, sized: SizedLog) -> None:
    if count != sized.count:
        raise ComparisonError(
            f"the log changed between its two readings: {sized.count} requests, then {count}"
        )


def vllm_pool(
    block_size: int, num_blocks: int | None, state_checkpoint_tokens: int | None = None
) -> VllmPrefixCache:
    """vLLM prefix caching with ``num_blocks`` (None: unbounded; hybrid models: hits
    rounded down to the recurrent-state checkpoint interval too)."""
    options: dict[str, Any] = {"block_size": block_size, "capacity_blocks": num_blocks}
    if state_checkpoint_tokens is not None:
        options["state_checkpoint_tokens"] = state_checkpoint_tokens
    policy = build_policy("vllm", **options)
    assert isinstance(policy, VllmPrefixCache)
    return policy


def trace_block_size(sizes: Iterable[int], given: int | None) -> int:
    """The block size to simulate: a block-key trace's own (``sizes``: the block sizes its
    requests give, which ``given`` must equal), else ``given``, else vLLM's default."""
    found = set(sizes)
    if len(found) > 1:
        raise ComparisonError(f"the log mixes block-key traces of block sizes {sorted(found)}")
    if found:
        (size,) = found
        if given is not None and given != size:
            raise ComparisonError(
                f"the log's block keys cover {size} tokens each; a block size of {given}"
                " cannot be simulated on it",
                location=Location(field="block_size"),
            )
        return size
    return given or DEFAULT_BLOCK_SIZE


class _Sizing:
    """What the sizing pass keeps: numbers per request, in replay order."""

    def __init__(self) -> None:
        self.inputs: array[float] = array("d")
        self.outputs: array[float] = array("d")
        self.first: float | None = None
        self.last = 0.0
        self.tokenizer: str | None = None
        self.exact = True
        self.block_sizes: set[int] = set()
        self.unsized: Location | None = None  # the first block-key request without a size

    def add(self, request: TokenizedRequest) -> None:
        if self.first is None:
            self.first = request.timestamp
            self.tokenizer = request.tokenizer or None
        self.last = request.timestamp
        self.inputs.append(request.input_tokens)
        self.outputs.append(request.output_tokens)
        self.exact = self.exact and request.exact
        if request.block_keys is not None:
            if request.block_size is None:
                if self.unsized is None:
                    self.unsized = Location(source=request.source, line=request.line)
            else:
                self.block_sizes.add(request.block_size)


# ---------------------------------------------------------------------------------------------
# Sizing one replica for a log


@dataclass(frozen=True, slots=True)
class SizedLog:
    """A log (read once, in replay order) with one replica's deployment sized for it: its
    numbers per request, not its requests; the replays read ``log`` again."""

    log: RequestLog
    block_size: int
    deployment: Deployment
    inputs: FloatArray
    outputs: FloatArray
    decode_context: int
    capacity: Capacity
    duration: float
    tokenizer: str | None
    exact_tokens: bool

    @property
    def count(self) -> int:
        return len(self.inputs)

    @property
    def input_tokens(self) -> int:
        return int(self.inputs.sum())

    @property
    def output_tokens(self) -> int:
        return int(self.outputs.sum())

    @property
    def mean_input_tokens(self) -> float:
        return float(self.inputs.mean())

    @property
    def p95_input_tokens(self) -> float:
        return float(np.percentile(self.inputs, 95))

    @property
    def max_input_tokens(self) -> int:
        return int(self.inputs.max())

    @property
    def arrival_rate_per_s(self) -> float | None:
        return self.count / self.duration if self.duration > 0 else None


def size_deployment(
    requests: RequestLog | Iterable[TokenizedRequest],
    deployment: Deployment,
    block_size: int | None,
) -> SizedLog:
    """Read the log once (replay order; a list: sorted by timestamp) and size one replica of
    ``deployment`` (its block size replaced by the trace's or ``block_size``) at the log's
    mean decode context: what ``compare`` and ``fleet`` both start from. Raises
    :class:`ComparisonError` when the log is empty or the model does not fit."""
    log = as_log(requests)
    sizing = _Sizing()
    for request in log.read(numbers_only):
        sizing.add(request)
    if sizing.first is None:
        raise ComparisonError("the log has no usable request")
    if sizing.unsized is not None:
        raise ComparisonError("block keys without a block size", location=sizing.unsized)
    size = trace_block_size(sizing.block_sizes, block_size)
    deployment = replace(deployment, block_size=size)
    inputs = np.frombuffer(sizing.inputs, dtype=np.float64)
    outputs = np.frombuffer(sizing.outputs, dtype=np.float64)
    # Decode runs, on average, halfway through the output: mean input + output/2.
    decode_context = max(1, round(float(np.mean(inputs + outputs / 2))))
    kv = capacity(deployment, decode_context)
    if not kv.fits:
        raise ComparisonError(kv.error or "the model does not fit")
    if kv.max_concurrent_requests == 0 or kv.num_blocks < 2:
        raise ComparisonError(
            kv.error or f"only {kv.num_blocks} KV blocks fit; vLLM needs at least 2"
        )
    return SizedLog(
        log=log,
        block_size=size,
        deployment=deployment,
        inputs=inputs,
        outputs=outputs,
        decode_context=decode_context,
        capacity=kv,
        duration=sizing.last - sizing.first,
        tokenizer=sizing.tokenizer,
        exact_tokens=sizing.exact,
    )


@dataclass(frozen=True, slots=True)
class ReplayedPools:
    """Hit tokens of the log in every pool (by its ``num_blocks``; None: unbounded) and, for
    the pools asked for, each request's (replay order)."""

    hits: dict[int | None, int]
    cached: dict[int | None, FloatArray]


def replay_pools(
    sized: SizedLog,
    capacities: Iterable[int | None],
    *,
    per_request: Iterable[int | None] = (),
    state_checkpoint_tokens: int | None = None,
) -> ReplayedPools:
    """One more pass over the sized log through a vLLM pool of each of ``capacities``
    blocks at once (equal capacities share one pool: a pool's hits depend on nothing else).
    The window holds each request as its block keys (:func:`block_key_prepare`)."""
    pools: dict[int | None, VllmPrefixCache | NeverEvictingVllmCache] = {
        blocks: (
            vllm_pool(sized.block_size, blocks, state_checkpoint_tokens)
            if blocks is not None
            # the same hits in ~16 bytes per block instead of ~200 (policies/vllm_unbounded)
            else NeverEvictingVllmCache(
                sized.block_size, state_checkpoint_tokens=state_checkpoint_tokens
            )
        )
        for blocks in dict.fromkeys(capacities)
    }
    kept = [blocks in set(per_request) for blocks in pools]
    columns: list[array[float]] = [array("d") for _ in pools]
    totals = [0] * len(pools)
    steps = list(zip((pool.process for pool in pools.values()), kept, columns, strict=True))
    count = 0
    for request in sized.log.read(block_key_prepare(sized.block_size)):
        check_same_request(request, count, sized)
        count += 1
        for index, (process, keep, column) in enumerate(steps):
            hit = process(request).cache_read_tokens
            totals[index] += hit
            if keep:
                column.append(hit)
    check_all_read(count, sized)
    return ReplayedPools(
        hits=dict(zip(pools, totals, strict=True)),
        cached={
            blocks: np.frombuffer(column, dtype=np.float64)
            for blocks, keep, column in zip(pools, kept, columns, strict=True)
            if keep
        },
    )


# ---------------------------------------------------------------------------------------------
# Decode


def decode_batch_at_rate(
    deployment: Deployment, rate: float, mean_output: float, context: int, cap: int
) -> tuple[float, bool]:
    """Little's-law decode batch B = rate * mean_output * step(B), solved in closed form:
    step(B) = (W + B*kv)/BW gives B = (r*m*W/BW) / (1 - r*m*kv/BW). Saturated (B = cap)
    when there is no solution below the cap."""
    weights = float(deployment.weight_bytes)
    per_request = float(deployment.request_bytes(context))
    bandwidth = float(deployment.memory_bandwidth)
    denominator = 1 - rate * mean_output * per_request / bandwidth
    if denominator <= 0:
        return float(cap), True
    batch = rate * mean_output * weights / bandwidth / denominator
    if batch > cap:
        return float(cap), True
    return max(batch, 1.0), False


def decode_seconds_per_token(deployment: Deployment, batch: float, context: int) -> float:
    moved = float(deployment.weight_bytes) + batch * float(deployment.request_bytes(context))
    return moved / float(deployment.memory_bandwidth) / batch


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
class HostTier:
    """HBM plus a host-DRAM KV tier: the extra hits, and whether fetching them pays."""

    host_bytes: int | None
    host_blocks: int | None
    unbounded: bool
    host_link_bytes_s: int
    host_link: str
    extra_hit_tokens_available: int
    extra_hit_tokens_fetched: int
    requests_where_fetch_pays: int
    requests_with_extra_hits: int
    hit_rate_with_tier: float
    fetch_seconds: float
    recompute_seconds_avoided: float
    prefill_seconds_saved: float
    gpu_hours_saved: Decimal
    cost_saved_full_utilization: Decimal | None
    rule: str = TIER_RULE


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
    check_options(gpu_price, max_utilization, host_tier_bytes, state_checkpoint_tokens)
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
        assumptions=assumptions(decode_context, max_utilization),
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


def check_options(
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
    cost_full = money(gpu_hours_full * gpu_price)
    cost_rate = money(at_rate.gpu_hours * gpu_price) if at_rate is not None else None
    share = Decimal(repr(prefill_share))

    def per_million(cost: Decimal | None, part: Decimal, tokens: int) -> Decimal | None:
        if cost is None or tokens == 0:
            return None
        return money(cost * part * 1_000_000 / tokens)

    return SelfHostedCost(
        full_utilization=cost_full,
        at_arrival_rate=cost_rate,
        per_million_input_tokens_full_utilization=per_million(cost_full, share, total_input),
        per_million_output_tokens_full_utilization=per_million(cost_full, 1 - share, total_output),
        per_million_input_tokens_at_arrival_rate=per_million(cost_rate, share, total_input),
        per_million_output_tokens_at_arrival_rate=per_million(cost_rate, 1 - share, total_output),
    )


def assumptions(decode_context: int, max_utilization: float) -> list[str]:
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


def monthly_self_hosted_cost(
    busy_seconds: float, gpus: int, gpu_price: Decimal, logs_per_month: float
) -> Decimal:
    """Self-hosted monthly bill when a log taking ``busy_seconds`` of one replica's time at
    full utilization is served ``logs_per_month`` times a month: whole replicas of ``gpus``
    GPUs, each paid for the whole month, enough to carry the busy time."""
    busy = logs_per_month * busy_seconds
    replicas = max(1, math.ceil(busy / SECONDS_PER_MONTH))
    return replicas * gpus * HOURS_PER_MONTH * gpu_price


# ---------------------------------------------------------------------------------------------
# Host-memory KV tier


def host_tier(
    sized: SizedLog,
    cached: FloatArray,
    tier_cached: FloatArray,
    prefill: FloatArray,
    *,
    host_tier_bytes: int | None,
    host_blocks: int | None,
    measured: bool,
    gpu_price: Decimal | None,
) -> HostTier:
    """HBM plus a host-DRAM tier as one LRU pool of HBM + host blocks (an inclusive
    offload cache, LMCache-style): ``tier_cached``, each request's hits in that pool
    (``host_blocks`` more than HBM's; None: unbounded). A request's extra hits beyond HBM's
    (``cached``) are fetched over the host link when tokens*b_kv/link_bw < the recompute
    time they save, else recomputed."""
    deployment, inputs = sized.deployment, sized.inputs
    extra = np.maximum(0.0, tier_cached - cached)
    link = deployment.accelerator.host_link_bytes_s
    fetch = extra * float(deployment.kv_bytes_per_token) / link
    with_tier = prefill_seconds_many(deployment, cached + extra, inputs - cached - extra)
    if measured:
        # The measurement prices only HBM hits; scale the model's saving onto it.
        model_prefill = prefill_seconds_many(deployment, cached, inputs - cached)
        with_tier = prefill * np.divide(
            with_tier, model_prefill, out=np.ones_like(with_tier), where=model_prefill > 0
        )
    saved = prefill - with_tier
    pays = fetch < saved
    chosen = np.where(pays, with_tier + fetch, prefill)
    tier_hits = int((cached + np.where(pays, extra, 0.0)).sum())
    saved_seconds = float((prefill - chosen).sum())
    hours_saved = gpu_hours_of(saved_seconds, deployment.gpus)
    return HostTier(
        host_bytes=host_tier_bytes,
        host_blocks=host_blocks,
        unbounded=host_tier_bytes is None,
        host_link_bytes_s=link,
        host_link=deployment.accelerator.host_link,
        extra_hit_tokens_available=int(extra.sum()),
        extra_hit_tokens_fetched=int(np.where(pays, extra, 0.0).sum()),
        requests_where_fetch_pays=int(pays.sum()),
        requests_with_extra_hits=int((extra > 0).sum()),
        hit_rate_with_tier=tier_hits / float(inputs.sum()),
        fetch_seconds=float(np.where(pays, fetch, 0.0).sum()),
        recompute_seconds_avoided=float(np.where(pays, saved, 0.0).sum()),
        prefill_seconds_saved=saved_seconds,
        gpu_hours_saved=hours_saved,
        cost_saved_full_utilization=None if gpu_price is None else money(hours_saved * gpu_price),
    )


# ---------------------------------------------------------------------------------------------
# Against one hosted bill


@dataclass(frozen=True, slots=True)
class BreakEvenVolume:
    """The monthly volume at which self-hosting starts to cost less than the hosted bill."""

    logs: float
    requests: float
    input_tokens: float
    replica_cost_per_month: Decimal
    log_rate_now_per_month: float | None


@dataclass(frozen=True, slots=True)
class NoBreakEven:
    """Self-hosting never costs less than the hosted bill, at any volume."""

    logs: None
    reason: str


@dataclass(frozen=True, slots=True)
class BreakEvenHitRate:
    """The uniform self-hosted hit rate at which the fully used deployment costs the hosted
    bill (None where there is none, or where it was not computed)."""

    hit_rate: float | None
    definition: str | None = None
    note: str | None = None


@dataclass(frozen=True, slots=True)
class Versus:
    """Self-hosted against one hosted bill (costs None without a GPU price)."""

    provider: str
    model: str
    contract_version: str
    hosted_total: Decimal
    hosted_hit_rate: float
    hosted_per_million_input_tokens: Decimal | None
    self_hosted_full_utilization: Decimal | None
    self_hosted_at_arrival_rate: Decimal | None
    cheaper_full_utilization: str | None
    cheaper_at_arrival_rate: str | None
    break_even_monthly: BreakEvenVolume | NoBreakEven | None
    break_even_hit_rate: BreakEvenHitRate | None
    note: str | None


NOT_PRICED = "no --gpu-price: self-hosted costs are not priced"


def versus(
    comparison: SelfHostedComparison,
    *,
    provider: str,
    model: str,
    contract_version: str,
    hosted_total: Decimal,
    hosted_hit_rate: float,
) -> Versus:
    """Self-hosted against one hosted bill (``hosted_total`` for the log under the contract
    ``contract_version``): differences, break-even volume and hit rate."""
    sized, cost = comparison.sized, comparison.self_hosted.cost
    total_input = sized.input_tokens
    hosted = (provider, model, contract_version, hosted_total, hosted_hit_rate)
    per_million = money(hosted_total * 1_000_000 / total_input) if total_input else None
    gpu_price = comparison.gpu_price
    if gpu_price is None or cost is None:
        return Versus(*hosted, per_million, None, None, None, None, None, None, NOT_PRICED)
    cost_full, cost_rate = cost.full_utilization, cost.at_arrival_rate

    def cheaper(self_hosted: Decimal) -> str:
        return "self-hosted" if self_hosted < hosted_total else "hosted"

    # Break-even volume: hosted grows linearly (k logs cost k*h); self-hosted costs whole
    # replicas, R a month each, each carrying SECONDS_PER_MONTH/busy logs. The first
    # crossing is k = R/h when one replica can carry it, i.e. when fully used self-hosting
    # is cheaper per log than the hosted bill; otherwise self-hosting never breaks even.
    replica_month = sized.deployment.gpus * HOURS_PER_MONTH * gpu_price
    logs_per_replica_month = SECONDS_PER_MONTH / comparison.busy_seconds_full
    volume: BreakEvenVolume | NoBreakEven | None = None
    if hosted_total > 0:
        logs = replica_month / hosted_total
        if float(logs) <= logs_per_replica_month:
            volume = BreakEvenVolume(
                logs=float(logs),
                requests=float(logs) * sized.count,
                input_tokens=float(logs) * total_input,
                replica_cost_per_month=money(replica_month),
                log_rate_now_per_month=(
                    SECONDS_PER_MONTH / sized.duration if sized.duration > 0 else None
                ),
            )
        else:
            volume = NoBreakEven(
                logs=None,
                reason="even fully utilized, self-hosting costs more per log than this"
                " hosted bill; it never breaks even at any volume",
            )
    if comparison.measured:
        hit_rate = BreakEvenHitRate(
            hit_rate=None,
            note="not computed: the measured prefill fit is not re-timed at other hit rates",
        )
    else:
        hit_rate = break_even_hit_rate(
            sized.deployment, gpu_price, hosted_total, comparison.decode_seconds_full, sized.inputs
        )
    return Versus(
        *hosted,
        hosted_per_million_input_tokens=per_million,
        self_hosted_full_utilization=cost_full,
        self_hosted_at_arrival_rate=cost_rate,
        cheaper_full_utilization=cheaper(cost_full),
        cheaper_at_arrival_rate=None if cost_rate is None else cheaper(cost_rate),
        break_even_monthly=volume,
        break_even_hit_rate=hit_rate,
        note=None,
    )


def break_even_hit_rate(
    deployment: Deployment,
    gpu_price: Decimal,
    hosted_total: Decimal,
    decode_seconds: float,
    inputs: FloatArray,
) -> BreakEvenHitRate:
    """The self-hosted hit rate h at which the fully used deployment costs the hosted bill.

    Model: every request has floor(h*(input-1)) cached tokens (a uniform hit rate; vLLM always
    recomputes the last token), decode time unchanged. Cost falls as h rises, so bisect.
    """
    price_per_second = float(gpu_price) * deployment.gpus / 3600
    target = float(hosted_total)

    def cost(rate: float) -> float:
        cached = np.floor(rate * (inputs - 1))
        seconds = float(prefill_seconds_many(deployment, cached, inputs - cached).sum())
        return (seconds + decode_seconds) * price_per_second

    at_zero, at_one = cost(0.0), cost(1.0)
    definition = "uniform cached fraction of every prompt, self-hosted at full utilization"
    if at_zero <= target:
        return BreakEvenHitRate(0.0, definition, "cheaper even with no hits")
    if at_one > target:
        return BreakEvenHitRate(
            None, definition, "costs more than the hosted bill even with every prefix cached"
        )
    low, high = 0.0, 1.0
    for _ in range(40):
        middle = (low + high) / 2
        if cost(middle) > target:
            low = middle
        else:
            high = middle
    return BreakEvenHitRate(high, definition)
