"""Self-hosting against one hosted bill: cost differences, break-even volume and hit rate.

:func:`versus` sets a self-hosted comparison (:mod:`compare`) against one hosted target's
bill for the same log. Formulas and their assumptions: docs/economics.md.
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal

import numpy as np

from cachecast.economics.capacity import Deployment
from cachecast.economics.compare import SelfHostedComparison
from cachecast.economics.gpu_hours import HOURS_PER_MONTH, SECONDS_PER_MONTH, round_dollars
from cachecast.economics.timing import FloatArray, prefill_seconds_many


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
    per_million = round_dollars(hosted_total * 1_000_000 / total_input) if total_input else None
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
                replica_cost_per_month=round_dollars(replica_month),
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
