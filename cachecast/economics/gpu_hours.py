"""GPU time as GPU-hours and US dollars, rounded as ``compare`` and ``fleet`` both round them.

GPU-hours are float model outputs rounded to 1e-6 h; money is ``Decimal``, computed from
those GPU-hours and rounded to 1e-6 $ (docs/economics.md). A month is 730 hours.
"""

from __future__ import annotations

import math
from decimal import ROUND_HALF_EVEN, Decimal

from cachecast.core.errors import Location
from cachecast.economics.errors import ComparisonError

HOURS_PER_MONTH = Decimal(730)  # 365 * 24 / 12
SECONDS_PER_MONTH = 730 * 3600
GPU_HOURS_QUANTUM = Decimal("0.000001")
MONEY_QUANTUM = Decimal("0.000001")


def gpu_hours_of(seconds: float, gpus: int) -> Decimal:
    return Decimal(repr(seconds * gpus / 3600)).quantize(GPU_HOURS_QUANTUM, ROUND_HALF_EVEN)


def round_dollars(value: Decimal) -> Decimal:
    """``value`` US$ rounded half-even to 1e-6 $ (``simulator.billing.money`` instead
    writes an exact amount as text)."""
    return value.quantize(MONEY_QUANTUM, ROUND_HALF_EVEN)


def check_gpu_price(gpu_price: Decimal | None) -> None:
    if gpu_price is not None and (not gpu_price.is_finite() or gpu_price < 0):
        raise ComparisonError(
            f"must be a non-negative number, got {gpu_price}", location=Location(field="gpu_price")
        )


def monthly_self_hosted_cost(
    busy_seconds: float, gpus: int, gpu_price: Decimal, logs_per_month: float
) -> Decimal:
    """Self-hosted monthly bill when a log taking ``busy_seconds`` of one replica's time at
    full utilization is served ``logs_per_month`` times a month: whole replicas of ``gpus``
    GPUs, each paid for the whole month, enough to carry the busy time."""
    busy = logs_per_month * busy_seconds
    replicas = max(1, math.ceil(busy / SECONDS_PER_MONTH))
    return replicas * gpus * HOURS_PER_MONTH * gpu_price
