"""Hosted caching bills against a self-hosted vLLM deployment, for the same prompt log.

``compare`` is what ``cachecast compare`` and ``POST /v1/comparisons`` call. It

1. sizes the deployment (:mod:`capacity`): KV blocks after weights;
2. replays the log through the simulator's vLLM prefix-cache policy with ``num_blocks`` equal
   to that capacity, giving each request's cached prefix C (self-hosted hit rate);
3. times every request with the roofline model (:mod:`timing`): prefill(C, S) and decode at
   the batch the deployment sustains; or uses a vLLM measurement when one is given;
4. turns GPU time into GPU-hours twice: at full utilization (the marginal cost: only the busy
   time is paid) and at the log's arrival rate (enough replicas kept up for the log's span);
5. prices both with the user's $/GPU-hour, and every hosted target with ``estimate``;
6. derives break-even monthly volume and hit rate, the effect of a host-DRAM KV tier, and the
   hit rate at several KV capacities.

Model assumptions, all reported in ``assumptions``: one replica runs requests one after the
other through the cache (the simulator is sequential, so blocks held by concurrent requests
are not modelled); decode runs at the Little's-law batch of the arrival rate (capped by KV
capacity and ``max_num_seqs``) at the memory-bound ceiling; prefill at the roofline ceiling.
GPU-hours are float model outputs; money is Decimal, computed from GPU-hours rounded to
1e-6 h.
"""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from decimal import ROUND_HALF_EVEN, Decimal
from fractions import Fraction
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from cachecast.economics.capacity import (
    DEFAULT_BLOCK_SIZE,
    DEFAULT_GPU_MEMORY_UTILIZATION,
    Capacity,
    Deployment,
    capacity,
)
from cachecast.economics.geometry import ModelGeometry
from cachecast.economics.hardware import Accelerator
from cachecast.economics.timing import (
    FloatArray,
    PrefillMeasurement,
    b_star,
    decode_ceiling,
    pollaczek_khinchine_wait,
    prefill_seconds_many,
)
from cachecast.simulator import build_policy
from cachecast.simulator.pricing import Target
from cachecast.tokenizers import LogError, read_log
from cachecast.tokenizers.types import TokenizedRequest

if TYPE_CHECKING:
    from cachecast.contracts import ContractStore

HOURS_PER_MONTH = Decimal(730)  # 365 * 24 / 12
SECONDS_PER_MONTH = 730 * 3600
DEFAULT_MAX_NUM_SEQS = 256  # vLLM's default --max-num-seqs (most devices)
# Replicas are added at the arrival rate until each is at most this busy: an M/G/1 queue's
# wait grows as 1/(1 - utilization), so a fleet run at 98% would give minutes of TTFT.
DEFAULT_MAX_UTILIZATION = 0.8
DEFAULT_CAPACITY_FACTORS: tuple[Fraction, ...] = tuple(
    Fraction(2) ** exponent for exponent in range(-5, 4)
)
PROGRESS_EVERY = 256  # requests replayed between two progress updates
GPU_HOURS_QUANTUM = Decimal("0.000001")
MONEY_QUANTUM = Decimal("0.000001")
HIT_RATE_DEFINITION = (
    "cache_read_tokens / input_tokens over the whole log from a cold cache"
    " (self-hosted: the simulator's vLLM policy; hosted: each contract's policy)"
)


class ComparisonError(ValueError):
    """The comparison cannot be made (empty log, model does not fit...); says why."""


@dataclass(frozen=True, slots=True)
class CapacityPoint:
    num_blocks: int | None  # None: unbounded
    kv_tokens: int | None
    factor: float | None
    hit_tokens: int
    hit_rate: float

    def to_json(self) -> dict[str, Any]:
        return {
            "num_blocks": self.num_blocks,
            "kv_capacity_tokens": self.kv_tokens,
            "factor_of_deployment": self.factor,
            "hit_tokens": self.hit_tokens,
            "hit_rate": self.hit_rate,
        }


@dataclass(frozen=True, slots=True)
class HostedLine:
    """One hosted target's bill for the log, as ``estimate`` computed it."""

    provider: str
    model: str
    contract: dict[str, Any]
    hit_rate: float
    total: Decimal
    cost: dict[str, str]
    cost_without_cache: Decimal
    input_tokens: int
    output_tokens: int


@dataclass(slots=True)
class ComparisonReport:
    """Everything ``cachecast compare`` prints; ``to_json`` is the service's response body."""

    deployment: Deployment
    capacity: Capacity
    log: dict[str, Any]
    self_hosted: dict[str, Any]
    timing_source: str
    gpu_price: Decimal | None
    hosted: list[HostedLine]
    versus: list[dict[str, Any]]
    host_tier: dict[str, Any]
    capacity_curve: list[CapacityPoint]
    assumptions: list[str]
    errors: list[LogError] = field(default_factory=list)
    at: dt.date | None = None
    # Kept for plots: seconds of GPU time per log at full utilization, and per-log costs.
    busy_seconds_full: float = 0.0

    def monthly_self_hosted_cost(self, logs_per_month: float) -> Decimal | None:
        """Self-hosted monthly bill when the log is served ``logs_per_month`` times a month:
        whole replicas, each paid for the whole month, enough to carry the busy time."""
        if self.gpu_price is None:
            return None
        busy = logs_per_month * self.busy_seconds_full
        replicas = max(1, math.ceil(busy / SECONDS_PER_MONTH))
        return replicas * self.deployment.gpus * HOURS_PER_MONTH * self.gpu_price

    def to_json(self) -> dict[str, Any]:
        return {
            "deployment": self.deployment.describe(),
            "capacity": self.capacity.to_json(),
            "log": self.log,
            "hit_rate_definition": HIT_RATE_DEFINITION,
            "timing_source": self.timing_source,
            "gpu_price_per_hour": None if self.gpu_price is None else str(self.gpu_price),
            "self_hosted": self.self_hosted,
            "hosted": [
                {
                    "provider": line.provider,
                    "model": line.model,
                    "contract": line.contract,
                    "hit_rate": line.hit_rate,
                    "cost": line.cost,
                    "cost_without_cache": str(line.cost_without_cache),
                }
                for line in self.hosted
            ],
            "versus": self.versus,
            "host_tier": self.host_tier,
            "capacity_curve": [point.to_json() for point in self.capacity_curve],
            "at": self.at.isoformat() if self.at else None,
            "skipped_lines": len({(error.file, error.line) for error in self.errors}),
            "assumptions": self.assumptions,
        }


def gpu_hours_of(seconds: float, gpus: int) -> Decimal:
    return Decimal(repr(seconds * gpus / 3600)).quantize(GPU_HOURS_QUANTUM, ROUND_HALF_EVEN)


def money(value: Decimal) -> Decimal:
    return value.quantize(MONEY_QUANTUM, ROUND_HALF_EVEN)


def _load(
    sources: Sequence[Path] | Iterable[TokenizedRequest],
    tokenizer_model: str | None,
    errors: list[LogError],
) -> tuple[list[TokenizedRequest], list[Path] | None]:
    if isinstance(sources, Sequence) and all(isinstance(s, (str, Path)) for s in sources):
        paths = [Path(str(s)) for s in sources]
        requests: list[TokenizedRequest] = []
        for path in paths:
            requests.extend(read_log(path, model=tokenizer_model, errors=errors))
        return requests, paths
    return list(sources), None  # type: ignore[arg-type]


def _replay(
    requests: Sequence[TokenizedRequest],
    block_size: int,
    num_blocks: int | None,
    progress: Callable[[int], None] | None,
    state_checkpoint_tokens: int | None = None,
) -> list[int]:
    """Cached prefix tokens of every request under vLLM prefix caching with ``num_blocks``
    (hybrid models: hits rounded down to the recurrent-state checkpoint interval too)."""
    options: dict[str, Any] = {"block_size": block_size, "capacity_blocks": num_blocks}
    if state_checkpoint_tokens is not None:
        options["state_checkpoint_tokens"] = state_checkpoint_tokens
    policy = build_policy("vllm", **options)
    return [
        policy.process(request).cache_read_tokens
        for request in reporting_progress(requests, progress)
    ]


def reporting_progress(
    requests: Sequence[TokenizedRequest], progress: Callable[[int], None] | None
) -> Iterator[TokenizedRequest]:
    """``requests`` in order; ``progress`` is told of every PROGRESS_EVERY that were taken,
    and of the rest after the last one."""
    for index, request in enumerate(requests, 1):
        yield request
        if progress is not None and index % PROGRESS_EVERY == 0:
            progress(PROGRESS_EVERY)
    if progress is not None and len(requests) % PROGRESS_EVERY:
        progress(len(requests) % PROGRESS_EVERY)


def _block_size(requests: Sequence[TokenizedRequest], given: int | None) -> int:
    sizes: set[int] = set()
    for request in requests:
        if request.block_keys is not None:
            if request.block_size is None:
                raise ComparisonError(
                    f"{request.source}:{request.line}: block keys without a block size"
                )
            sizes.add(request.block_size)
    if len(sizes) > 1:
        raise ComparisonError(f"the log mixes block-key traces of block sizes {sorted(sizes)}")
    if sizes:
        (size,) = sizes
        if given is not None and given != size:
            raise ComparisonError(
                f"the log's block keys cover {size} tokens each; --block-size {given} cannot"
                " be simulated on it"
            )
        return size
    return given or DEFAULT_BLOCK_SIZE


def _decode_batch(
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


@dataclass(frozen=True, slots=True)
class SizedLog:
    """A log loaded and sorted by timestamp, with one replica's deployment sized for it."""

    requests: list[TokenizedRequest]
    paths: list[Path] | None
    errors: list[LogError]
    block_size: int
    deployment: Deployment
    inputs: FloatArray
    outputs: FloatArray
    decode_context: int
    capacity: Capacity
    duration: float


def size_deployment(
    sources: Sequence[Path] | Iterable[TokenizedRequest],
    *,
    tokenizer_model: str | None,
    block_size: int | None,
    model: ModelGeometry,
    accelerator: Accelerator,
    gpus: int,
    kv_dtype: str,
    weight_dtype: str | None,
    gpu_memory_utilization: Fraction,
) -> SizedLog:
    """Load ``sources``, sort them by timestamp and size one replica's KV capacity at the
    log's mean decode context (what ``compare`` and ``fleet`` both start from); raises
    :class:`ComparisonError` when the log is empty or the model does not fit."""
    errors: list[LogError] = []
    requests, paths = _load(sources, tokenizer_model, errors)
    if not requests:
        raise ComparisonError("the log has no usable request")
    # Stable sort: equal timestamps keep log order, as the simulator replays them.
    requests.sort(key=lambda request: request.timestamp)
    size = _block_size(requests, block_size)
    deployment = Deployment(
        model=model,
        accelerator=accelerator,
        gpus=gpus,
        kv_dtype=kv_dtype,
        weight_dtype=weight_dtype,
        gpu_memory_utilization=gpu_memory_utilization,
        block_size=size,
    )
    inputs = np.array([r.input_tokens for r in requests], dtype=np.float64)
    outputs = np.array([r.output_tokens for r in requests], dtype=np.float64)
    # Decode runs, on average, halfway through the output: mean input + output/2.
    decode_context = max(1, round(float(np.mean(inputs + outputs / 2))))
    kv = capacity(deployment, decode_context)
    if not kv.fits:
        raise ComparisonError(kv.error or "the model does not fit")
    if kv.max_concurrent_requests == 0 or kv.num_blocks < 2:
        raise ComparisonError(
            kv.error or f"only {kv.num_blocks} KV blocks fit; vLLM needs at least 2"
        )
    duration = requests[-1].timestamp - requests[0].timestamp
    return SizedLog(
        requests=requests,
        paths=paths,
        errors=errors,
        block_size=size,
        deployment=deployment,
        inputs=inputs,
        outputs=outputs,
        decode_context=decode_context,
        capacity=kv,
        duration=duration,
    )


def compare(
    sources: Sequence[Path] | Iterable[TokenizedRequest],
    *,
    model: ModelGeometry,
    accelerator: Accelerator,
    gpus: int = 1,
    gpu_price: Decimal | None = None,
    targets: Sequence[Target] = (),
    at: dt.date | None = None,
    store: ContractStore | None = None,
    kv_dtype: str = "bf16",
    weight_dtype: str | None = None,
    block_size: int | None = None,
    gpu_memory_utilization: Fraction = DEFAULT_GPU_MEMORY_UTILIZATION,
    max_num_seqs: int = DEFAULT_MAX_NUM_SEQS,
    max_utilization: float = DEFAULT_MAX_UTILIZATION,
    host_tier_bytes: int | None = None,
    state_checkpoint_tokens: int | None = None,
    measurement: PrefillMeasurement | None = None,
    tokenizer_model: str | None = None,
    capacity_factors: Sequence[Fraction] = DEFAULT_CAPACITY_FACTORS,
    progress: Callable[[int], None] | None = None,
) -> ComparisonReport:
    """Compare self-hosting ``model`` on ``gpus`` x ``accelerator`` with every hosted target.

    ``sources``: log files (each hosted target then tokenizes with its own tokenizer, and the
    self-hosted side with ``tokenizer_model`` or the log's own model) or requests already
    tokenized. ``gpu_price`` ($/GPU-hour) has no default: without it only GPU-hours are given.
    ``host_tier_bytes``: host DRAM for offloaded KV (None: unbounded, an upper bound on the
    tier's benefit). ``state_checkpoint_tokens``: a hybrid model's recurrent-state
    checkpoint interval (hits are rounded down to it, MISSION.md). ``measurement``: a vLLM
    measurement of this deployment's prefill; when given it replaces the roofline model and
    ``timing_source`` says so.
    """
    if targets and store is None:
        raise ComparisonError("hosted targets need a contract store")
    if not 0 < max_utilization < 1:
        raise ComparisonError(f"max_utilization must be in (0, 1), got {max_utilization}")
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
    count = len(requests)
    total_input = int(inputs.sum())
    total_output = int(outputs.sum())
    log_summary: dict[str, Any] = {
        "sources": [str(p) for p in paths] if paths is not None else ["<requests>"],
        "requests": count,
        "input_tokens": total_input,
        "output_tokens": total_output,
        "duration_s": duration,
        "arrival_rate_per_s": count / duration if duration > 0 else None,
        "mean_input_tokens": float(inputs.mean()),
        "p95_input_tokens": float(np.percentile(inputs, 95)),
        "max_input_tokens": int(inputs.max()),
        "mean_decode_context_tokens": decode_context,
        "block_size": size,
        "state_checkpoint_tokens": state_checkpoint_tokens,
        "tokenizer": requests[0].tokenizer or None,
        "exact_tokens": all(request.exact for request in requests),
    }

    # --- self-hosted hit rate at the deployment's capacity and around it
    cached_list = _replay(requests, size, kv.num_blocks, progress, state_checkpoint_tokens)
    cached = np.array(cached_list, dtype=np.float64)
    hit_tokens = int(cached.sum())
    curve: list[CapacityPoint] = []
    for factor in capacity_factors:
        blocks = max(2, int(kv.num_blocks * factor))
        hits = (
            hit_tokens
            if blocks == kv.num_blocks
            else sum(_replay(requests, size, blocks, progress, state_checkpoint_tokens))
        )
        curve.append(CapacityPoint(blocks, blocks * size, float(factor), hits, hits / total_input))
    unbounded_cached = np.array(
        _replay(requests, size, None, progress, state_checkpoint_tokens), dtype=np.float64
    )
    unbounded_hits = int(unbounded_cached.sum())
    curve.append(CapacityPoint(None, None, None, unbounded_hits, unbounded_hits / total_input))

    # --- time
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
        prefill = prefill_seconds_many(deployment, cached, inputs - cached)
        timing_source = (
            "roofline model: max(FLOPs/peak, bytes/bandwidth) per prefill, memory-bound decode"
            " ceiling; no vLLM measurement of this deployment was given"
        )
    batch_cap = min(kv.max_concurrent_requests, max_num_seqs)
    decode_full_per_token = decode_seconds_per_token(deployment, batch_cap, decode_context)
    prefill_total = float(prefill.sum())
    decode_full = total_output * decode_full_per_token
    busy_full = prefill_total + decode_full

    at_rate: dict[str, Any] | None = None
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
        decode_batch, saturated = _decode_batch(
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
        at_rate = {
            "replicas": replicas,
            "gpus": replicas * gpus,
            "utilization": utilization,
            "max_utilization": max_utilization,
            "decode_batch": decode_batch,
            "decode_batch_saturated": saturated,
            "inter_token_latency_ms": step_seconds * 1000,
            "gpu_hours": str(gpu_hours_of(replicas * duration, gpus)),
            "ttft_mean_ms": (wait + float(prefill.mean())) * 1000,
            "queue_wait_mean_ms": wait * 1000,
            "fleet_input_tokens_per_s": total_input / duration,
            "fleet_output_tokens_per_s": total_output / duration,
        }
    gpu_hours_full = gpu_hours_of(busy_full, gpus)
    self_hosted: dict[str, Any] = {
        "hit_tokens": hit_tokens,
        "hit_rate": hit_tokens / total_input,
        "num_blocks": kv.num_blocks,
        "kv_capacity_tokens": kv.kv_capacity_tokens,
        "prefill_ms": {
            "mean": float(prefill.mean()) * 1000,
            "p50": float(np.percentile(prefill, 50)) * 1000,
            "p95": float(np.percentile(prefill, 95)) * 1000,
            "max": float(prefill.max()) * 1000,
        },
        "prefill_gpu_seconds": prefill_total * gpus,
        "decode_gpu_seconds": decode_full * gpus,
        "decode_batch_full": batch_cap,
        "decode_ceiling_tokens_per_s": float(decode_ceiling(deployment, batch_cap, decode_context)),
        "b_star": float(b_star(deployment, decode_context)),
        "full_utilization": {
            "gpu_hours": str(gpu_hours_full),
            "requests_per_s": count / busy_full,
            "input_tokens_per_s": total_input / busy_full,
            "output_tokens_per_s": total_output / busy_full,
        },
        "at_arrival_rate": at_rate,
        "cost": None,
    }
    prefill_share = prefill_total / busy_full
    cost_full: Decimal | None = None
    cost_rate: Decimal | None = None
    if gpu_price is not None:
        cost_full = money(gpu_hours_full * gpu_price)
        cost_rate = (
            money(Decimal(at_rate["gpu_hours"]) * gpu_price) if at_rate is not None else None
        )
        share = Decimal(repr(prefill_share))

        def per_million(cost: Decimal | None, part: Decimal, tokens: int) -> str | None:
            if cost is None or tokens == 0:
                return None
            return str(money(cost * part * 1_000_000 / tokens))

        self_hosted["cost"] = {
            "full_utilization": str(cost_full),
            "at_arrival_rate": None if cost_rate is None else str(cost_rate),
            "per_million_input_tokens_full_utilization": per_million(cost_full, share, total_input),
            "per_million_output_tokens_full_utilization": per_million(
                cost_full, 1 - share, total_output
            ),
            "per_million_input_tokens_at_arrival_rate": per_million(cost_rate, share, total_input),
            "per_million_output_tokens_at_arrival_rate": per_million(
                cost_rate, 1 - share, total_output
            ),
            "split": "GPU time split between prefill (input) and decode (output) as modelled",
        }

    # --- host-memory KV tier: fetch the extra hits over the host link, or recompute them
    host_tier = _host_tier(
        deployment,
        kv,
        requests,
        cached,
        inputs,
        prefill,
        host_tier_bytes=host_tier_bytes,
        block_size=size,
        measured=measurement is not None,
        gpu_price=gpu_price,
        progress=progress,
        state_checkpoint_tokens=state_checkpoint_tokens,
    )

    # --- hosted targets
    hosted: list[HostedLine] = []
    report_at = at
    if targets:
        assert store is not None
        from cachecast.app.estimate import EstimateRequest, estimate
        from cachecast.app.logs import LogInput
        from cachecast.errors import BadInputError

        assert paths is not None, "hosted targets price log files"
        try:
            report = estimate(
                EstimateRequest(
                    log=LogInput.of_paths(paths),
                    targets=[str(target) for target in targets],
                    at=at,
                ),
                store,
            )
        except BadInputError as error:
            # e.g. a block-key trace (Mooncake) that a hosted contract's block size cannot
            # replay: the self-hosted side alone can still be compared, without --target.
            raise ComparisonError(f"pricing the hosted targets: {error}") from error
        report_at = report.at
        for result in report.targets:
            cost = result.cost.model_dump(mode="json")
            hosted.append(
                HostedLine(
                    provider=result.provider,
                    model=result.model,
                    contract=result.contract.model_dump(mode="json"),
                    hit_rate=result.hit_rate,
                    total=result.cost.total,
                    cost=cost,
                    cost_without_cache=result.cost_without_cache,
                    input_tokens=result.input_tokens,
                    output_tokens=result.output_tokens,
                )
            )
    versus = [
        _versus(
            line,
            deployment,
            gpu_price,
            cost_full,
            cost_rate,
            busy_full,
            decode_full,
            inputs,
            count,
            total_input,
            duration,
            measurement is not None,
        )
        for line in hosted
    ]
    assumptions = [
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
    return ComparisonReport(
        deployment=deployment,
        capacity=kv,
        log=log_summary,
        self_hosted=self_hosted,
        timing_source=timing_source,
        gpu_price=gpu_price,
        hosted=hosted,
        versus=versus,
        host_tier=host_tier,
        capacity_curve=curve,
        assumptions=assumptions,
        errors=errors,
        at=report_at,
        busy_seconds_full=busy_full,
    )


def _host_tier(
    deployment: Deployment,
    kv: Capacity,
    requests: Sequence[TokenizedRequest],
    cached: FloatArray,
    inputs: FloatArray,
    prefill: FloatArray,
    *,
    host_tier_bytes: int | None,
    block_size: int,
    measured: bool,
    gpu_price: Decimal | None,
    progress: Callable[[int], None] | None,
    state_checkpoint_tokens: int | None,
) -> dict[str, Any]:
    """HBM plus a host-DRAM tier as one LRU pool of HBM + host blocks (an inclusive
    offload cache, LMCache-style). A request's extra hits beyond HBM's are fetched over
    the host link when tokens*b_kv/link_bw < the recompute time they save, else recomputed."""
    host_blocks = None if host_tier_bytes is None else int(host_tier_bytes // kv.block_bytes)
    tier_blocks = None if host_blocks is None else kv.num_blocks + host_blocks
    tier_cached = np.array(
        _replay(requests, block_size, tier_blocks, progress, state_checkpoint_tokens),
        dtype=np.float64,
    )
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
    result: dict[str, Any] = {
        "host_bytes": host_tier_bytes,
        "host_blocks": host_blocks,
        "unbounded": host_tier_bytes is None,
        "host_link_bytes_s": link,
        "host_link": deployment.accelerator.host_link,
        "extra_hit_tokens_available": int(extra.sum()),
        "extra_hit_tokens_fetched": int(np.where(pays, extra, 0.0).sum()),
        "requests_where_fetch_pays": int(pays.sum()),
        "requests_with_extra_hits": int((extra > 0).sum()),
        "hit_rate_with_tier": tier_hits / float(inputs.sum()),
        "fetch_seconds": float(np.where(pays, fetch, 0.0).sum()),
        "recompute_seconds_avoided": float(np.where(pays, saved, 0.0).sum()),
        "prefill_seconds_saved": saved_seconds,
        "gpu_hours_saved": str(gpu_hours_of(saved_seconds, deployment.gpus)),
        "cost_saved_full_utilization": None,
        "rule": "fetch when tokens*b_kv/host_link_bw < recompute time saved; fetch not"
        " overlapped with compute (conservative)",
    }
    if gpu_price is not None:
        result["cost_saved_full_utilization"] = str(
            money(gpu_hours_of(saved_seconds, deployment.gpus) * gpu_price)
        )
    return result


def _versus(
    line: HostedLine,
    deployment: Deployment,
    gpu_price: Decimal | None,
    cost_full: Decimal | None,
    cost_rate: Decimal | None,
    busy_full: float,
    decode_full: float,
    inputs: FloatArray,
    count: int,
    total_input: int,
    duration: float,
    measured: bool,
) -> dict[str, Any]:
    """Self-hosted against one hosted bill: differences, break-even volume and hit rate."""
    row: dict[str, Any] = {
        "provider": line.provider,
        "model": line.model,
        "contract_version": line.contract.get("version"),
        "hosted_total": str(line.total),
        "hosted_hit_rate": line.hit_rate,
        "hosted_per_million_input_tokens": (
            str(money(line.total * 1_000_000 / total_input)) if total_input else None
        ),
        "self_hosted_full_utilization": None if cost_full is None else str(cost_full),
        "self_hosted_at_arrival_rate": None if cost_rate is None else str(cost_rate),
        "cheaper_full_utilization": None,
        "cheaper_at_arrival_rate": None,
        "break_even_monthly": None,
        "break_even_hit_rate": None,
    }
    if gpu_price is None or cost_full is None:
        row["note"] = "no --gpu-price: self-hosted costs are not priced"
        return row
    row["cheaper_full_utilization"] = "self-hosted" if cost_full < line.total else "hosted"
    if cost_rate is not None:
        row["cheaper_at_arrival_rate"] = "self-hosted" if cost_rate < line.total else "hosted"
    # Break-even volume: hosted grows linearly (k logs cost k*h); self-hosted costs whole
    # replicas, R a month each, each carrying SECONDS_PER_MONTH/busy logs. The first
    # crossing is k = R/h when one replica can carry it, i.e. when fully used self-hosting
    # is cheaper per log than the hosted bill; otherwise self-hosting never breaks even.
    replica_month = deployment.gpus * HOURS_PER_MONTH * gpu_price
    logs_per_replica_month = SECONDS_PER_MONTH / busy_full
    if line.total > 0:
        logs = replica_month / line.total
        if float(logs) <= logs_per_replica_month:
            row["break_even_monthly"] = {
                "logs": float(logs),
                "requests": float(logs) * count,
                "input_tokens": float(logs) * total_input,
                "replica_cost_per_month": str(money(replica_month)),
                "log_rate_now_per_month": (SECONDS_PER_MONTH / duration if duration > 0 else None),
            }
        else:
            row["break_even_monthly"] = {
                "logs": None,
                "reason": "even fully utilized, self-hosting costs more per log than this"
                " hosted bill; it never breaks even at any volume",
            }
    if measured:
        row["break_even_hit_rate"] = {
            "hit_rate": None,
            "note": "not computed: the measured prefill fit is not re-timed at other hit rates",
        }
    else:
        row["break_even_hit_rate"] = _break_even_hit_rate(
            deployment, gpu_price, line.total, decode_full, inputs
        )
    return row


def _break_even_hit_rate(
    deployment: Deployment,
    gpu_price: Decimal,
    hosted_total: Decimal,
    decode_seconds: float,
    inputs: FloatArray,
) -> dict[str, Any]:
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
        return {"hit_rate": 0.0, "definition": definition, "note": "cheaper even with no hits"}
    if at_one > target:
        return {
            "hit_rate": None,
            "definition": definition,
            "note": "costs more than the hosted bill even with every prefix cached",
        }
    low, high = 0.0, 1.0
    for _ in range(40):
        middle = (low + high) / 2
        if cost(middle) > target:
            low = middle
        else:
            high = middle
    return {"hit_rate": high, "definition": definition}
