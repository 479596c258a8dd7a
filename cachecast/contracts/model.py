"""Domain types of a provider caching contract, independent of any database.

A contract version is immutable: a change in terms is a new version with its own
``effective_from``; the old one gets an ``effective_to``. Money is ``Decimal`` everywhere.
Dates are half-open: a version is in force on ``effective_from <= day < effective_to``.
"""

from __future__ import annotations

import datetime as dt
from decimal import Decimal
from enum import StrEnum

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from cachecast.core.dates import IsoDate


class CacheMode(StrEnum):
    """How cache entries come into being."""

    AUTOMATIC = "automatic"  # provider caches prefixes on its own (OpenAI <= 5.5, DeepSeek)
    EXPLICIT = "explicit"  # only at caller-marked breakpoints (Anthropic cache_control)
    BOTH = "both"  # implicit entries plus explicit ones (GPT-5.6+, Gemini, Qwen)


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
    ttl_options: tuple[TtlOption, ...] = Field(min_length=1)
    read_multiplier: Decimal = Field(ge=0)
    storage_per_mtok_hour: Decimal | None = Field(default=None, ge=0)
    scope: str = Field(default="organization", description="what separates caches")
    reported_input_includes_cached: bool = True

    input_per_mtok: Decimal = Field(ge=0)
    output_per_mtok: Decimal = Field(ge=0)
    long_context_tiers: tuple[PriceTier, ...] = ()
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
        return self

    @property
    def default_ttl(self) -> TtlOption:
        """The TTL used when a request names none: the first option listed."""
        return self.ttl_options[0]

    def ttl_by_name(self, name: str) -> TtlOption:
        for option in self.ttl_options:
            if option.name == name:
                return option
        known = ", ".join(option.name for option in self.ttl_options)
        raise KeyError(f"{self.provider}/{self.model} has no TTL option {name!r} (known: {known})")

    def in_force_on(self, day: dt.date) -> bool:
        return self.effective_from <= day and (self.effective_to is None or day < self.effective_to)


class ImportFormat(StrEnum):
    """The documents ``contracts import`` reads: ours, LiteLLM's price map, or detected."""

    auto = "auto"
    cachecast = "cachecast"
    litellm = "litellm"
