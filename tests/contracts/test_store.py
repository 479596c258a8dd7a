"""ContractStore: as-of on boundaries, append-only history, overlaps, aliases, decimals."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal
from typing import Any

import pytest

from cachecast.contracts import ContractConflictError, ContractFormatError, ContractStore
from cachecast.contracts.serialize import terms_from_json, terms_to_json
from cachecast.core.errors import NotMigratedError, UnknownContractError
from tests.contracts.builders import JAN, terms
from tests.contracts.conftest import dump_rows

MAR = dt.date(2026, 3, 1)


def test_as_of_on_version_boundaries(empty_url: str) -> None:
    store = ContractStore(empty_url)
    store.add_version(terms(read="0.5"))  # open-ended from 2026-01-01
    store.add_version(terms(start=MAR, read="0.25"))  # closes the first at 2026-03-01

    first, second = store.history("acme", "acme-1")
    assert (first.effective_from, first.effective_to) == (JAN, MAR)
    assert (second.effective_from, second.effective_to) == (MAR, None)

    # effective_from is inclusive, effective_to exclusive.
    # A day before the first version names that version's date (issue 26).
    with pytest.raises(UnknownContractError, match="no contract before 2026-01-01, its first"):
        store.as_of("acme", "acme-1", dt.date(2025, 12, 31))
    assert store.as_of("acme", "acme-1", JAN).read_multiplier == Decimal("0.5")
    assert store.as_of("acme", "acme-1", dt.date(2026, 2, 28)).read_multiplier == Decimal("0.5")
    assert store.as_of("acme", "acme-1", MAR).read_multiplier == Decimal("0.25")
    assert store.as_of("acme", "acme-1", dt.date(2099, 1, 1)).read_multiplier == Decimal("0.25")


def test_seeded_minimum_change_of_sonnet_4_6(seeded_url: str) -> None:
    # Reference section 3: an early-2026 copy listed Sonnet 4.6 at 2048 tokens, later
    # copies (R2, 2026-10-01) at 1024; the seed splits the versions at 2026-10-01.
    store = ContractStore(seeded_url)
    assert (
        store.as_of("anthropic", "claude-sonnet-4-6", dt.date(2026, 9, 30)).min_cacheable_tokens
        == 2048
    )
    assert (
        store.as_of("anthropic", "claude-sonnet-4-6", dt.date(2026, 10, 1)).min_cacheable_tokens
        == 1024
    )


@pytest.mark.parametrize(
    ("start", "end", "clash"),
    [
        (dt.date(2026, 2, 1), dt.date(2026, 2, 15), "[2026-01-01, 2026-03-01)"),  # inside v1
        (MAR, None, "[2026-03-01, open)"),  # same start as the version in force
        (dt.date(2025, 6, 1), dt.date(2026, 1, 2), "[2026-01-01, 2026-03-01)"),  # one day in
    ],
)
def test_overlapping_version_is_rejected_and_nothing_written(
    empty_url: str, start: dt.date, end: dt.date | None, clash: str
) -> None:
    store = ContractStore(empty_url)
    store.add_version(terms())
    store.add_version(terms(start=MAR, read="0.25"))
    before = dump_rows(empty_url)

    with pytest.raises(ContractConflictError, match="nothing was written") as raised:
        store.add_version(terms(start=start, end=end, read="0.1"))
    assert clash in str(raised.value)
    assert dump_rows(empty_url) == before


def test_a_batch_with_one_conflict_writes_none_of_it(empty_url: str) -> None:
    store = ContractStore(empty_url)
    store.add_version(terms())
    before = dump_rows(empty_url)
    # The first version is valid on its own and would close acme-1 on 2026-03-01; the
    # second overlaps it, so the whole batch (including the closing update) is undone.
    with pytest.raises(ContractConflictError):
        store.add_versions(
            [terms(start=MAR), terms(start=dt.date(2026, 2, 1), end=dt.date(2026, 2, 15))]
        )
    assert dump_rows(empty_url) == before


def test_history_can_be_extended_backwards_without_touching_later_versions(empty_url: str) -> None:
    store = ContractStore(empty_url)
    store.add_version(terms())
    store.add_version(terms(start=dt.date(2025, 1, 1), end=JAN, read="0.75"))
    history = store.history("acme", "acme-1")
    assert [(v.effective_from, v.effective_to) for v in history] == [
        (dt.date(2025, 1, 1), JAN),
        (JAN, None),
    ]


def test_unknown_model_lists_close_matches(seeded_url: str) -> None:
    store = ContractStore(seeded_url)
    with pytest.raises(UnknownContractError) as raised:
        store.as_of("openai", "gpt-4.2", dt.date(2026, 11, 1))
    # 'gpt-4.1' differs from 'gpt-4.2' in one character: the closest stored id.
    assert raised.value.close_matches[0] == "gpt-4.1"
    assert "close matches: gpt-4.1" in str(raised.value)

    with pytest.raises(UnknownContractError) as raised:
        store.as_of("anthropik", "claude-sonnet-4-5", dt.date(2026, 11, 1))
    assert raised.value.close_matches == ["anthropic"]


def test_alias_and_pattern_resolution(seeded_url: str) -> None:
    store = ContractStore(seeded_url)
    day = dt.date(2026, 11, 1)
    # Pattern 'claude-sonnet-4-5*' (seed) matches the dated snapshot id.
    assert store.as_of("anthropic", "claude-sonnet-4-5-20250929", day).model == "claude-sonnet-4-5"
    # Pattern '*anthropic.claude-sonnet-4-5*' matches a cross-region inference profile id.
    bedrock = store.as_of("bedrock", "us.anthropic.claude-sonnet-4-5-20250929-v1:0", day)
    assert bedrock.model == "anthropic.claude-sonnet-4-5-20250929-v1:0"
    # Exact alias, upper case input, and a provider alias ('gemini' -> google).
    assert store.as_of("OpenAI", "GPT-4o-2024-08-06", day).model == "gpt-4o"
    assert store.as_of("gemini", "gemini-2.5-pro", day).provider == "google"
    # history resolves aliases the same way.
    assert [v.model for v in store.history("anthropic", "claude-sonnet-4-6-20260301")] == [
        "claude-sonnet-4-6",
        "claude-sonnet-4-6",
    ]


def test_equally_specific_patterns_of_two_models_are_ambiguous(empty_url: str) -> None:
    store = ContractStore(empty_url)
    store.add_version(terms("acme-a", aliases=("acme-z*",)))
    store.add_version(terms("acme-b", aliases=("acme-z*",)))
    with pytest.raises(UnknownContractError, match="ambiguous"):
        store.as_of("acme", "acme-zeta", JAN)
    # A more specific pattern wins over a broader one.
    store.add_version(terms("acme-c", aliases=("acme-ze*",)))
    assert store.as_of("acme", "acme-zeta", JAN).model == "acme-c"


def test_decimals_round_trip_exactly(empty_url: str) -> None:
    store = ContractStore(empty_url)
    # 10 decimal places is the column's scale; 0.1 + 0.2 must not become 0.30000000000000004.
    store.add_version(terms(read="0.0000000001"))
    store.add_version(terms("acme-2", read=str(Decimal("0.1") + Decimal("0.2"))))
    assert store.as_of("acme", "acme-1", JAN).read_multiplier == Decimal("0.0000000001")
    stored = store.as_of("acme", "acme-2", JAN)
    data = terms_to_json(stored)
    assert data["read_multiplier"] == "0.3"
    assert data["ttl_options"][0]["write_multiplier"] == "1.25"
    assert isinstance(data["input_per_mtok"], str)
    assert terms_from_json(data) == stored


def test_a_decimal_the_column_cannot_hold_is_refused_by_name(empty_url: str) -> None:
    store = ContractStore(empty_url)
    before = dump_rows(empty_url)
    with pytest.raises(ContractFormatError, match=r"read_multiplier.*more than 10 digits"):
        store.add_version(terms(read="0.00000000001"))
    assert dump_rows(empty_url) == before


def test_list_matches_the_seed_file(seeded_url: str, seed_entries: list[dict[str, Any]]) -> None:
    store = ContractStore(seeded_url)
    day = dt.date(2026, 11, 1)
    # In force on the day per the JSON file: from <= day < to (to null = open).
    expected = sorted(
        (entry["provider"], entry["model"])
        for entry in seed_entries
        if entry["effective_from"] <= day.isoformat()
        and (entry["effective_to"] is None or day.isoformat() < entry["effective_to"])
    )
    assert [(v.provider, v.model) for v in store.list(at=day)] == expected
    assert len(store.list()) == len(seed_entries)
    assert {v.provider for v in store.list(at=day, provider="anthropic")} == {"anthropic"}
    assert ("openai", "gpt-5.6") in store.known_models("openai")


def test_every_seed_row_has_a_source_and_verification_date(
    seed_entries: list[dict[str, Any]],
) -> None:
    for entry in seed_entries:
        assert entry["source"].startswith("https://"), entry["model"]
        assert entry["verified_on"], entry["model"]
        dt.date.fromisoformat(entry["verified_on"])
    providers = {entry["provider"] for entry in seed_entries}
    assert providers == {
        "openai",
        "azure",
        "anthropic",
        "bedrock",
        "google",
        "deepseek",
        "moonshot",
        "xai",
        "alibaba",
    }


def test_store_on_an_unmigrated_database_says_to_upgrade(sqlite_url: str) -> None:
    with pytest.raises(NotMigratedError, match="cachecast db upgrade"):
        ContractStore(sqlite_url).list()
