"""Domain types of a provider caching contract, independent of any database.

A contract version is immutable: a change in terms is a new version with its own
``effective_from``; the old one gets an ``effective_to``. Money is ``Decimal`` everywhere.
Dates are half-open: a version is in force on ``effective_from <= day < effective_to``.
"""

from __future__ import annotations

import datetime as dt
import re
from decimal import Context, Decimal
from enum import StrEnum

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from cachecast.core.dates import IsoDate

# Multipliers are stored to ten decimal places (the column's scale); most were computed from
# two published prices (cache price / input price, as the price maps give them) and rounded
# there (docs/contracts.md, "Prices from ratios"). A cache price is their product rounded to
# a hundred-millionth of a dollar per million tokens, finer than any published price, so that
# a bill carries the provider's price and not the ratio's rounding (2.75 x 0.5018181818 =
# 1.37999999995 -> 1.38). Exact for input prices under $100/MTok, where the ratio's error
# (at most input x 5e-11) stays under half that quantum.
DERIVED_PRICE_QUANTUM = Decimal("1e-8")
_DERIVING = Context(prec=60)


def derived_per_mtok(price_per_mtok: Decimal, multiplier: Decimal) -> Decimal:
    """The price per million tokens of a cache read or write: ``price x multiplier`` rounded
    half-even to ``DERIVED_PRICE_QUANTUM`` (see above)."""
    product = _DERIVING.multiply(price_per_mtok, multiplier)
    return product.quantize(DERIVED_PRICE_QUANTUM, context=_DERIVING)


class CacheMode(StrEnum):
    """How cache entries come into being."""

    AUTOMATIC = "automatic"  # provider caches prefixes on its own (OpenAI <= 5.5, DeepSeek)
    EXPLICIT = "explicit"  # only at caller-marked breakpoints (Anthropic cache_control)
    BOTH = "both"  # implicit entries plus explicit ones (GPT-5.6+, Gemini, Qwen)
    # No prompt caching offered (gpt-4-turbo, gpt-4o before 2024-10-01, Claude 3 before
    # 2024-08-14): nothing is read or written, every prompt token is billed at the input
    # price; such a version has no TTL options (docs/contracts.md, "Versions without caching").
    NONE = "none"


NO_CACHING = "no prompt caching offered"
"""How reports say that a version's mode is none."""


class TtlOption(BaseModel):
    """One lifetime a cache entry can be written with, and what writing it costs."""

    model_config = ConfigDict(frozen=True)

    name: str = Field(description="short label used in logs, e.g. '5m', '1h', '30m'")
    ttl_seconds: int = Field(gt=0)
    refresh_on_hit: bool = Field(description="whether a read restarts the lifetime")
    write_multiplier: Decimal = Field(ge=0, description="write price / base input price")


class PriceTier(BaseModel):
    """Prices that apply to a whole request once its prompt exceeds ``above_input_tokens``."""

    model_config = ConfigDict(frozen=True)

    above_input_tokens: int = Field(gt=0)
    input_per_mtok: Decimal = Field(ge=0)
    output_per_mtok: Decimal = Field(ge=0)


_CLOCK = re.compile(r"([01]\d|2[0-4]):([0-5]\d)")


def _minute_of_day(text: str) -> int:
    match = _CLOCK.fullmatch(text)
    if match is None or (match.group(1) == "24" and match.group(2) != "00"):
        raise ValueError(f"{text!r} is not a time HH:MM between 00:00 and 24:00")
    return int(match.group(1)) * 60 + int(match.group(2))


class OffPeakWindow(BaseModel):
    """A discount window: on these ISO weekdays (1 = Monday ... 7 = Sunday), from ``start``
    (inclusive) to ``end`` (exclusive), UTC clock time; ``24:00`` ends at midnight."""

    model_config = ConfigDict(frozen=True)

    weekdays: tuple[int, ...] = Field(min_length=1)
    start: str
    end: str

    @model_validator(mode="after")
    def _check(self) -> OffPeakWindow:
        if any(day < 1 or day > 7 for day in self.weekdays):
            raise ValueError("weekdays are ISO numbers 1 (Monday) to 7 (Sunday)")
        if list(self.weekdays) != sorted(set(self.weekdays)):
            raise ValueError("weekdays must be increasing, without repeats")
        if _minute_of_day(self.start) >= _minute_of_day(self.end):
            raise ValueError("start must be before end (a window past midnight is two windows)")
        return self

    def contains(self, moment: dt.datetime) -> bool:
        utc = moment.astimezone(dt.UTC)
        minute = utc.hour * 60 + utc.minute
        return utc.isoweekday() in self.weekdays and _minute_of_day(
            self.start
        ) <= minute < _minute_of_day(self.end)

    def text(self) -> str:
        """The stored form, e.g. ``1,2,3,4,5 10:00-24:00``."""
        return f"{','.join(str(day) for day in self.weekdays)} {self.start}-{self.end}"

    @classmethod
    def parse(cls, text: str) -> OffPeakWindow:
        days, _, hours = text.strip().partition(" ")
        start, _, end = hours.partition("-")
        return cls(weekdays=tuple(int(day) for day in days.split(",")), start=start, end=end)


class OffPeakPrices(BaseModel):
    """Prices that replace the base ones for a request sent inside one of the windows
    (DeepSeek's off-peak discount). Decided by the request's timestamp; a request without
    one pays the base prices (the report says how many)."""

    model_config = ConfigDict(frozen=True)

    windows: tuple[OffPeakWindow, ...] = Field(min_length=1)
    input_per_mtok: Decimal = Field(ge=0)
    output_per_mtok: Decimal = Field(ge=0)
    read_multiplier: Decimal = Field(ge=0, description="read price / off-peak input price")

    def applies_at(self, moment: dt.datetime) -> bool:
        return any(window.contains(moment) for window in self.windows)


# The terms a version can take over from its model family: everything except what names,
# dates and sources the version itself.
INFERABLE_FIELDS = frozenset(
    {
        "mode",
        "min_cacheable_tokens",
        "increment_tokens",
        "lookback_blocks",
        "max_breakpoints",
        "ttl_options",
        "read_multiplier",
        "storage_per_mtok_hour",
        "scope",
        "reported_input_includes_cached",
        "input_per_mtok",
        "output_per_mtok",
        "long_context_tiers",
    }
)


class ContractTerms(BaseModel):
    """One dated version of a provider's caching contract for one model."""

    model_config = ConfigDict(frozen=True)

    provider: str
    model: str
    aliases: tuple[str, ...] = Field(
        default=(), description="other ids or fnmatch patterns such as 'claude-sonnet-4-5*'"
    )
    effective_from: IsoDate
    effective_to: IsoDate | None = None
    verified_on: IsoDate
    source: str = Field(min_length=1, description="address of the provider page")
    notes: str = ""

    mode: CacheMode
    min_cacheable_tokens: int = Field(ge=0)
    increment_tokens: int | None = Field(default=None, gt=0)
    lookback_blocks: int | None = Field(default=None, gt=0)
    max_breakpoints: int | None = Field(default=None, gt=0)
    ttl_options: tuple[TtlOption, ...] = Field(
        description="empty exactly when mode is none (no caching offered)"
    )
    read_multiplier: Decimal = Field(ge=0)
    storage_per_mtok_hour: Decimal | None = Field(default=None, ge=0)
    scope: str = Field(default="organization", description="what separates caches")
    reported_input_includes_cached: bool = True

    input_per_mtok: Decimal = Field(ge=0)
    output_per_mtok: Decimal = Field(ge=0)
    long_context_tiers: tuple[PriceTier, ...] = ()
    off_peak: OffPeakPrices | None = Field(
        default=None, description="discount windows by UTC time of day (DeepSeek)"
    )
    inferred_fields: tuple[str, ...] = Field(
        default=(),
        description=(
            "caching rules this version inherits from its model family because no source "
            "states them for this model itself (field names, e.g. 'min_cacheable_tokens')"
        ),
    )

    @field_validator("provider", "model")
    @classmethod
    def _lowercase_ids(cls, value: str) -> str:
        value = value.strip().lower()
        if not value:
            raise ValueError("must not be empty")
        return value

    @model_validator(mode="after")
    def _check_consistency(self) -> ContractTerms:
        if self.effective_to is not None and self.effective_to <= self.effective_from:
            raise ValueError("effective_to must be after effective_from")
        if self.mode is CacheMode.NONE and self.ttl_options:
            raise ValueError("ttl_options must be empty when mode is 'none' (nothing is cached)")
        if self.mode is not CacheMode.NONE and not self.ttl_options:
            raise ValueError(
                f"ttl_options must list at least one option when mode is {self.mode.value!r}"
                " (only mode 'none' has none)"
            )
        names = [option.name for option in self.ttl_options]
        if len(set(names)) != len(names):
            raise ValueError("ttl_options names must be unique")
        unknown = [name for name in self.inferred_fields if name not in INFERABLE_FIELDS]
        if unknown:
            known = ", ".join(sorted(INFERABLE_FIELDS))
            raise ValueError(f"inferred_fields: unknown field(s) {unknown} (known: {known})")
        if len(set(self.inferred_fields)) != len(self.inferred_fields):
            raise ValueError("inferred_fields must be unique")
        thresholds = [tier.above_input_tokens for tier in self.long_context_tiers]
        if thresholds != sorted(set(thresholds)):
            raise ValueError("long_context_tiers must have strictly increasing thresholds")
        if self.off_peak is not None and self.long_context_tiers:
            # No provider publishes both; which would win is not documented.
            raise ValueError("off_peak and long_context_tiers cannot be combined")
        return self

    @property
    def offers_caching(self) -> bool:
        """False for a version with mode none: the provider caches nothing."""
        return self.mode is not CacheMode.NONE

    @property
    def default_ttl(self) -> TtlOption | None:
        """The TTL used when a request names none: the first option listed; None where the
        version offers no caching (callers say what that means for them)."""
        return self.ttl_options[0] if self.ttl_options else None

    def ttl_by_name(self, name: str) -> TtlOption:
        for option in self.ttl_options:
            if option.name == name:
                return option
        if not self.offers_caching:
            raise KeyError(
                f"{self.provider}/{self.model} (from {self.effective_from}) offers no prompt"
                f" caching: no TTL option {name!r}"
            )
        known = ", ".join(option.name for option in self.ttl_options)
        raise KeyError(f"{self.provider}/{self.model} has no TTL option {name!r} (known: {known})")

    def in_force_on(self, day: dt.date) -> bool:
        return self.effective_from <= day and (self.effective_to is None or day < self.effective_to)


class ImportFormat(StrEnum):
    """The documents ``contracts import`` reads: ours, LiteLLM's price map, or detected."""

    auto = "auto"
    cachecast = "cachecast"
    litellm = "litellm"
