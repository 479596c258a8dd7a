"""Pieces every typed report shares: exact money, the contract reference, bad-input entries.

A report is a pydantic model; its JSON (``model_dump(mode="json")``) is the one shape that
``--json``, the API's response, a stored job result and the Ray runner all produce. Money is
``Decimal`` in Python and an exact decimal string in JSON (``billing.money``: every digit, no
exponent, no trailing zeros), so equal amounts print equally and nothing rounds.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from decimal import Decimal, localcontext
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, PlainSerializer

from cachecast.contracts.model import ContractTerms
from cachecast.core.errors import CachecastError
from cachecast.simulator.billing import EXACT, money
from cachecast.simulator.types import Cost

Money = Annotated[
    Decimal,
    PlainSerializer(money, return_type=str, when_used="json"),
    Field(description="US dollars, exact, as a decimal string in JSON"),
]
Ratio = Annotated[
    Decimal,
    PlainSerializer(str, return_type=str, when_used="json"),
    Field(description="an exact decimal, as a string in JSON"),
]
# An exact decimal in Python, a JSON number in the report (hit rates and percentage points).
DecimalNumber = Annotated[Decimal, PlainSerializer(float, return_type=float, when_used="json")]
HIT_RATE_PLACES = Decimal("0.000001")


def hit_rate_of(cached_tokens: int, input_tokens: int) -> Decimal:
    """``cached / input`` rounded half-even to 6 places (docs/layouts.md); 0 without input."""
    if not input_tokens:
        return Decimal(0)
    return (Decimal(cached_tokens) / Decimal(input_tokens)).quantize(HIT_RATE_PLACES)


class Report(BaseModel):
    """Base of every use case's report: immutable, no unknown fields."""

    model_config = ConfigDict(frozen=True, extra="forbid")


class CostBreakdown(Report):
    """A bill split by what it pays for."""

    input: Money
    cache_write: Money
    cache_read: Money
    output: Money
    storage: Money
    total: Money

    @classmethod
    def of(cls, cost: Cost) -> CostBreakdown:
        with localcontext(EXACT):  # the default context would round at 28 digits
            exact_total = cost.total
        return cls(
            input=cost.input,
            cache_write=cost.cache_write,
            cache_read=cost.cache_read,
            output=cost.output,
            storage=cost.storage,
            total=exact_total,
        )


class TtlOptionReference(Report):
    name: str
    ttl_seconds: int
    refresh_on_hit: bool
    write_multiplier: Ratio


class ContractReference(Report):
    """Which dated contract version priced a result, and where its terms come from."""

    version: str = Field(examples=["openai/gpt-4o@2024-10-01"])
    provider: str
    model: str
    effective_from: dt.date
    effective_to: dt.date | None
    verified_on: dt.date
    source: str
    mode: str
    input_per_mtok: Ratio
    output_per_mtok: Ratio
    read_multiplier: Ratio
    ttl_options: list[TtlOptionReference]

    @classmethod
    def of(cls, contract: ContractTerms) -> ContractReference:
        return cls(
            version=f"{contract.provider}/{contract.model}@{contract.effective_from.isoformat()}",
            provider=contract.provider,
            model=contract.model,
            effective_from=contract.effective_from,
            effective_to=contract.effective_to,
            verified_on=contract.verified_on,
            source=contract.source,
            mode=str(contract.mode),
            input_per_mtok=contract.input_per_mtok,
            output_per_mtok=contract.output_per_mtok,
            read_multiplier=contract.read_multiplier,
            ttl_options=[
                TtlOptionReference(
                    name=option.name,
                    ttl_seconds=option.ttl_seconds,
                    refresh_on_hit=option.refresh_on_hit,
                    write_multiplier=option.write_multiplier,
                )
                for option in contract.ttl_options
            ],
        )


class InputIssue(Report):
    """One bad line or record that was skipped: where it is and why."""

    file: str
    line: int | None
    record: int | None = None
    field: str
    reason: str

    @classmethod
    def of(cls, error: CachecastError) -> InputIssue:
        where = error.location
        return cls(
            file=where.source or "",
            line=where.line,
            record=where.record,
            field=where.field or "",
            reason=error.message,
        )

    def one_line(self) -> str:
        place = f"{self.file}:{self.line}" if self.line is not None else self.file
        if self.line is None and self.record is not None:
            place = f"{self.file}: record {self.record}"
        return f"{place}: {self.field}: {self.reason}"


def issues_of(errors: Sequence[CachecastError]) -> list[InputIssue]:
    return [InputIssue.of(error) for error in errors]
