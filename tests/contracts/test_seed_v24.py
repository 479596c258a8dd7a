"""Revision 0032 (contracts-v24.json): OpenAI's InstructGPT completions models, without caching,
from launch to their shutdown on 2024-01-04.

Expected terms are what the sources in docs/contracts.md ("contracts-v24") state, written here
from those sources, not from the data file:

- OpenAI's deprecations page, "2023-07-06: GPT and embeddings"
  (https://platform.openai.com/docs/deprecations): shutdown 2024-01-04; text-davinci-003,
  -002 and -001 $0.0200 / 1K tokens, text-curie-001 $0.0020, text-babbage-001 $0.0005,
  text-ada-001 $0.0004.
- OpenAI's help article on the price cut (https://help.openai.com/en/articles/6485334 [S]):
  before September 1, 2022 00:00 UTC Davinci $0.06, Curie $0.006, Babbage $0.0012, Ada $0.0008
  per 1K tokens; from then the prices above.
- First days: text-davinci-003 2022-11-28 [S]; text-davinci-002 2022-03-15 (OpenAI's "New
  GPT-3 capabilities: Edit & insert") [S/U]; the text-*-001 models 2022-01-27 (OpenAI's
  "Aligning language models to follow instructions") [S/U].
- No caching: OpenAI's prompt caching began on 2024-10-01, after the shutdown.

$ per 1K tokens x 1,000 = $ per MTok: 0.02 -> 20, 0.06 -> 60, 0.002 -> 2, 0.006 -> 6,
0.0005 -> 0.5, 0.0012 -> 1.2, 0.0004 -> 0.4, 0.0008 -> 0.8."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pytest

from cachecast.contracts import ContractStore
from cachecast.contracts.history import history_gaps
from cachecast.contracts.model import CacheMode
from cachecast.core.errors import ContractNotYetInForceError, UnknownContractError
from tests.contracts.builders import bill_of_counts, seed_round_trip

TODAY = dt.date(2026, 12, 5)
CUT = dt.date(2022, 9, 1)
SHUTDOWN = dt.date(2024, 1, 4)
RECORDED = dt.date(2023, 3, 4)  # indielab/ex_openai's completion cassette (created 1677930271)

TOUCHED = [
    "text-ada-001",
    "text-babbage-001",
    "text-curie-001",
    "text-davinci-001",
    "text-davinci-002",
    "text-davinci-003",
]


@pytest.mark.parametrize(
    ("name", "day", "per_mtok"),
    [
        # The deprecations table's prices, in force from the cut to the shutdown.
        ("text-davinci-003", RECORDED, "20"),
        ("text-davinci-003", dt.date(2024, 1, 3), "20"),
        ("text-davinci-002", CUT, "20"),
        ("text-davinci-001", dt.date(2023, 6, 1), "20"),
        ("text-curie-001", dt.date(2023, 6, 1), "2"),
        ("text-babbage-001", dt.date(2023, 6, 1), "0.5"),
        ("text-ada-001", dt.date(2023, 6, 1), "0.4"),
        # The help article's prices before September 1, 2022.
        ("text-davinci-002", dt.date(2022, 8, 31), "60"),
        ("text-davinci-001", dt.date(2022, 1, 27), "60"),
        ("text-curie-001", dt.date(2022, 8, 31), "6"),
        ("text-babbage-001", dt.date(2022, 8, 31), "1.2"),
        ("text-ada-001", dt.date(2022, 8, 31), "0.8"),
    ],
)
def test_prices_the_sources_state_without_caching(
    migrated_db_url: str, name: str, day: dt.date, per_mtok: str
) -> None:
    terms = ContractStore(migrated_db_url).as_of("openai", name, day)
    assert terms.model == name
    # One price per token, prompt and completion alike.
    assert (terms.input_per_mtok, terms.output_per_mtok) == (Decimal(per_mtok), Decimal(per_mtok))
    assert terms.mode is CacheMode.NONE
    assert terms.read_multiplier == Decimal(1)


@pytest.mark.parametrize("name", TOUCHED)
def test_from_shutdown_nothing_is_in_force(migrated_db_url: str, name: str) -> None:
    store = ContractStore(migrated_db_url)
    assert store.as_of("openai", name, SHUTDOWN - dt.timedelta(days=1)).model == name
    with pytest.raises(UnknownContractError):
        store.as_of("openai", name, SHUTDOWN)


@pytest.mark.parametrize(
    ("name", "launch"),
    [
        ("text-davinci-003", dt.date(2022, 11, 28)),
        ("text-davinci-002", dt.date(2022, 3, 15)),
        ("text-davinci-001", dt.date(2022, 1, 27)),
        ("text-curie-001", dt.date(2022, 1, 27)),
        ("text-babbage-001", dt.date(2022, 1, 27)),
        ("text-ada-001", dt.date(2022, 1, 27)),
    ],
)
def test_before_launch_is_refused_with_the_launch_day(
    migrated_db_url: str, name: str, launch: dt.date
) -> None:
    store = ContractStore(migrated_db_url)
    assert store.as_of("openai", name, launch).effective_from == launch
    with pytest.raises(ContractNotYetInForceError, match=launch.isoformat()):
        store.as_of("openai", name, launch - dt.timedelta(days=1))


@pytest.mark.parametrize("model", TOUCHED)
def test_no_gap_from_launch(migrated_db_url: str, model: str) -> None:
    summary = history_gaps(ContractStore(migrated_db_url).history("openai", model), TODAY)
    assert summary.gaps == []
    assert summary.launch_known == 1
    assert summary.retired == 1


def test_bills_by_hand(migrated_db_url: str) -> None:
    store = ContractStore(migrated_db_url)
    # The recorded text-davinci-003 request of 2023-03-04: 3 prompt + 30 completion tokens at
    # $0.02 / 1K tokens: 33 x 0.02 / 1,000 = $0.00066.
    davinci = store.as_of("openai", "text-davinci-003", RECORDED)
    assert bill_of_counts(3, 30, davinci) == Decimal("0.00066")
    # text-curie-001 on 2022-08-31, 1,000 in + 100 out at $0.006 / 1K: 1,100 x 0.006 / 1,000
    # = $0.0066; the next day at $0.002 / 1K: 1,100 x 0.002 / 1,000 = $0.0022.
    assert bill_of_counts(
        1_000, 100, store.as_of("openai", "text-curie-001", dt.date(2022, 8, 31))
    ) == Decimal("0.0066")
    assert bill_of_counts(1_000, 100, store.as_of("openai", "text-curie-001", CUT)) == Decimal(
        "0.0022"
    )


def test_upgrade_only_adds_and_downgrade_gives_back_the_previous_rows(sqlite_url: str) -> None:
    added = seed_round_trip(sqlite_url, "0032_seed_contracts_v24")
    assert {row[5] for row in added} == {"seed:contracts-v24"}
    # Two versions (before and after the 2022-09-01 cut) for every model but text-davinci-003.
    assert sorted(str(row[1]) for row in added) == [
        "text-ada-001",
        "text-ada-001",
        "text-babbage-001",
        "text-babbage-001",
        "text-curie-001",
        "text-curie-001",
        "text-davinci-001",
        "text-davinci-001",
        "text-davinci-002",
        "text-davinci-002",
        "text-davinci-003",
    ]
