"""Revision 0015 (contracts-v8.json): Anthropic's fast mode as models of their own.

Expected terms are what the sources in docs/contracts.md ("contracts-v8") state: fast mode for
Opus 4.6 at 6x the standard $5 / $25 ($30 / $150), above 200K input tokens $60 / $225 while
the standard model had a long-context tier, half of that during the launch promotion
(until 2026-02-16 PT); Opus 4.7 at 6x, removed 2026-07-24; Opus 4.8 and Opus 5 at 2x the
standard $5 / $25 ($10 / $50), Opus 4.8's removed 2026-11-30; Opus 5.5 at 2x its $4 / $20
($8 / $40); Fable 5.2 and Mythos 5.2 at 2x their $8 / $40 ($16 / $80). Prompt caching
multipliers apply on top of the fast input price."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pytest

from cachecast.contracts import ContractStore
from cachecast.core.errors import ContractNotYetInForceError, UnknownContractError


@pytest.mark.parametrize(
    ("model", "day", "prices"),
    [
        # (input, output) per MTok; the long-context tier (above 200K) where one applies
        ("claude-opus-4-6-fast", dt.date(2026, 2, 7), ("15", "75", ("30", "112.5"))),
        ("claude-opus-4-6-fast", dt.date(2026, 2, 16), ("15", "75", ("30", "112.5"))),
        ("claude-opus-4-6-fast", dt.date(2026, 2, 17), ("30", "150", ("60", "225"))),
        ("claude-opus-4-6-fast", dt.date(2026, 3, 13), ("30", "150", None)),
        ("claude-opus-4-6-fast", dt.date(2026, 12, 4), ("30", "150", None)),
        ("claude-opus-4-7-fast", dt.date(2026, 7, 23), ("30", "150", None)),
        ("claude-opus-4-8-fast", dt.date(2026, 11, 29), ("10", "50", None)),
        ("claude-opus-5-fast", dt.date(2026, 7, 24), ("10", "50", None)),
        ("claude-opus-5-5-fast", dt.date(2026, 9, 22), ("8", "40", None)),
        ("claude-fable-5-2-fast", dt.date(2026, 11, 9), ("16", "80", None)),
        ("claude-mythos-5-2-fast", dt.date(2026, 12, 4), ("16", "80", None)),
    ],
)
def test_fast_mode_prices_on_each_day(
    migrated_db_url: str,
    model: str,
    day: dt.date,
    prices: tuple[str, str, tuple[str, str] | None],
) -> None:
    terms = ContractStore(migrated_db_url).as_of("anthropic", model, day)
    assert terms.model == model
    assert (terms.input_per_mtok, terms.output_per_mtok) == (
        Decimal(prices[0]),
        Decimal(prices[1]),
    )
    tiers = [
        (t.above_input_tokens, t.input_per_mtok, t.output_per_mtok)
        for t in terms.long_context_tiers
    ]
    expected = (
        [] if prices[2] is None else [(200_000, Decimal(prices[2][0]), Decimal(prices[2][1]))]
    )
    assert tiers == expected


def test_caching_multipliers_are_the_standard_models_on_the_fast_price(
    migrated_db_url: str,
) -> None:
    store = ContractStore(migrated_db_url)
    fast = store.as_of("anthropic", "claude-opus-4-6-fast", dt.date(2026, 5, 1))
    # Opus 4.6 caching: 5m writes 1.25x, 1h writes 2x, reads 0.1x: $37.50 / $60 / $3 on $30.
    assert {option.name: option.write_multiplier for option in fast.ttl_options} == {
        "5m": Decimal("1.25"),
        "1h": Decimal("2"),
    }
    assert fast.read_multiplier == Decimal("0.1")
    # Opus 5.5 reads at 0.05x its input ($0.20 of $4): $0.40 of the fast $8.
    assert store.as_of(
        "anthropic", "claude-opus-5-5-fast", dt.date(2026, 10, 1)
    ).read_multiplier == Decimal("0.05")


def test_fast_mode_before_its_launch_and_after_its_removal(migrated_db_url: str) -> None:
    store = ContractStore(migrated_db_url)
    with pytest.raises(ContractNotYetInForceError):
        store.as_of("anthropic", "claude-opus-4-6-fast", dt.date(2026, 2, 6))
    for model, removed in (
        ("claude-opus-4-7-fast", dt.date(2026, 7, 24)),
        ("claude-opus-4-8-fast", dt.date(2026, 11, 30)),
    ):
        with pytest.raises(UnknownContractError):
            store.as_of("anthropic", model, removed)


def test_a_dated_snapshot_in_fast_mode_is_not_priced_at_the_standard_rates(
    migrated_db_url: str,
) -> None:
    # The standard contract's pattern claude-opus-4-6* also matches the name; the fast
    # contract's claude-opus-4-6-2*-fast is the more specific one.
    terms = ContractStore(migrated_db_url).as_of(
        "anthropic", "claude-opus-4-6-20260205-fast", dt.date(2026, 5, 1)
    )
    assert (terms.model, terms.input_per_mtok) == ("claude-opus-4-6-fast", Decimal("30"))
