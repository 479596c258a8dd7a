"""Revision 0038 (contracts-v28.json): the Gemini API's caching minimums on the days Google's
caching page stated them.

Expected minimums are what the dated pages in docs/contracts.md ("contracts-v28") state,
written here from those pages, not from the data file:

- https://developers.googleblog.com/en/gemini-2-5-models-now-support-implicit-caching/
  (2025-05-08): "we reduced the minimum request size for 2.5 Flash to 1024 tokens and 2.5 Pro
  to 2048 tokens"; the zh-TW caching page, last updated 2025-08-22, still "1,024 for 2.5 Flash
  and 2,048 for 2.5 Pro".
- The English caching page as quoted on 2025-09-10
  (https://github.com/epam/ai-dial-adapter-vertexai/issues/280): "1,024 for 2.5 Flash and
  4,096 for 2.5 Pro".
- https://ai.google.dev/gemini-api/docs/interactions/caching, "Last updated 2026-05-07 UTC":
  Gemini 2.5 Flash 1024, Gemini 2.5 Pro 4096; its Korean rendering, last updated 2026-05-28:
  Gemini 3.5 Flash 1024.
- A copy of https://ai.google.dev/gemini-api/docs/caching taken 2026-06-26 (techdevnotes.com)
  and Google's page "Last updated 2026-07-07 UTC": Gemini 3.5 Flash 4096, 3.1 Pro Preview
  4096, Gemini 2.5 Flash 2048, Gemini 2.5 Pro 2048.

Prices are unchanged: 2.5 Flash $0.30 in / $2.50 out per MTok, 2.5 Pro $1.25 / $10
(https://ai.google.dev/gemini-api/docs/pricing, as the stored versions cite it)."""

from __future__ import annotations

import datetime as dt
import json
from decimal import Decimal
from importlib import resources

import pytest

from cachecast.contracts import ContractStore
from cachecast.contracts.history import history_gaps
from cachecast.core import db
from cachecast.simulator.policies import policy_for_contract
from tests.contracts.builders import bill_of_counts, full_rows_across, full_version_rows
from tests.simulator.helpers import make_request

TODAY = dt.date(2026, 12, 5)
REVISION = "0038_seed_contracts_v28"


def _seeded() -> list[str]:
    # The file lists what the revision seeds; which contracts they are, not their terms.
    data = resources.files("cachecast.contracts.data").joinpath("contracts-v28.json")
    contracts = json.loads(data.read_text())["contracts"]
    return sorted({c["model"] for c in contracts if c["provider"] == "google"})


@pytest.mark.parametrize(
    ("model", "day", "minimum"),
    [
        # The pages of 2025: 2.5 Pro 2,048 from 2025-05-08, 4,096 by 2025-09-10.
        ("gemini-2.5-flash", dt.date(2025, 8, 1), 1024),
        ("gemini-2.5-pro", dt.date(2025, 6, 17), 2048),
        ("gemini-2.5-pro", dt.date(2025, 9, 9), 2048),
        ("gemini-2.5-pro", dt.date(2025, 9, 10), 4096),
        ("gemini-2.5-pro-preview-05-06", dt.date(2025, 5, 7), 4096),
        ("gemini-2.5-pro-preview-05-06", dt.date(2025, 5, 8), 2048),
        ("gemini-2.5-pro-preview-06-05", dt.date(2025, 10, 1), 4096),
        # The pages of 2026-05-07 and 2026-05-28, then the copy of 2026-06-26.
        ("gemini-2.5-flash", dt.date(2026, 5, 7), 1024),
        ("gemini-2.5-flash", dt.date(2026, 6, 26), 2048),
        ("gemini-2.5-pro", dt.date(2026, 5, 28), 4096),
        ("gemini-2.5-pro", dt.date(2026, 7, 7), 2048),
        ("gemini-3.5-flash", dt.date(2026, 5, 28), 1024),
        ("gemini-3.5-flash", dt.date(2026, 7, 7), 4096),
        # R2's date and today: as before this revision.
        ("gemini-2.5-flash", dt.date(2026, 10, 1), 2048),
        ("gemini-2.5-pro", TODAY, 2048),
        ("gemini-3.5-flash", TODAY, 4096),
    ],
)
def test_the_minimum_in_force_is_the_page_of_the_day(
    migrated_db_url: str, model: str, day: dt.date, minimum: int
) -> None:
    assert ContractStore(migrated_db_url).as_of("google", model, day).min_cacheable_tokens == (
        minimum
    )


@pytest.mark.parametrize(
    ("model", "day", "prices"),
    [
        ("gemini-2.5-flash", dt.date(2026, 7, 1), ("0.30", "2.50")),
        ("gemini-2.5-pro", dt.date(2025, 7, 1), ("1.25", "10")),
        ("gemini-2.5-pro", dt.date(2026, 7, 1), ("1.25", "10")),
    ],
)
def test_prices_are_unchanged(
    migrated_db_url: str, model: str, day: dt.date, prices: tuple[str, str]
) -> None:
    terms = ContractStore(migrated_db_url).as_of("google", model, day)
    assert (terms.input_per_mtok, terms.output_per_mtok) == tuple(Decimal(p) for p in prices)
    assert "contracts-v28" in terms.notes


def test_a_repeated_1500_token_prompt_is_read_only_before_the_change(migrated_db_url: str) -> None:
    store = ContractStore(migrated_db_url)
    prompt = list(range(1500))
    reads = {}
    for day in (dt.date(2026, 5, 15), dt.date(2026, 7, 15)):
        policy = policy_for_contract(store.as_of("google", "gemini-2.5-flash", day))
        usages = [
            policy.process(make_request(prompt, at=float(i), request_id=f"r{i}", line=i + 1))
            for i in range(2)
        ]
        reads[day] = usages[1].cache_read_tokens
    # In May 2026 the minimum is 1,024: the repeat of a 1,500-token prompt reads at least that.
    assert 1024 <= reads[dt.date(2026, 5, 15)] <= 1500
    # In July 2026 it is 2,048: 1,500 < 2,048, so nothing is read.
    assert reads[dt.date(2026, 7, 15)] == 0


def test_the_bill_of_the_repeat_after_the_change(migrated_db_url: str) -> None:
    terms = ContractStore(migrated_db_url).as_of("google", "gemini-2.5-flash", dt.date(2026, 7, 15))
    # Nothing read: 1,500 input + 100 output at $0.30 / $2.50 per MTok:
    # 1500 x 0.30 / 1e6 = 0.00045; 100 x 2.50 / 1e6 = 0.00025; total $0.0007.
    assert bill_of_counts(1_500, 100, terms) == Decimal("0.0007")


@pytest.mark.parametrize("model", _seeded())
def test_no_gap_from_first_day(migrated_db_url: str, model: str) -> None:
    summary = history_gaps(ContractStore(migrated_db_url).history("google", model), TODAY)
    assert summary.gaps == []


def test_the_round_trip_gives_back_the_replaced_rows_exactly(sqlite_url: str) -> None:
    previous, before, after = full_rows_across(sqlite_url, REVISION)

    def key(row: tuple[object, ...]) -> tuple[str, str, str, str]:
        return (str(row[0]), str(row[1]), str(row[2]), str(row[15]))

    kept = {key(row) for row in after}
    removed = sorted(key(row)[1:] for row in before if key(row) not in kept)
    assert removed == [
        ("gemini-2.5-pro", "2025-06-17", "seed:contracts-v3"),
        ("gemini-2.5-pro-preview-03-25", "2025-03-03", "seed:contracts-v26"),
        ("gemini-2.5-pro-preview-05-06", "2025-05-06", "seed:contracts-v26"),
        ("gemini-2.5-pro-preview-06-05", "2025-06-05", "seed:contracts-v26"),
        ("gemini-3.5-flash", "2026-05-19", "seed:contracts-v3"),
    ]
    # The two versions of 2026-02-26 are kept, ending where the page's change of June 2026
    # starts; nothing else that stays changes.
    changed = sorted(
        (str(row[1]), str(row[3]))
        for row in after
        if key(row) in {key(old) for old in before} and row not in before
    )
    assert changed == [("gemini-2.5-flash", "2026-06-26"), ("gemini-2.5-pro", "2026-06-26")]
    previous_keys = {key(row) for row in before}
    assert {row[15] for row in after if key(row) not in previous_keys} == {"seed:contracts-v28"}
    db.downgrade(sqlite_url, previous)
    assert full_version_rows(sqlite_url) == before
    db.get_engine(sqlite_url).dispose()
