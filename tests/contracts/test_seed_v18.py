"""Revision 0026 (contracts-v18.json): the cache-priced models genai-prices 0.2.5 added
(GPT-6.2 Astra and Sol, Gemini 4 Carbon and Neon) and Gemini 4 Argon's price of 2026-12-01.

Expected terms are what the sources in docs/contracts.md ("contracts-v18") state, written here
from those sources, not from the data file: OpenAI's GPT-6.2 Sol model page
(https://developers.openai.com/api/docs/models/gpt-6.2-sol); for GPT-6.2 Astra, Gemini 4 Carbon
and Neon the figures genai-prices 0.2.5 gives citing the providers' pages, with BerriAI/litellm
discussions #52347 and #50970 and gateways' announcements agreeing [S]; Gemini 4 Argon's
introductory price "until 2026-11-30" and $4 / $20 after, from Google's page
(https://ai.google.dev/gemini-api/docs/generate-content/latest-model). Release days: GPT-6.2
2026-11-17, Carbon 2026-11-10, Neon 2026-11-18 [S]."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pytest
import sqlalchemy as sa

from cachecast.contracts import ContractStore
from cachecast.contracts.history import history_gaps
from cachecast.contracts.model import derived_per_mtok
from cachecast.core import db
from cachecast.core.errors import ContractNotYetInForceError
from cachecast.simulator.billing import bill_request
from cachecast.simulator.types import RequestUsage

TODAY = dt.date(2026, 12, 5)


@pytest.mark.parametrize(
    ("provider", "name", "day", "prices", "cached"),
    [
        # OpenAI's gpt-6.2-sol page: Input $2.00, Cached input $0.10, Output $10.00.
        ("openai", "gpt-6.2-sol", dt.date(2026, 11, 17), ("2", "10"), "0.1"),
        # GPT-6.2 Astra: $8 input, $0.40 cached, $40 output [S genai-prices 0.2.5, #52347].
        ("openai", "gpt-6.2-astra", dt.date(2026, 12, 5), ("8", "40"), "0.4"),
        # Gemini 4 Carbon: $2 / $10, cached $0.10 through 2026-11-30; $4 / $20, cached
        # $0.20 from 2026-12-01 [S genai-prices 0.2.5, litellm discussion #50970].
        ("google", "gemini-4-carbon", dt.date(2026, 11, 10), ("2", "10"), "0.1"),
        ("google", "gemini-4-carbon", dt.date(2026, 11, 30), ("2", "10"), "0.1"),
        ("google", "gemini-4-carbon", dt.date(2026, 12, 1), ("4", "20"), "0.2"),
        ("vertex", "gemini-4-carbon", dt.date(2026, 12, 5), ("4", "20"), "0.2"),
        # Gemini 4 Neon: $3 / $15, cached $0.15, no promotional period [S].
        ("google", "gemini-4-neon", dt.date(2026, 11, 18), ("3", "15"), "0.15"),
        ("vertex", "gemini-4-neon", dt.date(2026, 12, 5), ("3", "15"), "0.15"),
        # Gemini 4 Argon (Google's page): $2 / $10 until 2026-11-30, then $4 / $20; cached
        # $0.10, then $0.20 (litellm discussion #46238 [S]).
        ("google", "gemini-4-argon", dt.date(2026, 11, 30), ("2", "10"), "0.1"),
        ("google", "gemini-4-argon", dt.date(2026, 12, 1), ("4", "20"), "0.2"),
        ("vertex", "gemini-4-argon", dt.date(2026, 11, 30), ("2", "10"), "0.1"),
        ("vertex", "gemini-4-argon", dt.date(2026, 12, 1), ("4", "20"), "0.2"),
    ],
)
def test_prices_the_sources_state(
    migrated_db_url: str,
    provider: str,
    name: str,
    day: dt.date,
    prices: tuple[str, str],
    cached: str,
) -> None:
    terms = ContractStore(migrated_db_url).as_of(provider, name, day)
    assert terms.model == name
    assert (terms.input_per_mtok, terms.output_per_mtok) == (
        Decimal(prices[0]),
        Decimal(prices[1]),
    )
    assert derived_per_mtok(terms.input_per_mtok, terms.read_multiplier) == Decimal(cached)


def test_gpt_6_2_sol_writes_and_long_context_as_its_page_states(migrated_db_url: str) -> None:
    terms = ContractStore(migrated_db_url).as_of("openai", "gpt-6.2-sol", dt.date(2026, 11, 20))
    writes = {
        option.name: derived_per_mtok(terms.input_per_mtok, option.write_multiplier)
        for option in terms.ttl_options
    }
    # "Cache writes $2.50" (30 minutes of retention); "A 12-hour cache write costs $5".
    assert writes == {"30m": Decimal("2.5"), "12h": Decimal("5")}
    # "more than 272K input tokens, input and cache rates double and output costs 1.5 times".
    (tier,) = terms.long_context_tiers
    assert (tier.above_input_tokens, tier.input_per_mtok, tier.output_per_mtok) == (
        272_000,
        Decimal("4"),
        Decimal("15"),
    )


@pytest.mark.parametrize("name", ["gemini-4-carbon", "gemini-4-neon"])
def test_gemini_4_carbon_and_neon_cache_implicitly_only(migrated_db_url: str, name: str) -> None:
    # "Implicit caching only; explicit caching is not supported" (genai-prices 0.2.5 [S]):
    # no explicit cache objects, so no storage price.
    terms = ContractStore(migrated_db_url).as_of("google", name, TODAY)
    assert terms.mode.value == "automatic"
    assert terms.storage_per_mtok_hour is None


@pytest.mark.parametrize(
    ("provider", "name", "day", "launch"),
    [
        ("openai", "gpt-6.2-sol", dt.date(2026, 11, 16), "2026-11-17"),
        ("openai", "gpt-6.2-astra", dt.date(2026, 11, 16), "2026-11-17"),
        ("google", "gemini-4-carbon", dt.date(2026, 11, 9), "2026-11-10"),
        ("google", "gemini-4-neon", dt.date(2026, 11, 17), "2026-11-18"),
    ],
)
def test_before_release_is_refused_with_the_release_day(
    migrated_db_url: str, provider: str, name: str, day: dt.date, launch: str
) -> None:
    with pytest.raises(ContractNotYetInForceError, match=launch):
        ContractStore(migrated_db_url).as_of(provider, name, day)


LAUNCHED = [
    ("openai", "gpt-6.2-astra"),
    ("openai", "gpt-6.2-sol"),
    ("google", "gemini-4-carbon"),
    ("google", "gemini-4-neon"),
]
TOUCHED = [
    *LAUNCHED,
    ("vertex", "gemini-4-carbon"),
    ("vertex", "gemini-4-neon"),
    ("google", "gemini-4-argon"),
    ("vertex", "gemini-4-argon"),
]


@pytest.mark.parametrize(("provider", "model"), TOUCHED)
def test_no_gap(migrated_db_url: str, provider: str, model: str) -> None:
    summary = history_gaps(ContractStore(migrated_db_url).history(provider, model), TODAY)
    assert summary.gaps == []
    assert summary.launch_known == (1 if (provider, model) in LAUNCHED else 0)


def _usage(input_tokens: int, output_tokens: int, cache_read_tokens: int = 0) -> RequestUsage:
    return RequestUsage(
        request_id="r1",
        line=1,
        timestamp=0.0,
        scope="org",
        input_tokens=input_tokens,
        output_tokens=output_tokens,
        cache_read_tokens=cache_read_tokens,
        uncached_input_tokens=input_tokens - cache_read_tokens,
    )


@pytest.mark.parametrize(
    ("provider", "name", "day", "usage", "total"),
    [
        # gpt-6.2-sol, 1,000 in + 100 out: 1,000 x $2 / 1e6 = 0.002; 100 x $10 / 1e6 = 0.001.
        ("openai", "gpt-6.2-sol", dt.date(2026, 11, 20), _usage(1_000, 100), "0.003"),
        # gpt-6.2-astra, 10,000 in of which 8,000 read from cache, 500 out:
        # 2,000 x $8 / 1e6 = 0.016; 8,000 x $0.40 / 1e6 = 0.0032; 500 x $40 / 1e6 = 0.02;
        # total 0.0392.
        ("openai", "gpt-6.2-astra", dt.date(2026, 11, 20), _usage(10_000, 500, 8_000), "0.0392"),
        # gemini-4-carbon, 1,000 in + 100 out on the last introductory day: 0.002 + 0.001;
        # the next day at $4 / $20: 0.004 + 0.002.
        ("google", "gemini-4-carbon", dt.date(2026, 11, 30), _usage(1_000, 100), "0.003"),
        ("google", "gemini-4-carbon", dt.date(2026, 12, 1), _usage(1_000, 100), "0.006"),
        # gemini-4-neon, 5,000 in of which 4,096 cached, 200 out: 904 x $3 / 1e6 = 0.002712;
        # 4,096 x $0.15 / 1e6 = 0.0006144; 200 x $15 / 1e6 = 0.003; total 0.0063264.
        ("google", "gemini-4-neon", dt.date(2026, 12, 5), _usage(5_000, 200, 4_096), "0.0063264"),
    ],
)
def test_a_bill_by_hand(
    migrated_db_url: str,
    provider: str,
    name: str,
    day: dt.date,
    usage: RequestUsage,
    total: str,
) -> None:
    terms = ContractStore(migrated_db_url).as_of(provider, name, day)
    assert bill_request(usage, terms).total == Decimal(total)


def _rows(url: str) -> list[tuple[object, ...]]:
    with db.get_engine(url).connect() as connection:
        return list(
            connection.execute(
                sa.text(
                    "SELECT provider, model, effective_from, effective_to, mode, origin"
                    " FROM contract_version ORDER BY provider, model, effective_from"
                )
            )
        )


def test_upgrade_adds_and_closes_argon_and_downgrade_gives_back_the_rows(sqlite_url: str) -> None:
    db.upgrade(sqlite_url, "0025_seed_contracts_v17")
    before = _rows(sqlite_url)
    db.upgrade(sqlite_url, "0026_seed_contracts_v18")
    after = _rows(sqlite_url)
    # The only stored rows the upgrade changes are Argon's open versions of 2026-10-01,
    # closed on the day the $4 / $20 version begins.
    changed = [row for row in before if row not in after]
    assert [(row[0], row[1], str(row[2])) for row in changed] == [
        ("google", "gemini-4-argon", "2026-10-01"),
        ("vertex", "gemini-4-argon", "2026-10-01"),
    ]
    closed = [row for row in after if row not in before and row[5] != "seed:contracts-v18"]
    assert [(row[0], row[1], str(row[2]), str(row[3])) for row in closed] == [
        ("google", "gemini-4-argon", "2026-10-01", "2026-12-01"),
        ("vertex", "gemini-4-argon", "2026-10-01", "2026-12-01"),
    ]
    added = [row for row in after if row[5] == "seed:contracts-v18"]
    assert len(added) == 10
    assert sorted({(str(row[0]), str(row[1])) for row in added}) == sorted(TOUCHED)
    db.downgrade(sqlite_url, "0025_seed_contracts_v17")
    assert _rows(sqlite_url) == before
    db.get_engine(sqlite_url).dispose()
