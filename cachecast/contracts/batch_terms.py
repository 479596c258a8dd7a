"""Batch terms: dated prices of a provider's Batch API (and OpenAI's Flex processing) as a ratio
of its on-demand prices (docs/contracts.md, "Batch terms").

A request read from a batch file, or served under ``service_tier: flex``, was charged less than
the on-demand prices the contract versions hold. One :class:`BatchTerm` says, for a provider
(and optionally a list of its models), from which day to which day a tier (``batch`` or
``flex``) bills which token classes at ``price_ratio`` times the contract's price. The classes
a term lists are discounted, the others keep the on-demand bill: a term whose ``applies_to``
names ``cache_read`` makes the cache discount stack with the batch discount (a read costs
ratio x input price x read multiplier); one that leaves it out bills reads at the on-demand
read price. Money stays Decimal: the ratio is exact and a bill's part times it terminates.

Terms are versioned apart from the contract versions because they change on their own dates
(a batch API launched mid-version) and name many models at once; the store keeps them in the
``batch_term`` table (migration 0034), seeded from ``data/batch-terms-v1.json``; migration
0035 adds ``data/batch-terms-v2.json``.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Iterable, Mapping
from decimal import Decimal
from enum import StrEnum
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from cachecast.contracts.errors import ContractFormatError
from cachecast.core.dates import IsoDate

DOCUMENT_FORMAT = "cachecast-batch-terms"
DOCUMENT_FORMAT_VERSION = 1
DATA_DIR = Path(__file__).with_name("data")
SEED_FILE = "batch-terms-v1.json"
# Terms of providers sourced after the first seed (migration 0035_batch_terms_v2).
SEED_FILE_V2 = "batch-terms-v2.json"
TIERS = ("batch", "flex")
# How every term's note begins (``BatchTerm.note``): what the text reports look for.
TERM_NOTE_PREFIXES = tuple(f"billed at {tier} prices: " for tier in TIERS)


class TokenClass(StrEnum):
    """The parts of a bill a term can discount (storage never is: no batch page prices it)."""

    INPUT = "input"
    CACHE_READ = "cache_read"
    CACHE_WRITE = "cache_write"
    OUTPUT = "output"


# How a note names each class (the JSON keys stay the enum values).
_WORDS = {
    TokenClass.INPUT: "input",
    TokenClass.CACHE_READ: "cache reads",
    TokenClass.CACHE_WRITE: "cache writes",
    TokenClass.OUTPUT: "output",
}


class BatchTerm(BaseModel):
    """One dated batch (or flex) price term of one provider."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    provider: str = Field(min_length=1)
    models: tuple[str, ...] | None = Field(
        default=None,
        description="contract model ids the term covers; None: every model of the provider",
    )
    tier: Literal["batch", "flex"]
    effective_from: IsoDate
    effective_to: IsoDate | None = None
    price_ratio: Decimal = Field(gt=0, le=1, description="batch price / on-demand price")
    applies_to: tuple[TokenClass, ...] = Field(
        min_length=1, description="the token classes billed at price_ratio x on-demand"
    )
    verified_on: IsoDate
    source: str = Field(min_length=1, description="address(es) of the provider's page(s)")
    notes: str = ""

    @model_validator(mode="after")
    def _consistent(self) -> BatchTerm:
        if self.provider != self.provider.strip().lower():
            raise ValueError(f"provider {self.provider!r} must be lower case")
        if self.effective_to is not None and self.effective_to <= self.effective_from:
            raise ValueError("effective_to must be after effective_from")
        if len(set(self.applies_to)) != len(self.applies_to):
            raise ValueError("applies_to names a token class twice")
        if self.models is not None:
            if not self.models:
                raise ValueError("models is null (every model) or a non-empty list")
            if any(model != model.strip().lower() or not model for model in self.models):
                raise ValueError("models must be lower-case contract model ids")
        if not self.price_ratio.is_finite():
            raise ValueError("price_ratio must be a finite decimal")
        return self

    def in_force_on(self, day: dt.date) -> bool:
        return self.effective_from <= day and (self.effective_to is None or day < self.effective_to)

    def covers(self, provider: str, model: str, tier: str, day: dt.date) -> bool:
        """Whether a request of ``provider``'s contract model ``model`` served under ``tier``
        on ``day`` is billed under this term."""
        return (
            self.provider == provider
            and self.tier == tier
            and (self.models is None or model in self.models)
            and self.in_force_on(day)
        )

    def discounts(self, token_class: TokenClass) -> bool:
        return token_class in self.applies_to

    @property
    def first_source(self) -> str:
        return self.source.split()[0]

    @property
    def note(self) -> str:
        """What the reports say of the requests billed under this term."""
        percent = format((self.price_ratio * 100).normalize(), "f")
        words = [_WORDS[token_class] for token_class in self.applies_to]
        classes = words[0] if len(words) == 1 else f"{', '.join(words[:-1])} and {words[-1]}"
        until = f" to {self.effective_to.isoformat()}" if self.effective_to else ""
        return (
            f"billed at {self.tier} prices: {percent}% of on-demand for {classes}"
            f" ({self.provider} {self.tier} term, {self.first_source}, from"
            f" {self.effective_from.isoformat()}{until})"
        )


def term_for(
    terms: Iterable[BatchTerm], provider: str, model: str, tier: str, day: dt.date
) -> BatchTerm | None:
    """The term in force for one request (None: none applies, on-demand prices and the note).
    Terms never overlap (``check_terms``), so at most one matches."""
    for term in terms:
        if term.covers(provider, model, tier, day):
            return term
    return None


def _overlap(left: BatchTerm, right: BatchTerm) -> bool:
    if left.provider != right.provider or left.tier != right.tier:
        return False
    if (
        left.models is not None
        and right.models is not None
        and not set(left.models) & set(right.models)
    ):
        return False
    left_end = left.effective_to or dt.date.max
    right_end = right.effective_to or dt.date.max
    return left.effective_from < right_end and right.effective_from < left_end


def check_terms(terms: list[BatchTerm], file: str) -> None:
    """Refuse two terms that could both apply to one request (same provider and tier, a model
    in common, overlapping dates): which one billed it would be arbitrary."""
    for index, term in enumerate(terms):
        for other_index in range(index):
            if _overlap(terms[other_index], term):
                raise ContractFormatError(
                    file,
                    f"terms[{index}]",
                    "effective_from",
                    f"overlaps terms[{other_index}] ({term.provider} {term.tier}, a model in"
                    " common, overlapping dates)",
                )


def _error_field(error: Mapping[str, Any]) -> str:
    return ".".join(str(part) for part in error.get("loc", ()))


def terms_from_document(data: Any, file: str) -> list[BatchTerm]:
    """The terms of a ``cachecast-batch-terms`` document, in file order, validated."""
    if not isinstance(data, Mapping) or data.get("format") != DOCUMENT_FORMAT:
        raise ContractFormatError(file, "", "format", f"expected format {DOCUMENT_FORMAT!r}")
    if data.get("format_version") != DOCUMENT_FORMAT_VERSION:
        raise ContractFormatError(
            file, "", "format_version", f"expected format_version {DOCUMENT_FORMAT_VERSION}"
        )
    items = data.get("terms")
    if not isinstance(items, list):
        raise ContractFormatError(file, "", "terms", "must be a list")
    terms: list[BatchTerm] = []
    for index, item in enumerate(items):
        entry = f"terms[{index}]"
        if isinstance(item, Mapping) and isinstance(item.get("price_ratio"), float):
            raise ContractFormatError(file, entry, "price_ratio", "must be an exact decimal")
        try:
            terms.append(BatchTerm.model_validate(item))
        except ValidationError as error:
            first = error.errors()[0]
            raise ContractFormatError(
                file, entry, _error_field(first), str(first["msg"])
            ) from error
    check_terms(terms, file)
    return terms


def read_terms_file(path: Path) -> list[BatchTerm]:
    """Read and validate a batch-terms document (numbers kept exact: floats become Decimal)."""
    text = path.read_text(encoding="utf-8")
    try:
        data = json.loads(text, parse_float=Decimal)
    except json.JSONDecodeError as error:
        raise ContractFormatError(
            str(path), f"line {error.lineno} column {error.colno}", "", f"invalid JSON: {error.msg}"
        ) from error
    return terms_from_document(data, str(path))


def seed_terms(name: str = SEED_FILE) -> list[BatchTerm]:
    """The packaged terms a migration seeds: ``batch-terms-v1.json`` (0034) by default,
    ``batch-terms-v2.json`` (0035) when named."""
    return read_terms_file(DATA_DIR / name)


def batch_term_row(term: BatchTerm, origin: str) -> dict[str, Any]:
    """The ``batch_term`` row of a term (migration 0034's seed writes these)."""
    return {
        "provider": term.provider,
        "models": json.dumps(list(term.models)) if term.models is not None else None,
        "tier": term.tier,
        "effective_from": term.effective_from,
        "effective_to": term.effective_to,
        "price_ratio": term.price_ratio,
        "applies_to": ",".join(token_class.value for token_class in term.applies_to),
        "verified_on": term.verified_on,
        "source": term.source,
        "notes": term.notes,
        "origin": origin,
    }


def batch_term_from_row(row: Mapping[Any, Any]) -> BatchTerm:
    """A term read back from its ``batch_term`` row."""
    models = row["models"]
    return BatchTerm(
        provider=row["provider"],
        models=tuple(json.loads(models)) if models is not None else None,
        tier=row["tier"],
        effective_from=row["effective_from"],
        effective_to=row["effective_to"],
        price_ratio=row["price_ratio"],
        applies_to=tuple(TokenClass(name) for name in row["applies_to"].split(",")),
        verified_on=row["verified_on"],
        source=row["source"],
        notes=row["notes"],
    )
