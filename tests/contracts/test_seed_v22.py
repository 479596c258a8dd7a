"""Revision 0030 (contracts-v22.json): the models held-out recordings left unpriced.

Expected terms are what the sources in docs/contracts.md ("contracts-v22") state, written here
from those sources, not from the data file:

- Z.ai GLM-4.6: $0.60 in, $0.11 cached, $2.20 out per MTok (Z.ai's pricing page
  https://docs.z.ai/guides/overview/pricing as quoted by ryoppippi/ccusage commit 72e2372:
  input 0.6e-6, cache_read 0.11e-6, output 2.2e-6 per token [S]); released 2025-09-30
  (OpenRouter's listing, "Release Date Sep 30, 2025" [S]).
- Z.ai GLM-4.5-Air: $0.20 in, $0.03 cached, $1.10 out (Vercel AI Gateway's providers table,
  row Z.ai [S]); released 2025-07-28 (the same page: "released July 28, 2025").
- Qwen3-Next-80B-A3B-Instruct on Model Studio: $0.15 / $1.20 (a recording's upstream cost for
  provider Alibaba: $0.00002505 for 135 in + 4 out [S]); released 2025-09-11 (Alibaba Cloud's
  blog post; press of 2025-09-11/12 [S]); no context cache [U].
- Kimi K2 0905: OpenRouter's ``moonshotai/kimi-k2-0905`` is Moonshot's kimi-k2-0905-preview
  ($0.60 in, $0.15 cache hit, $2.50 out, genai-prices 0.2.3 'kimi-k2-0905-preview' [S]).
- magistral-small-latest answered on 2026-10-06 (simonw/llm-mistral's fixture), after Magistral
  Small 1.2's retirement (2026-07-31, its card); $0.50 / $1.50 carried [U]."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pytest

from cachecast.contracts import ContractStore
from cachecast.contracts.history import history_gaps
from cachecast.contracts.model import CacheMode
from cachecast.core import db
from cachecast.core.errors import ContractNotYetInForceError
from tests.contracts.builders import bill_of_counts, full_rows_across, full_version_rows

TODAY = dt.date(2026, 12, 5)
REVISION = "0030_seed_contracts_v22"
AUTO = CacheMode.AUTOMATIC
RECORDED = dt.date(2026, 3, 9)  # charmbracelet/crush's cassettes (created 1773004135 s)


@pytest.mark.parametrize(
    ("provider", "name", "day", "mode", "prices"),
    [
        ("zai", "glm-4.6", dt.date(2025, 9, 30), CacheMode.AUTOMATIC, ("0.6", "2.2")),
        ("zai", "glm-4.6", RECORDED, CacheMode.AUTOMATIC, ("0.6", "2.2")),
        ("zai", "glm-4.5-air", dt.date(2025, 7, 28), CacheMode.AUTOMATIC, ("0.2", "1.1")),
        ("zai", "glm-4.5-air", RECORDED, CacheMode.AUTOMATIC, ("0.2", "1.1")),
        ("alibaba", "qwen3-next-80b-a3b-instruct", RECORDED, CacheMode.NONE, ("0.15", "1.2")),
        # The dated id OpenRouter returns is an alias.
        ("alibaba", "qwen3-next-80b-a3b-instruct-2509", RECORDED, CacheMode.NONE, ("0.15", "1.2")),
        ("moonshot", "kimi-k2-0905", RECORDED, CacheMode.AUTOMATIC, ("0.6", "2.5")),
        ("moonshot", "kimi-k2-0905-preview", RECORDED, CacheMode.AUTOMATIC, ("0.6", "2.5")),
        (
            "mistral",
            "magistral-small-latest",
            dt.date(2026, 7, 30),
            CacheMode.AUTOMATIC,
            ("0.5", "1.5"),
        ),
        (
            "mistral",
            "magistral-small-latest",
            dt.date(2026, 10, 6),
            CacheMode.AUTOMATIC,
            ("0.5", "1.5"),
        ),
    ],
)
def test_the_version_in_force(
    migrated_db_url: str,
    provider: str,
    name: str,
    day: dt.date,
    mode: CacheMode,
    prices: tuple[str, str],
) -> None:
    terms = ContractStore(migrated_db_url).as_of(provider, name, day)
    assert terms.mode is mode
    assert (terms.input_per_mtok, terms.output_per_mtok) == tuple(Decimal(p) for p in prices)


def test_the_kimi_alias_names_the_preview_contract(migrated_db_url: str) -> None:
    terms = ContractStore(migrated_db_url).as_of("moonshot", "kimi-k2-0905", RECORDED)
    assert terms.model == "kimi-k2-0905-preview"
    assert terms.effective_from == dt.date(2025, 9, 4)
    assert terms.read_multiplier == Decimal("0.25")  # $0.15 hit / $0.60 miss


@pytest.mark.parametrize(
    ("provider", "name", "first"),
    [
        ("zai", "glm-4.6", dt.date(2025, 9, 30)),
        ("zai", "glm-4.5-air", dt.date(2025, 7, 28)),
        ("alibaba", "qwen3-next-80b-a3b-instruct", dt.date(2025, 9, 11)),
    ],
)
def test_nothing_before_release(
    migrated_db_url: str, provider: str, name: str, first: dt.date
) -> None:
    store = ContractStore(migrated_db_url)
    assert store.as_of(provider, name, first).effective_from == first
    with pytest.raises(ContractNotYetInForceError):
        store.as_of(provider, name, first - dt.timedelta(days=1))


@pytest.mark.parametrize(
    ("provider", "name"),
    [
        ("zai", "glm-4.6"),
        ("zai", "glm-4.5-air"),
        ("alibaba", "qwen3-next-80b-a3b-instruct"),
        ("moonshot", "kimi-k2-0905-preview"),
        ("mistral", "magistral-small-latest"),
    ],
)
def test_no_gap_and_launch_known(migrated_db_url: str, provider: str, name: str) -> None:
    summary = history_gaps(ContractStore(migrated_db_url).history(provider, name), TODAY)
    assert summary.gaps == []
    assert summary.launch_known == 1
    assert summary.retired == 0  # magistral-small-latest no longer ends on 2026-07-31


def test_bills_by_hand(migrated_db_url: str) -> None:
    store = ContractStore(migrated_db_url)
    # GLM-4.6, 1,000 in + 100 out, nothing cached: 1,000 x $0.60 / 1e6 = 0.0006;
    # 100 x $2.20 / 1e6 = 0.00022; total 0.00082.
    glm46 = store.as_of("zai", "glm-4.6", RECORDED)
    assert bill_of_counts(1_000, 100, glm46) == Decimal("0.00082")
    # The recorded second GLM-4.6 turn: 12,039 in, 11,922 cached, 46 out.
    # 117 x $0.60 / 1e6 = 0.0000702; 11,922 x $0.11 / 1e6 = 0.00131142; 46 x $2.20 / 1e6 =
    # 0.0001012; total 0.00148282 (the stored read multiplier 0.1833333333 is $0.11 / $0.60
    # to ten places, so the bill agrees to eight).
    bill = bill_of_counts(12_039, 46, glm46, cached=11_922)
    assert bill.quantize(Decimal("1e-8")) == Decimal("0.00148282")
    # GLM-4.5-Air, 1,000 in of which 800 cached, 100 out: 200 x $0.20 / 1e6 = 0.00004;
    # 800 x $0.03 / 1e6 = 0.000024; 100 x $1.10 / 1e6 = 0.00011; total 0.000174.
    air = store.as_of("zai", "glm-4.5-air", RECORDED)
    assert bill_of_counts(1_000, 100, air, cached=800) == Decimal("0.000174")
    # Qwen3-Next, the recorded title request: 135 x $0.15 / 1e6 = 0.00002025; 4 x $1.20 / 1e6 =
    # 0.0000048; total 0.00002505, the upstream cost OpenRouter reported.
    qwen = store.as_of("alibaba", "qwen3-next-80b-a3b-instruct", RECORDED)
    assert bill_of_counts(135, 4, qwen) == Decimal("0.00002505")
    # magistral-small-latest on 2026-10-06, the fixture's 294 in + 4 out: 294 x $0.50 / 1e6 =
    # 0.000147; 4 x $1.50 / 1e6 = 0.000006; total 0.000153.
    magistral = store.as_of("mistral", "magistral-small-latest", dt.date(2026, 10, 6))
    assert bill_of_counts(294, 4, magistral) == Decimal("0.000153")


def test_the_round_trip_gives_back_the_replaced_row_exactly(sqlite_url: str) -> None:
    previous, before, after = full_rows_across(sqlite_url, REVISION)
    removed = [(row[1], str(row[2]), row[15]) for row in before if row not in after]
    # The Kimi K2 0905 row of contracts-v11 (seeded again with its alias) and the stored
    # magistral-small-latest version is unchanged: the seed starts where it ends.
    assert removed == [("kimi-k2-0905-preview", "2025-09-04", "seed:contracts-v11")]
    added = sorted((row[1], str(row[2]), row[16]) for row in after if row not in before)
    assert added == [
        ("glm-4.5-air", "2025-07-28", None),
        ("glm-4.6", "2025-09-30", None),
        ("kimi-k2-0905-preview", "2025-09-04", "kimi-k2-0905"),
        ("magistral-small-latest", "2026-07-31", None),
        ("qwen3-next-80b-a3b-instruct", "2025-09-11", "qwen3-next-80b-a3b-instruct-2509"),
    ]
    db.downgrade(sqlite_url, previous)
    assert full_version_rows(sqlite_url) == before
    db.get_engine(sqlite_url).dispose()
