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
from fractions import Fraction
from typing import Annotated, Any, Self

from pydantic import AliasChoices, BaseModel, BeforeValidator, ConfigDict, Field, PlainSerializer

from cachecast.contracts.model import NO_CACHING, CacheMode, ContractTerms
from cachecast.core.errors import CachecastError
from cachecast.simulator.billing import EXACT, money
from cachecast.simulator.types import Cost, fraction_text

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
# The ``notes`` of a priced target (estimate and reconcile): one description for both.
TARGET_NOTES = (
    "assumptions made, each with the requests it concerned; among them, requests read from a"
    " batch file or served under flex: 'billed at batch prices: 50% of on-demand ...' naming"
    " the dated batch term that priced them (its source and first day; docs/contracts.md,"
    " Batch terms), or, where no term is in force, billed at on-demand prices with the tier's"
    " note; priority and scale: billed at on-demand prices, which is not what the provider"
    " charged (docs/log-formats.md, Canonical records, service_tier)"
)
HIT_RATE_PLACES = Decimal("0.000001")


def hit_rate_of(cached_tokens: int, input_tokens: int) -> Decimal:
    """``cached / input`` rounded half-even to 6 places (docs/layouts.md); 0 without input."""
    if not input_tokens:
        return Decimal(0)
    return (Decimal(cached_tokens) / Decimal(input_tokens)).quantize(HIT_RATE_PLACES)


class Report(BaseModel):
    """Base of every use case's report: immutable, no unknown fields.

    A report is read off the domain object it reports (pydantic's ``from_attributes``): a
    field takes the object's attribute of the same name (or of its ``validation_alias``),
    nested reports likewise, so a new field the object already holds is one line in the
    report. :meth:`read` adds the fields the object does not hold.

    Validators and serializers are built on a model's first use (``defer_build``), not when
    its module is imported: a command imports the reports of its use case, most of which
    only ever appear nested in one top report (built with it), and start-up is most of a
    small command's time (docs/usage-report.md "Speed")."""

    model_config = ConfigDict(frozen=True, extra="forbid", from_attributes=True, defer_build=True)

    @classmethod
    def read(cls, source: object, /, **values: Any) -> Self:
        """The report of ``source``: the fields in ``values`` as given, every other one read
        off ``source`` as :meth:`model_validate` reads an object (a missing attribute: the
        field's default)."""
        unknown = values.keys() - cls.model_fields.keys()
        if unknown:
            raise TypeError(f"{cls.__name__} has no field {', '.join(sorted(unknown))}")
        return cls.model_validate(_Overlay(source, values) if values else source)


class _Overlay:
    """``source`` seen through ``values``: an attribute named there is the value given."""

    __slots__ = ("_source", "_values")

    def __init__(self, source: object, values: dict[str, Any]) -> None:
        self._source = source
        self._values = values

    def __getattr__(self, name: str) -> Any:
        if name in self._values:
            return self._values[name]
        return getattr(self._source, name)


def _fraction_as_text(value: Any) -> Any:
    return fraction_text(value) if isinstance(value, Fraction) else value


# An exact fraction as a decimal string in the report (``simulator.types.fraction_text``).
FractionText = Annotated[str, BeforeValidator(_fraction_as_text)]

# A reconciliation's sums of predicted and observed cache reads, read off
# ``simulator.reconcile.ReconciliationSummary`` (whose names say "sum").
PredictedReads = Annotated[
    int, Field(validation_alias=AliasChoices("predicted_cache_read_tokens", "predicted_read_sum"))
]
ObservedReads = Annotated[
    int, Field(validation_alias=AliasChoices("observed_cache_read_tokens", "observed_read_sum"))
]


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
            return cls.read(cost, total=cost.total)


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
        version = f"{contract.provider}/{contract.model}@{contract.effective_from.isoformat()}"
        return cls.read(contract, version=version)

    @property
    def offers_caching(self) -> bool:
        """False where the version's mode is none (``ContractTerms.offers_caching``)."""
        return self.mode != CacheMode.NONE.value

    def described(self) -> str:
        """The version, plus "(no prompt caching offered)" where its mode is none: what a
        text report prints for the contract that priced a result."""
        if not self.offers_caching:
            return f"{self.version} ({NO_CACHING})"
        return self.version


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
        return cls.read(
            where, file=where.source or "", field=where.field or "", reason=error.message
        )

    def one_line(self) -> str:
        place = f"{self.file}:{self.line}" if self.line is not None else self.file
        if self.line is None and self.record is not None:
            place = f"{self.file}: record {self.record}"
        return f"{place}: {self.field}: {self.reason}"


def issues_of(errors: Sequence[CachecastError]) -> list[InputIssue]:
    return [InputIssue.of(error) for error in errors]
