"""Roofline time of prefill and decode, and when a slower KV tier beats recomputation.

All ceilings, not predictions: a step takes at least ``max(FLOPs / peak, bytes / bandwidth)``
with perfect overlap and peak throughput (real kernels reach perhaps 40-70% of peak).
Where the vLLM backend has measured the deployment, :class:`PrefillMeasurement` replaces the
prefill model (see ``compare``).

Prefill of a new suffix of S tokens after a cached prefix of C tokens (docs/economics.md)::

    FLOPs = 2*P_active*S + 2*L*H_q*d_h*((C+S)*(C+S+1) - C*(C+1))

The second term counts, for every query token i in C+1..C+S, QK^T and AV products with the
i keys it attends to (2*d_h FLOPs each): the suffix still attends to the cached prefix. For a
sliding-window layer a query attends to min(i, window) keys instead. Bytes moved: all weights
once, the cached prefix's KV read, the suffix's KV written, recurrent state read and written.

Decode with B running sequences of context N (memory-bound)::

    Q(B, N) <= B*BW / (W + B*kv(N))      B* = W / kv(N)

where ``kv(N)`` is one request's KV bytes at context N (``N*b_kv`` for plain attention) plus
any recurrent state, and B* is the batch at which KV traffic equals the weight payload.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt

from cachecast.economics.capacity import Deployment
from cachecast.economics.geometry import ModelGeometry, dtype_bytes

# How a report says where its timings came from when no measurement of the deployment was
# given (comparisons and fleets alike).
ROOFLINE_TIMING = (
    "roofline model: max(FLOPs/peak, bytes/bandwidth) per prefill, memory-bound decode"
    " ceiling; no vLLM measurement of this deployment was given"
)

FloatArray = npt.NDArray[np.float64]


class PrefillMeasurement(Protocol):
    """A measured prefill time for this deployment, replacing the roofline model in
    ``compare``: :class:`cachecast.economics.measured.FittedPrefill`, fitted from a stored
    ``cachecast measure`` run."""

    @property
    def source(self) -> str:
        """Which engine, model, device and run were measured."""
        ...

    def prefill_seconds(self, cached_tokens: int, new_tokens: int) -> float: ...


def _triangle(n: int) -> int:
    return n * (n + 1) // 2


def _attended_keys_up_to(n: int, window: int | None) -> int:
    """sum over query positions i = 1..n of the keys each attends to: min(i, window)."""
    if window is None or n <= window:
        return _triangle(n)
    return _triangle(window) + window * (n - window)


def attention_pairs(cached: int, new: int, window: int | None = None) -> int:
    """(query, key) pairs computed when queries C+1..C+S attend causally (window-capped)."""
    if cached < 0 or new < 0:
        raise ValueError(f"token counts must be >= 0 (cached={cached}, new={new})")
    return _attended_keys_up_to(cached + new, window) - _attended_keys_up_to(cached, window)


def prefill_flops(model: ModelGeometry, cached: int, new: int) -> Fraction:
    """FLOPs to prefill ``new`` tokens after ``cached`` ones (docs/economics.md, per layer
    kind). Each pair costs 2*d_h for QK^T and 2*d_h for AV per query head; with no window
    4 * pairs = 2*((C+S)(C+S+1) - C(C+1)), the closed form given there."""
    linear = 2 * model.params_active * new
    pairs = model.full_attention_layers * attention_pairs(cached, new) + (
        model.sliding_attention_layers * attention_pairs(cached, new, model.sliding_window)
    )
    return linear + 4 * model.num_query_heads * model.attention_flops_dim * pairs


def prefill_bytes(deployment: Deployment, cached: int, new: int) -> Fraction:
    model = deployment.model
    return (
        deployment.weight_bytes
        + model.kv_bytes_for_context(cached, deployment.kv_dtype)
        + new * deployment.kv_bytes_per_token
        + 2 * model.recurrent_state_bytes(deployment.state_dtype)
    )


@dataclass(frozen=True, slots=True)
class PrefillTime:
    flops: Fraction
    bytes_moved: Fraction
    compute_seconds: Fraction
    memory_seconds: Fraction

    @property
    def seconds(self) -> Fraction:
        return max(self.compute_seconds, self.memory_seconds)

    @property
    def bound(self) -> str:
        return "compute" if self.compute_seconds >= self.memory_seconds else "memory"

    def to_json(self) -> dict[str, Any]:
        return {
            "flops": float(self.flops),
            "bytes_moved": float(self.bytes_moved),
            "compute_ms": float(self.compute_seconds * 1000),
            "memory_ms": float(self.memory_seconds * 1000),
            "prefill_ms": float(self.seconds * 1000),
            "bound": self.bound,
        }


def prefill_time(deployment: Deployment, cached: int, new: int) -> PrefillTime:
    flops = prefill_flops(deployment.model, cached, new)
    moved = prefill_bytes(deployment, cached, new)
    return PrefillTime(
        flops, moved, flops / deployment.peak_flops, moved / deployment.memory_bandwidth
    )


def prefill_seconds_many(
    deployment: Deployment, cached: npt.ArrayLike, new: npt.ArrayLike
) -> FloatArray:
    """:func:`prefill_time` ``.seconds`` for many requests at once, in float64 (used where a
    log's thousands of requests are re-timed many times, e.g. the break-even search)."""
    model = deployment.model
    c = np.asarray(cached, dtype=np.float64)
    s = np.asarray(new, dtype=np.float64)

    def keys_up_to(n: FloatArray, window: int | None) -> FloatArray:
        full = n * (n + 1) / 2
        if window is None:
            return full
        return np.where(n <= window, full, window * (window + 1) / 2 + window * (n - window))

    pairs = model.full_attention_layers * (keys_up_to(c + s, None) - keys_up_to(c, None))
    if model.sliding_attention_layers:
        window = model.sliding_window
        pairs = pairs + model.sliding_attention_layers * (
            keys_up_to(c + s, window) - keys_up_to(c, window)
        )
    flops = 2.0 * model.params_active * s + (
        4.0 * model.num_query_heads * float(model.attention_flops_dim) * pairs
    )
    per_layer = float(model.kv_elements_per_token_per_layer * dtype_bytes(deployment.kv_dtype))
    windowed = c if model.sliding_window is None else np.minimum(c, model.sliding_window)
    cached_kv = per_layer * (
        model.full_attention_layers * c + model.sliding_attention_layers * windowed
    )
    moved = (
        float(deployment.weight_bytes)
        + cached_kv
        + s * float(deployment.kv_bytes_per_token)
        + 2.0 * float(model.recurrent_state_bytes(deployment.state_dtype))
    )
    result: FloatArray = np.maximum(
        flops / float(deployment.peak_flops), moved / float(deployment.memory_bandwidth)
    )
    return result


def decode_step_seconds(deployment: Deployment, batch: int, context: int) -> Fraction:
    """One decode step of ``batch`` sequences at ``context`` tokens: weights plus every
    sequence's KV (and state) read once, at full memory bandwidth."""
    moved = deployment.weight_bytes + batch * deployment.request_bytes(context)
    return moved / deployment.memory_bandwidth


def decode_ceiling(deployment: Deployment, batch: int, context: int) -> Fraction:
    """Q(B, N) = B*BW / (W + B*kv(N)): aggregate decode tokens/s, memory-bound ceiling."""
    if batch < 1:
        raise ValueError(f"batch must be >= 1, got {batch}")
    return batch / decode_step_seconds(deployment, batch, context)


def b_star(deployment: Deployment, context: int) -> Fraction:
    """B* = W / kv(N): the batch at which KV traffic equals the weight payload."""
    per_request = deployment.request_bytes(context)
    if per_request == 0:
        raise ValueError("a request with no KV and no state makes B* unbounded")
    return deployment.weight_bytes / per_request


def tier_fetch_seconds(deployment: Deployment, tokens: int, tier_bandwidth: int) -> Fraction:
    """Time to bring ``tokens`` tokens of KV from a slower tier: tokens*b_kv / tier_bw."""
    return tokens * deployment.kv_bytes_per_token / tier_bandwidth


def fetch_beats_recompute(
    deployment: Deployment, cached: int, extra: int, new: int, tier_bandwidth: int
) -> bool:
    """Whether fetching ``extra`` more cached tokens (after ``cached`` already in HBM) beats
    recomputing them: tokens*b_kv/tier_bw < prefill(cached, extra+new) - prefill(cached+extra,
    new)."""
    saved = (
        prefill_time(deployment, cached, extra + new).seconds
        - prefill_time(deployment, cached + extra, new).seconds
    )
    return tier_fetch_seconds(deployment, extra, tier_bandwidth) < saved


def pollaczek_khinchine_wait(
    arrival_rate: float, service_seconds: FloatArray, utilization: float
) -> float | None:
    """Mean queue wait of an M/G/1 queue: rate * E[S^2] / (2 (1 - utilization)); None when
    the queue is saturated (utilization >= 1: no steady state)."""
    if utilization >= 1:
        return None
    if service_seconds.size == 0:
        return 0.0
    return arrival_rate * float(np.mean(service_seconds**2)) / (2 * (1 - utilization))


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
