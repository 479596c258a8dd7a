"""Revision 0016 (contracts-v9.json): mistral-small-latest on the days recordings show it.

Expected terms are what the sources in docs/contracts.md ("contracts-v9") state: Mistral
Small 3.1 (mistral-small-2503) from 2025-03-17 at $0.10 / $0.30 per MTok, Mistral Small 4
(mistral-small-2603) from 2026-03-16 at $0.15 / $0.60, cached prompt tokens at 10% of the
input price (Mistral's prompt caching page), cached tokens counted inside prompt_tokens."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal
from pathlib import Path

import pytest

from cachecast.contracts import ContractStore
from cachecast.core.errors import ContractNotYetInForceError
from cachecast.passes.log_input import LogInput
from cachecast.usecases.reconcile import ReconcileRequest, reconcile

# A hand-built cassette in RubyLLM's shape (VCR YAML, streamed chat completions whose last
# chunk carries usage with prompt_tokens_details.cached_tokens), dated 2026-04-02.
CASSETTE = Path(__file__).with_name("data") / "mistral_small_latest_multi_turn_streaming.yml"


@pytest.mark.parametrize(
    ("day", "prices"),
    [
        # (input, output) per MTok
        (dt.date(2025, 3, 17), ("0.1", "0.3")),
        (dt.date(2025, 4, 27), ("0.1", "0.3")),  # the day of a recorded Mistral cassette
        (dt.date(2026, 3, 15), ("0.1", "0.3")),
        (dt.date(2026, 3, 16), ("0.15", "0.6")),
        (dt.date(2026, 4, 2), ("0.15", "0.6")),  # RubyLLM's multi-turn streaming cassette
        (dt.date(2026, 12, 4), ("0.15", "0.6")),
    ],
)
def test_mistral_small_latest_prices_on_each_day(
    migrated_db_url: str, day: dt.date, prices: tuple[str, str]
) -> None:
    terms = ContractStore(migrated_db_url).as_of("mistral", "mistral-small-latest", day)
    assert (terms.input_per_mtok, terms.output_per_mtok) == (
        Decimal(prices[0]),
        Decimal(prices[1]),
    )
    # Reads at 10% of the input price; prompt_tokens includes the cached ones; no minimum.
    assert terms.read_multiplier == Decimal("0.1")
    assert terms.reported_input_includes_cached is True
    assert terms.min_cacheable_tokens == 0


@pytest.mark.parametrize(
    ("model", "day", "prices"),
    [
        # A dated id keeps its own model's price after -latest moves on.
        ("mistral-small-2503", dt.date(2025, 3, 17), ("0.1", "0.3")),
        ("mistral-small-2503", dt.date(2026, 5, 1), ("0.1", "0.3")),
        ("mistral-small-2506", dt.date(2025, 6, 20), ("0.1", "0.3")),
        ("mistral-small-2506", dt.date(2026, 4, 2), ("0.1", "0.3")),
        ("mistral-small-2603", dt.date(2026, 3, 16), ("0.15", "0.6")),
    ],
)
def test_dated_mistral_small_ids_are_their_own_contracts(
    migrated_db_url: str, model: str, day: dt.date, prices: tuple[str, str]
) -> None:
    terms = ContractStore(migrated_db_url).as_of("mistral", model, day)
    assert terms.model == model
    assert (terms.input_per_mtok, terms.output_per_mtok) == (
        Decimal(prices[0]),
        Decimal(prices[1]),
    )
    assert terms.read_multiplier == Decimal("0.1")


def test_a_dated_id_before_its_release_is_refused(migrated_db_url: str) -> None:
    with pytest.raises(ContractNotYetInForceError):
        ContractStore(migrated_db_url).as_of("mistral", "mistral-small-2603", dt.date(2026, 3, 15))


def test_a_streamed_mistral_small_cassette_is_priced_under_small_4(
    migrated_db_url: str,
) -> None:
    report = reconcile(
        ReconcileRequest(log=LogInput.of_paths([CASSETTE])), ContractStore(migrated_db_url)
    )
    assert report.unpriced == {}
    (target,) = report.targets
    assert target.contract.version == "mistral/mistral-small-latest@2026-03-16"
    # Bills by hand at $0.15 in / $0.60 out / $0.015 read per MTok (2026-04-02):
    #   turn 1: 300 prompt, 0 cached, 20 out: 300 x 0.15 / 1e6 = 0.000045;
    #           20 x 0.60 / 1e6 = 0.000012; total 0.000057
    #   turn 2: 420 prompt, 272 cached, 30 out: (420 - 272) = 148 x 0.15 / 1e6 = 0.0000222;
    #           272 x 0.015 / 1e6 = 0.00000408; 30 x 0.60 / 1e6 = 0.000018; total 0.00004428
    rows = sorted(report.requests, key=lambda row: row.line)
    assert [row.observed_cost for row in rows] == [Decimal("0.000057"), Decimal("0.00004428")]
    assert [row.observed_cache_read_tokens for row in rows] == [0, 272]
    assert report.summary.observed_cost == Decimal("0.00010128")


@pytest.mark.parametrize(
    ("day", "start"),
    [
        # Mistral Large 3 (2025-12-02) at $0.50 / $1.50 before the version of 2026-12-03.
        (dt.date(2025, 12, 2), dt.date(2025, 12, 2)),
        (dt.date(2026, 12, 2), dt.date(2025, 12, 2)),
        (dt.date(2026, 12, 3), dt.date(2026, 12, 3)),
    ],
)
def test_mistral_large_latest_back_to_large_3(
    migrated_db_url: str, day: dt.date, start: dt.date
) -> None:
    terms = ContractStore(migrated_db_url).as_of("mistral", "mistral-large-latest", day)
    assert terms.effective_from == start
    assert (terms.input_per_mtok, terms.output_per_mtok) == (Decimal("0.5"), Decimal("1.5"))
    assert terms.read_multiplier == Decimal("0.1")
