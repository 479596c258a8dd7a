"""Revision 0025 (contracts-v17.json): OpenAI's legacy Completions models
(gpt-3.5-turbo-instruct, davinci-002, babbage-002), priced from launch without caching.

Expected terms are what the sources in docs/contracts.md ("contracts-v17") state, written here
from those sources, not from the data file: OpenAI's model pages
(https://developers.openai.com/api/docs/models/gpt-3.5-turbo-instruct, .../davinci-002) and,
for babbage-002, LiteLLM 1.110.2's map [S]; launch days 2023-09-18 (gpt-3.5-turbo-instruct [S])
and 2023-08-22 (the fine-tuning announcement naming babbage-002 and davinci-002); shutdown
2026-09-28 (LiteLLM's deprecation_date, OpenAI's '2025-09-26: Legacy GPT model snapshots' day
[S]); no caching because OpenAI's prompt caching covers gpt-4o and newer models
(https://developers.openai.com/api/docs/guides/prompt-caching)."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pytest

from cachecast.contracts import ContractStore
from cachecast.contracts.history import history_gaps
from cachecast.core.errors import ContractNotYetInForceError, UnknownContractError
from tests.contracts.builders import bill_of_counts, seed_round_trip

TODAY = dt.date(2026, 12, 5)


@pytest.mark.parametrize(
    ("name", "day", "model", "prices"),
    [
        # https://developers.openai.com/api/docs/models/gpt-3.5-turbo-instruct: "Input $1.5",
        # "Output $2" per 1M tokens.
        ("gpt-3.5-turbo-instruct", dt.date(2024, 5, 2), "gpt-3.5-turbo-instruct", ("1.5", "2")),
        # The snapshot the responses name is the same model at the same price.
        (
            "gpt-3.5-turbo-instruct-0914",
            dt.date(2023, 9, 18),
            "gpt-3.5-turbo-instruct",
            ("1.5", "2"),
        ),
        # https://developers.openai.com/api/docs/models/davinci-002: "Input $2", "Output $2".
        ("davinci-002", dt.date(2023, 8, 22), "davinci-002", ("2", "2")),
        # babbage-002: LiteLLM 1.110.2 input_cost_per_token 4e-07, output 4e-07 [S].
        ("babbage-002", dt.date(2025, 1, 10), "babbage-002", ("0.4", "0.4")),
    ],
)
def test_prices_the_sources_state_without_caching(
    migrated_db_url: str, name: str, day: dt.date, model: str, prices: tuple[str, str]
) -> None:
    terms = ContractStore(migrated_db_url).as_of("openai", name, day)
    assert terms.model == model
    assert (terms.input_per_mtok, terms.output_per_mtok) == (
        Decimal(prices[0]),
        Decimal(prices[1]),
    )
    # OpenAI's prompt caching covers gpt-4o and newer models, not these.
    assert terms.mode.value == "none"
    assert terms.read_multiplier == Decimal(1)


@pytest.mark.parametrize("name", ["gpt-3.5-turbo-instruct", "davinci-002", "babbage-002"])
def test_from_shutdown_nothing_is_in_force(migrated_db_url: str, name: str) -> None:
    store = ContractStore(migrated_db_url)
    # Shut down 2026-09-28: the day before is priced, the day itself is not.
    assert store.as_of("openai", name, dt.date(2026, 9, 27)).model == name
    with pytest.raises(UnknownContractError):
        store.as_of("openai", name, dt.date(2026, 9, 28))


@pytest.mark.parametrize(
    ("name", "day", "launch"),
    [
        ("gpt-3.5-turbo-instruct", dt.date(2023, 9, 17), "2023-09-18"),
        ("davinci-002", dt.date(2023, 8, 21), "2023-08-22"),
    ],
)
def test_before_launch_is_refused_with_the_launch_day(
    migrated_db_url: str, name: str, day: dt.date, launch: str
) -> None:
    with pytest.raises(ContractNotYetInForceError, match=launch):
        ContractStore(migrated_db_url).as_of("openai", name, day)


TOUCHED = ["babbage-002", "davinci-002", "gpt-3.5-turbo-instruct"]


@pytest.mark.parametrize("model", TOUCHED)
def test_no_gap_from_launch(migrated_db_url: str, model: str) -> None:
    summary = history_gaps(ContractStore(migrated_db_url).history("openai", model), TODAY)
    assert summary.gaps == []
    assert summary.launch_known == 1


def test_azure_keeps_its_own_price(migrated_db_url: str) -> None:
    # The new OpenAI contract does not change Azure's (contracts-v13: $1.65 / $2.20 [S]).
    terms = ContractStore(migrated_db_url).as_of(
        "azure", "gpt-3.5-turbo-instruct", dt.date(2024, 5, 2)
    )
    assert (terms.input_per_mtok, terms.output_per_mtok) == (Decimal("1.65"), Decimal("2.2"))


@pytest.mark.parametrize(
    ("name", "day", "total"),
    [
        # gpt-3.5-turbo-instruct, 2024-05-02: 1,000 in x $1.50 / 1e6 = 0.0015; 100 out x
        # $2.00 / 1e6 = 0.0002; total 0.0017.
        ("gpt-3.5-turbo-instruct", dt.date(2024, 5, 2), "0.0017"),
        # davinci-002, 2024-05-02: 1,000 x $2 / 1e6 = 0.002; 100 x $2 / 1e6 = 0.0002; 0.0022.
        ("davinci-002", dt.date(2024, 5, 2), "0.0022"),
    ],
)
def test_a_bill_by_hand(migrated_db_url: str, name: str, day: dt.date, total: str) -> None:
    terms = ContractStore(migrated_db_url).as_of("openai", name, day)
    assert bill_of_counts(1_000, 100, terms) == Decimal(total)


def test_upgrade_only_adds_and_downgrade_gives_back_the_previous_rows(sqlite_url: str) -> None:
    added = seed_round_trip(sqlite_url, "0025_seed_contracts_v17")
    assert {row[5] for row in added} == {"seed:contracts-v17"}
    assert sorted(str(row[1]) for row in added) == sorted(TOUCHED)
