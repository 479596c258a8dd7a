"""How reports and requests are built from what already holds their figures (docs/architecture.md):
``Report.read`` reads same-named attributes (or a field's validation alias) and takes the rest
as given; ``request_of`` takes every request field named like a body field or an option. The
domain objects here are the real ones where a report reads them (``Cost``, the store's
``UnknownContractError``); the expected values are written out by hand."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from decimal import Decimal

import pytest
from pydantic import AliasChoices, Field, ValidationError

from cachecast.core.errors import UnknownContractError
from cachecast.passes.log_input import LogInput
from cachecast.simulator.reconcile import ReconciliationSummary
from cachecast.simulator.types import Cost
from cachecast.usecases.estimate import ReconciliationReport
from cachecast.usecases.reports import CostBreakdown, Report
from cachecast.usecases.requests import request_of
from cachecast.usecases.simulate import PolicyKind, SimulateRequest


@dataclass(frozen=True, slots=True)
class _Span:
    cause: str
    start: int
    tokens: int
    kind_name: str


class _SpanReport(Report):
    cause: str
    start: int
    tokens: int
    kind: str = Field(validation_alias=AliasChoices("kind", "kind_name"))
    detail: str | None = None  # the span has no such attribute: the default


def test_read_takes_same_named_attributes_aliases_and_defaults() -> None:
    report = _SpanReport.read(_Span("prefix_mismatch", 12, 40, "system"))
    assert report.model_dump() == {
        "cause": "prefix_mismatch",
        "start": 12,
        "tokens": 40,
        "kind": "system",
        "detail": None,
    }


def test_values_win_over_attributes_and_unknown_ones_are_refused() -> None:
    span = _Span("prefix_mismatch", 12, 40, "system")
    report = _SpanReport.read(span, tokens=8, detail="why")
    assert (report.start, report.tokens, report.detail) == (12, 8, "why")
    with pytest.raises(TypeError, match="no field tokns"):
        _SpanReport.read(span, tokns=8)


def test_a_missing_required_attribute_is_an_error_not_a_guess() -> None:
    @dataclass
    class Partial:
        cause: str

    with pytest.raises(ValidationError):
        _SpanReport.read(Partial("x"))


def test_cost_breakdown_total_is_exact_past_28_digits() -> None:
    # 123456789012345678901234567890 + 1.1 + 2 + 1e-27: 58 significant digits, which the
    # default decimal context (28) would round; the breakdown keeps every one.
    cost = Cost(
        input=Decimal("1.1"),
        cache_write=Decimal("0.000000000000000000000000001"),
        cache_read=Decimal("123456789012345678901234567890"),
        output=Decimal(0),
        storage=Decimal(2),
    )
    dumped = CostBreakdown.of(cost).model_dump(mode="json")
    assert dumped["total"] == "123456789012345678901234567893.100000000000000000000000001"
    assert dumped["cache_read"] == "123456789012345678901234567890"


def test_reconciliation_report_reads_the_summary_under_its_own_names() -> None:
    summary = ReconciliationSummary(
        requests=3, exact_matches=1, predicted_read_sum=2048, observed_read_sum=1920
    )
    report = ReconciliationReport.model_validate(summary)
    # 1 of 3 requests exact: 1/3 rounded half-even to 9 places (simulator.types.MEAN_PLACES) is
    # 0.333333333; no token error was added: a mean of 0. The sums are read off
    # predicted/observed_read_sum under the report's own names.
    assert report.exact_matches == 1
    assert report.exact_match_share == "0.333333333"
    assert report.mean_abs_error_tokens == "0"
    assert (report.predicted_cache_read_tokens, report.observed_cache_read_tokens) == (2048, 1920)


def test_request_of_takes_same_named_values_and_the_conversions() -> None:
    given = {"policy": "radix", "block_size": 32, "records": [{"prompt": "x"}], "as_json": True}
    log = LogInput(records=[{"prompt": "x"}])
    request = request_of(SimulateRequest, given, log=log, at=dt.date(2026, 11, 1))
    assert request.policy is PolicyKind.radix
    assert request.block_size == 32
    assert request.at == dt.date(2026, 11, 1)
    assert request.log is log
    assert request.ttl_seconds is None  # not given: the request's default


def test_the_stores_unknown_contract_names_its_close_matches_in_the_message() -> None:
    error = UnknownContractError.listing("unknown model 'gpt-4'", ["gpt-4o", "gpt-4.1"])
    assert error.message == "unknown model 'gpt-4'; close matches: gpt-4o, gpt-4.1"
    assert error.close_matches == ["gpt-4o", "gpt-4.1"]
    plain = UnknownContractError.listing("no contract in force on 2025-12-31", [])
    assert plain.message == "no contract in force on 2025-12-31"
    assert plain.close_matches == []
