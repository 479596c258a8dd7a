"""Report pieces of predictions that ``estimate`` and ``reconcile`` share: the tokens not read
from cache by cause, the calibration of approximate tokenizers, and hit rate over time."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal
from fractions import Fraction

from pydantic import Field

from cachecast.simulator.misses import CAUSES
from cachecast.simulator.pricing import TargetTotals
from cachecast.tokenizers.calibration import RatioStats
from cachecast.usecases.reports import Money, Report

TIMELINE_POINTS = 60
RATIO_PLACES = Decimal("0.000001")


class MissCauseTotal(Report):
    """Prompt tokens not read from cache for one cause, and what reading them would have
    saved (their price at the input rate less the read rate)."""

    cause: str = Field(examples=["first_sight"])
    tokens: int
    cost_lost: Money


def miss_causes_of(result: TargetTotals) -> list[MissCauseTotal]:
    """Every cause with tokens, in the order of ``simulator.misses.CAUSES``."""
    return [
        MissCauseTotal(
            cause=cause,
            tokens=result.miss_tokens[cause],
            cost_lost=result.miss_cost.get(cause, Decimal(0)),
        )
        for cause in CAUSES
        if result.miss_tokens.get(cause)
    ]


class CalibrationReport(Report):
    """How the approximate tokenization of one logged model was calibrated.

    ``ratio``: observed / approximate text tokens over the requests with usage (weighted by
    their text); ``ratio_min``/``ratio_max``/``ratio_stdev`` the spread of the per-request
    ratios; ``relative_spread`` half their range over the mean (how far a calibrated
    position may be off)."""

    model: str
    requests_fitted: int = Field(description="scaled to their own observed prompt length")
    requests_ratio_applied: int = Field(description="without usage: scaled by the ratio")
    requests_uncalibrated: int = Field(description="without usage, before any ratio was known")
    samples: int = Field(description="requests the ratio was learned from")
    ratio: str | None
    ratio_min: str | None
    ratio_max: str | None
    ratio_stdev: str
    relative_spread: str
    implausible: int = Field(description="ratios far from 1: the logged text is not what was sent")
    incomplete: int = Field(description="fitted requests whose prompt the log does not hold whole")


def _ratio_text(value: Fraction | float | None) -> str | None:
    if value is None:
        return None
    quotient = (
        Decimal(value.numerator) / Decimal(value.denominator)
        if isinstance(value, Fraction)
        else Decimal(repr(value))
    )
    return format(quotient.quantize(RATIO_PLACES), "f")


def calibration_of(models: dict[str, RatioStats]) -> list[CalibrationReport]:
    reports = []
    for model, stats in sorted(models.items()):
        if not (stats.fitted or stats.ratio_applied or stats.uncalibrated):
            continue
        reports.append(
            CalibrationReport(
                model=model or "(none)",
                requests_fitted=stats.fitted,
                requests_ratio_applied=stats.ratio_applied,
                requests_uncalibrated=stats.uncalibrated,
                samples=stats.samples,
                ratio=_ratio_text(stats.ratio),
                ratio_min=_ratio_text(stats.ratio_min),
                ratio_max=_ratio_text(stats.ratio_max),
                ratio_stdev=_ratio_text(stats.stdev) or "0",
                relative_spread=_ratio_text(stats.relative_spread) or "0",
                implausible=stats.implausible,
                incomplete=stats.incomplete,
            )
        )
    return reports


class TimelinePoint(Report):
    """The requests that started in [start, start + seconds)."""

    start: dt.datetime
    seconds: float
    requests: int
    input_tokens: int
    cache_read_tokens: int
    hit_rate: float


def timeline_of(result: TargetTotals, points: int = TIMELINE_POINTS) -> list[TimelinePoint]:
    """Hit rate over time: the replay's buckets, merged into at most ``points`` of equal
    width over the log's time span."""
    buckets = sorted(
        (index * width, width, key) for key in result.timeline_requests for width, index in [key]
    )
    if not buckets:
        return []
    first = buckets[0][0]
    last = max(start + width for start, width, _ in buckets)
    width = max(max(w for _, w, _ in buckets), -(-(last - first) // points))
    grouped: dict[int, list[tuple[int, int]]] = {}
    for start, _, key in buckets:
        grouped.setdefault((start - first) // width, []).append(key)
    timeline = []
    for slot, keys in sorted(grouped.items()):
        requests = sum(result.timeline_requests[key] for key in keys)
        prompt = sum(result.timeline_input[key] for key in keys)
        read = sum(result.timeline_read[key] for key in keys)
        timeline.append(
            TimelinePoint(
                start=dt.datetime.fromtimestamp(first + slot * width, tz=dt.UTC),
                seconds=width,
                requests=requests,
                input_tokens=prompt,
                cache_read_tokens=read,
                hit_rate=read / prompt if prompt else 0.0,
            )
        )
    return timeline


def notes_of(result: TargetTotals) -> list[str]:
    """The assumptions the replay made, each with the number of requests it concerned."""
    notes = [f"{note} ({count} requests)" for note, count in sorted(result.notes.items())]
    if result.skipped_cache_objects:
        notes.append(
            f"{result.skipped_cache_objects} cache creations (Gemini cachedContents) are not"
            " billed under this contract, which has no such objects"
        )
    return notes
