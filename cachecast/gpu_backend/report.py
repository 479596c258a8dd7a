"""A measurement's report: predicted against measured hits, TTFT percentiles, throughput.

The report is also the engine's "inference passport": engine version, model, device and
cache geometry stored with every figure, so a measurement can be traced to what produced it.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime

from cachecast.gpu_backend.types import EngineInfo, MetricsSnapshot, ReplayOptions


@dataclass(frozen=True, slots=True)
class RequestComparison:
    """One request: what the engine measured and (if asked) what the simulator predicted."""

    request_id: str
    line: int
    prompt_tokens: int
    measured_cached_tokens: int | None
    predicted_cached_tokens: int | None
    output_tokens: int
    ttft_s: float
    latency_s: float

    @property
    def warm(self) -> bool | None:
        """A request is warm when it hit the cache (measured, else predicted; None: unknown)."""
        cached = self.measured_cached_tokens
        if cached is None:
            cached = self.predicted_cached_tokens
        return None if cached is None else cached > 0

    @property
    def matches(self) -> bool | None:
        if self.measured_cached_tokens is None or self.predicted_cached_tokens is None:
            return None
        return self.measured_cached_tokens == self.predicted_cached_tokens


def percentile(values: Sequence[float], fraction: float) -> float | None:
    """Nearest-rank percentile: the smallest value with at least ``fraction`` of values <= it."""
    if not values:
        return None
    ordered = sorted(values)
    rank = max(1, math.ceil(fraction * len(ordered)))
    return ordered[rank - 1]


def total_if_known(values: Iterable[int | None]) -> int | None:
    """The sum, or None when any value is unknown (a total must not hide missing figures)."""
    total = 0
    for value in values:
        if value is None:
            return None
        total += value
    return total


def ttft_summary(values: Sequence[float]) -> dict[str, float | int | None]:
    return {
        "count": len(values),
        "p50_s": percentile(values, 0.50),
        "p90_s": percentile(values, 0.90),
        "p95_s": percentile(values, 0.95),
        "p99_s": percentile(values, 0.99),
    }


@dataclass(slots=True)
class MeasurementReport:
    """Everything one replay measured, plus the simulator's prediction where asked."""

    engine: EngineInfo
    source: str
    options: ReplayOptions
    cache_isolation: str  # "reset" or "salt" (see EngineBackend.reset_prefix_cache)
    requests: list[RequestComparison]
    metrics_delta: MetricsSnapshot
    wall_s: float
    simulator_policy: str | None = None
    measured_at: datetime = field(default_factory=lambda: datetime.now(UTC))
    stored_id: int | None = None

    @property
    def prompt_tokens(self) -> int:
        return sum(request.prompt_tokens for request in self.requests)

    @property
    def output_tokens(self) -> int:
        return sum(request.output_tokens for request in self.requests)

    @property
    def measured_cached_tokens(self) -> int | None:
        return total_if_known(request.measured_cached_tokens for request in self.requests)

    @property
    def predicted_cached_tokens(self) -> int | None:
        return total_if_known(request.predicted_cached_tokens for request in self.requests)

    @property
    def hit_rate(self) -> float:
        """Cached share of prompt tokens: per-request figures, else the engine's counters."""
        cached = self.measured_cached_tokens
        if cached is not None:
            return cached / self.prompt_tokens if self.prompt_tokens else 0.0
        delta = self.metrics_delta
        return (
            delta.prefix_cache_hits / delta.prefix_cache_queries
            if delta.prefix_cache_queries
            else 0.0
        )

    @property
    def exact_match_share(self) -> float | None:
        """Share of requests whose measured cached tokens equal the prediction exactly."""
        verdicts = [request.matches for request in self.requests]
        if not verdicts or any(verdict is None for verdict in verdicts):
            return None
        return sum(1 for verdict in verdicts if verdict) / len(verdicts)

    @property
    def mismatches(self) -> list[RequestComparison]:
        return [request for request in self.requests if request.matches is False]

    def ttft(self, warm: bool | None = None) -> dict[str, float | int | None]:
        """TTFT percentiles of the warm or the cold requests, or of all (``warm`` None)."""
        return ttft_summary([r.ttft_s for r in self.requests if warm is None or r.warm is warm])

    @property
    def input_tokens_per_s(self) -> float:
        return self.prompt_tokens / self.wall_s if self.wall_s > 0 else 0.0

    @property
    def output_tokens_per_s(self) -> float:
        return self.output_tokens / self.wall_s if self.wall_s > 0 else 0.0

    @property
    def counters_agree(self) -> bool:
        """Whether the engine's counters moved by exactly the per-request figures."""
        delta = self.metrics_delta
        return (
            delta.prefix_cache_queries == self.prompt_tokens
            and self.measured_cached_tokens in (None, delta.prefix_cache_hits)
            and delta.ttft_count == len(self.requests)
        )
