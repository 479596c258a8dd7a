"""Revision 0033 (contracts-v25.json): OpenRouter's free variant of Llama 3.3 8B Instruct.

Expected terms are what the sources in docs/contracts.md ("contracts-v25") state, written here
from those sources, not from the data file:

- OpenRouter's "Free Variant" page (https://openrouter.ai/docs/features/variants/free): "Free
  variants provide access to models without cost".
- The model's page (https://openrouter.ai/models/meta-llama/llama-3.3-8b-instruct:free):
  "Created May 14, 2025", "$0/M input tokens $0/M output tokens".
- No source names prompt caching for a free variant: mode none."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pytest

from cachecast.contracts import ContractStore
from cachecast.contracts.history import history_gaps
from cachecast.contracts.model import CacheMode
from cachecast.core.errors import ContractNotYetInForceError
from tests.contracts.builders import bill_of_counts, seed_round_trip

TODAY = dt.date(2026, 12, 5)
# Stored without the slug's "/" (contract ids are URL path segments); the slug is its alias.
MODEL = "llama-3.3-8b-instruct:free"
SLUG = "meta-llama/llama-3.3-8b-instruct:free"
CREATED = dt.date(2025, 5, 14)
RECORDED = dt.date(2025, 5, 31)  # OlympiaAI/raix's OpenRouter cassette (Date header)


@pytest.mark.parametrize("day", [CREATED, RECORDED, TODAY])
def test_free_of_charge_without_caching(migrated_db_url: str, day: dt.date) -> None:
    terms = ContractStore(migrated_db_url).as_of("openrouter", SLUG, day)
    assert (terms.provider, terms.model) == ("openrouter", MODEL)
    assert (terms.input_per_mtok, terms.output_per_mtok) == (Decimal(0), Decimal(0))
    assert terms.mode is CacheMode.NONE
    assert terms.effective_to is None


def test_before_the_model_page_s_created_day_is_refused_with_it(migrated_db_url: str) -> None:
    with pytest.raises(ContractNotYetInForceError, match=CREATED.isoformat()):
        ContractStore(migrated_db_url).as_of("openrouter", MODEL, CREATED - dt.timedelta(days=1))


def test_no_gap_from_launch(migrated_db_url: str) -> None:
    summary = history_gaps(ContractStore(migrated_db_url).history("openrouter", MODEL), TODAY)
    assert summary.gaps == []
    assert summary.launch_known == 1


def test_bill_by_hand(migrated_db_url: str) -> None:
    terms = ContractStore(migrated_db_url).as_of("openrouter", MODEL, RECORDED)
    # 1,000 input + 100 output tokens at $0 / $0 per MTok: 1,000 x 0 + 100 x 0 = $0.
    assert bill_of_counts(1_000, 100, terms) == Decimal(0)


def test_upgrade_only_adds_and_downgrade_gives_back_the_previous_rows(sqlite_url: str) -> None:
    added = seed_round_trip(sqlite_url, "0033_seed_contracts_v25")
    assert {row[5] for row in added} == {"seed:contracts-v25"}
    assert [(str(row[0]), str(row[1])) for row in added] == [("openrouter", MODEL)]
