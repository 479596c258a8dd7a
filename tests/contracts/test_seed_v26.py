"""Revision 0036 (contracts-v26.json): Gemini 2.5 preview snapshots of the Gemini API.

Expected terms are what the sources in docs/contracts.md ("contracts-v26") state, written here
from those sources, not from the data file:

- Google's deprecations page (https://ai.google.dev/gemini-api/docs/deprecations), "Preview
  models" of Gemini 2.5 Pro: gemini-2.5-pro-preview-03-25 "March 3, 2025", -05-06 "May 6,
  2025", -06-05 "June 5, 2025", each with shutdown date "December 2, 2025".
- LiteLLM's price map for gemini/gemini-2.5-pro-preview-03-25 after commit 93037ea
  (https://github.com/BerriAI/litellm/commit/93037ea) [S]: input 0.00000125 and above 200k
  0.0000025 per token, output 0.00001 and above 200k 0.000015 per token, i.e. $1.25 / $10 per
  MTok, $2.50 / $15 above 200k tokens.
- Philipp Schmid's 2.5 Flash launch post (https://huggingface.co/philschmid) [S]: "$0.15 1M
  input tokens; $0.6 or $3.5 (thinking on) per million output tokens"; the contract stores the
  non-thinking $0.60 (docs/contracts.md says why).
- smythos.com on the 2.5 Flash-Lite preview of 17 June 2025 [S]: "$0.10 per M input tokens
  and $0.40 per M output tokens"."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pytest

from cachecast.contracts import ContractStore
from cachecast.contracts.history import history_gaps
from cachecast.core.errors import ContractNotYetInForceError
from tests.contracts.builders import bill_of_counts, seed_round_trip

TODAY = dt.date(2026, 12, 5)
PRO_PREVIEWS = {
    "gemini-2.5-pro-preview-03-25": dt.date(2025, 3, 3),
    "gemini-2.5-pro-preview-05-06": dt.date(2025, 5, 6),
    "gemini-2.5-pro-preview-06-05": dt.date(2025, 6, 5),
}
PRO_SHUTDOWN = dt.date(2025, 12, 2)
FLASH_PREVIEWS = {
    "gemini-2.5-flash-preview-04-17": dt.date(2025, 4, 17),
    "gemini-2.5-flash-preview-05-20": dt.date(2025, 5, 20),
}
FLASH_LITE_PREVIEW = "gemini-2.5-flash-lite-preview-06-17"
FLASH_LITE_DAY = dt.date(2025, 6, 17)
ALL = {**PRO_PREVIEWS, **FLASH_PREVIEWS, FLASH_LITE_PREVIEW: FLASH_LITE_DAY}


@pytest.mark.parametrize(("model", "released"), sorted(PRO_PREVIEWS.items()))
def test_pro_previews_priced_from_release_to_shutdown(
    migrated_db_url: str, model: str, released: dt.date
) -> None:
    store = ContractStore(migrated_db_url)
    terms = store.as_of("google", model, released)
    assert (terms.input_per_mtok, terms.output_per_mtok) == (Decimal("1.25"), Decimal(10))
    tiers = [
        (t.above_input_tokens, t.input_per_mtok, t.output_per_mtok)
        for t in terms.long_context_tiers
    ]
    assert tiers == [(200_000, Decimal("2.50"), Decimal(15))]
    # The version of the last day ends at the shutdown (contracts-v28 splits the span where the
    # caching page's minimum for 2.5 Pro changed).
    last_day = PRO_SHUTDOWN - dt.timedelta(days=1)
    assert store.as_of("google", model, last_day).effective_to == PRO_SHUTDOWN
    with pytest.raises(ContractNotYetInForceError, match=released.isoformat()):
        store.as_of("google", model, released - dt.timedelta(days=1))


@pytest.mark.parametrize(("model", "released"), sorted(FLASH_PREVIEWS.items()))
def test_flash_previews_at_the_non_thinking_output_price(
    migrated_db_url: str, model: str, released: dt.date
) -> None:
    terms = ContractStore(migrated_db_url).as_of("google", model, released)
    assert (terms.input_per_mtok, terms.output_per_mtok) == (Decimal("0.15"), Decimal("0.60"))
    assert "non-thinking" in terms.notes


def test_flash_lite_preview(migrated_db_url: str) -> None:
    terms = ContractStore(migrated_db_url).as_of("google", FLASH_LITE_PREVIEW, FLASH_LITE_DAY)
    assert (terms.input_per_mtok, terms.output_per_mtok) == (Decimal("0.10"), Decimal("0.40"))


def test_recorded_day_of_lmnr_cassette_is_priced(migrated_db_url: str) -> None:
    # lmnr-python's test_google_genai_multiturn.yaml: Date header Tue, 10 Jun 2025.
    terms = ContractStore(migrated_db_url).as_of(
        "google", "gemini-2.5-flash-preview-05-20", dt.date(2025, 6, 10)
    )
    assert terms.model == "gemini-2.5-flash-preview-05-20"


@pytest.mark.parametrize("model", sorted(ALL))
def test_no_gap_from_launch(migrated_db_url: str, model: str) -> None:
    summary = history_gaps(ContractStore(migrated_db_url).history("google", model), TODAY)
    assert summary.gaps == []
    assert summary.launch_known == 1


def test_bills_by_hand(migrated_db_url: str) -> None:
    store = ContractStore(migrated_db_url)
    pro = store.as_of("google", "gemini-2.5-pro-preview-05-06", dt.date(2025, 5, 20))
    # 1,000 input + 100 output at $1.25 / $10 per MTok: 0.00125 + 0.001 = $0.00225.
    assert bill_of_counts(1_000, 100, pro) == Decimal("0.00225")
    # 300,000 input (over 200k) + 1,000 output at $2.50 / $15: 0.75 + 0.015 = $0.765.
    assert bill_of_counts(300_000, 1_000, pro) == Decimal("0.765")
    flash = store.as_of("google", "gemini-2.5-flash-preview-05-20", dt.date(2025, 6, 10))
    # 1,000 input + 100 output at $0.15 / $0.60: 0.00015 + 0.00006 = $0.00021.
    assert bill_of_counts(1_000, 100, flash) == Decimal("0.00021")


def test_upgrade_only_adds_and_downgrade_gives_back_the_previous_rows(sqlite_url: str) -> None:
    added = seed_round_trip(sqlite_url, "0036_seed_contracts_v26")
    assert {row[5] for row in added} == {"seed:contracts-v26"}
    assert sorted((str(row[0]), str(row[1])) for row in added) == sorted(
        ("google", model) for model in ALL
    )
