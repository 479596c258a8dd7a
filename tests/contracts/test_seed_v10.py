"""Revision 0018 (contracts-v10.json): OpenAI's and Anthropic's models back to their launches.

Expected figures are what the sources in docs/contracts.md ("contracts-v10") state, quoted
beside each case; bills are worked by hand in the comments. Versions of mode "none" (no
prompt caching offered) load only with revision 0017 (the mode), which this revision follows.
"""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pytest

from cachecast.contracts import ContractStore
from cachecast.contracts.history import history_gaps, read_lifecycle
from cachecast.core.errors import ContractNotYetInForceError, UnknownContractError
from cachecast.logs.types import ObservedUsage
from cachecast.simulator.billing import total_input_tokens
from tests.contracts.builders import bill_of as bill

TODAY = dt.date(2026, 12, 5)

# (provider, model) of every contract contracts-v10 adds versions to.
TOUCHED = (
    ("openai", "gpt-3.5-turbo"),
    ("openai", "gpt-3.5-turbo-0301"),
    ("openai", "gpt-3.5-turbo-0613"),
    ("openai", "gpt-3.5-turbo-16k"),
    ("openai", "gpt-3.5-turbo-16k-0613"),
    ("openai", "gpt-3.5-turbo-1106"),
    ("openai", "gpt-3.5-turbo-0125"),
    ("openai", "gpt-4"),
    ("openai", "gpt-4-0314"),
    ("openai", "gpt-4-0613"),
    ("openai", "gpt-4-32k"),
    ("openai", "gpt-4-32k-0314"),
    ("openai", "gpt-4-32k-0613"),
    ("openai", "gpt-4-1106-preview"),
    ("openai", "gpt-4-vision-preview"),
    ("openai", "gpt-4-1106-vision-preview"),
    ("openai", "gpt-4-0125-preview"),
    ("openai", "gpt-4-turbo-preview"),
    ("openai", "gpt-4-turbo"),
    ("openai", "gpt-4-turbo-2024-04-09"),
    ("openai", "gpt-4o"),
    ("openai", "gpt-4o-2024-05-13"),
    ("openai", "gpt-4o-mini"),
    ("openai", "o1-preview"),
    ("openai", "o1-mini"),
    ("openai", "gpt-5.2-chat-latest"),
    ("anthropic", "claude-3-opus-latest"),
    ("anthropic", "claude-3-sonnet"),
    ("anthropic", "claude-3-haiku"),
    ("anthropic", "claude-3-5-sonnet"),
    ("anthropic", "claude-2.1"),
    ("anthropic", "claude-2.0"),
    ("anthropic", "claude-fable-5-2"),
)


@pytest.mark.parametrize(
    ("provider", "model", "day", "prices", "mode"),
    [
        # https://openai.com/blog/introducing-chatgpt-and-whisper-apis: "$0.002 per 1k tokens"
        ("openai", "gpt-3.5-turbo", dt.date(2023, 3, 1), ("2", "2"), "none"),
        # https://openai.com/blog/function-calling-and-other-api-updates: input 25% cheaper,
        # $0.0015 / 1K in, $0.002 / 1K out, from 2023-06-13
        ("openai", "gpt-3.5-turbo", dt.date(2023, 6, 13), ("1.5", "2"), "none"),
        # gpt-3.5-turbo named gpt-3.5-turbo-0613 until 2024-02-16 ([S] langchain commit 3894b4d)
        ("openai", "gpt-3.5-turbo", dt.date(2024, 2, 15), ("1.5", "2"), "none"),
        # then gpt-3.5-turbo-0125: $0.0005 / $0.0015 per 1K
        # (https://openai.com/blog/new-embedding-models-and-api-updates)
        ("openai", "gpt-3.5-turbo", dt.date(2024, 2, 16), ("0.5", "1.5"), "none"),
        ("openai", "gpt-3.5-turbo-0125", dt.date(2025, 6, 1), ("0.5", "1.5"), "none"),
        # https://platform.openai.com/docs/deprecations (2023-11-06 entry):
        # gpt-3.5-turbo-0613 "$1.50 / 1M input tokens + $2.00 / 1M output tokens",
        # gpt-3.5-turbo-16k-0613 "$3.00 / 1M input tokens + $4.00 / 1M output tokens"
        ("openai", "gpt-3.5-turbo-0613", dt.date(2024, 1, 10), ("1.5", "2"), "none"),
        ("openai", "gpt-3.5-turbo-16k-0613", dt.date(2024, 1, 10), ("3", "4"), "none"),
        # same page: gpt-4-0314 "$30.00 / 1M input tokens + $60.00 / 1M output tokens",
        # gpt-4-32k "$60.00 / 1M input tokens + $120 / 1M output tokens"
        ("openai", "gpt-4", dt.date(2023, 5, 1), ("30", "60"), "none"),
        ("openai", "gpt-4-0314", dt.date(2025, 5, 1), ("30", "60"), "none"),
        ("openai", "gpt-4-32k", dt.date(2024, 1, 10), ("60", "120"), "none"),
        # same page: gpt-4-1106-vision-preview "$10.00 / 1M input tokens + $30 / 1M output"
        ("openai", "gpt-4-1106-preview", dt.date(2024, 1, 10), ("10", "30"), "none"),
        ("openai", "gpt-4-turbo-2024-04-09", dt.date(2024, 6, 1), ("10", "30"), "none"),
        # GPT-4o at $5 / $15 (gpt-4o-2024-05-13), no caching before 2024-10-01
        # (https://openai.com/index/api-prompt-caching/)
        ("openai", "gpt-4o", dt.date(2024, 6, 1), ("5", "15"), "none"),
        ("openai", "gpt-4o", dt.date(2024, 10, 1), ("2.5", "10"), "automatic"),
        ("openai", "gpt-4o-2024-05-13", dt.date(2025, 6, 1), ("5", "15"), "none"),
        # the caching announcement's table: "gpt-4o-mini-2024-07-18 | $0.15 | $0.075 | $0.60",
        # "o1-preview | $15.00 | $7.50 | $60.00", "o1 mini | $3.00 | $1.50 | $12.00"
        ("openai", "gpt-4o-mini-2024-07-18", dt.date(2024, 8, 1), ("0.15", "0.6"), "none"),
        ("openai", "o1-preview", dt.date(2024, 9, 20), ("15", "60"), "none"),
        ("openai", "o1-preview", dt.date(2024, 10, 1), ("15", "60"), "automatic"),
        ("openai", "o1-mini-2024-09-12", dt.date(2025, 3, 1), ("3", "12"), "automatic"),
        # gpt-5.2-chat-latest from GPT-5.2's release (2025-12-11) at $1.75 / $14 (LiteLLM 1.110.2)
        ("openai", "gpt-5.2-chat-latest", dt.date(2025, 12, 11), ("1.75", "14"), "automatic"),
        # Claude 3 (https://www.anthropic.com/news/claude-3-family): Opus $15 / $75,
        # Sonnet $3 / $15, Haiku $0.25 / $1.25; caching from 2024-08-14
        ("anthropic", "claude-3-opus-20240229", dt.date(2024, 5, 1), ("15", "75"), "none"),
        ("anthropic", "claude-3-opus-20240229", dt.date(2024, 9, 1), ("15", "75"), "explicit"),
        ("anthropic", "claude-3-sonnet-20240229", dt.date(2025, 1, 1), ("3", "15"), "none"),
        ("anthropic", "claude-3-haiku-20240307", dt.date(2024, 3, 13), ("0.25", "1.25"), "none"),
        ("anthropic", "claude-3-haiku-20240307", dt.date(2025, 1, 1), ("0.25", "1.25"), "explicit"),
        # https://www.anthropic.com/news/claude-3-5-sonnet: $3 / $15 from 2024-06-20
        ("anthropic", "claude-3-5-sonnet-20240620", dt.date(2024, 7, 1), ("3", "15"), "none"),
        # Claude 2.0 / 2.1 $8 / $24 ([S] genai-prices 0.2.3 'claude-2')
        ("anthropic", "claude-2.1", dt.date(2024, 1, 10), ("8", "24"), "none"),
        # Claude Fable 5.2 from its release (2026-11-09) at "standard $8/$40" ([S] Qiita)
        ("anthropic", "claude-fable-5-2", dt.date(2026, 11, 9), ("8", "40"), "explicit"),
    ],
)
def test_the_version_in_force_has_the_sources_prices(
    migrated_db_url: str,
    provider: str,
    model: str,
    day: dt.date,
    prices: tuple[str, str],
    mode: str,
) -> None:
    terms = ContractStore(migrated_db_url).as_of(provider, model, day)
    assert (terms.input_per_mtok, terms.output_per_mtok) == (
        Decimal(prices[0]),
        Decimal(prices[1]),
    )
    assert terms.mode.value == mode
    if mode == "none":
        # Nothing is cached: every prompt token at the input price.
        assert terms.read_multiplier == Decimal(1)
        assert terms.ttl_options == ()


def test_cached_terms_from_the_caching_launches(migrated_db_url: str) -> None:
    store = ContractStore(migrated_db_url)
    # OpenAI (https://openai.com/index/api-prompt-caching/): 50% off cached tokens, from
    # 1,024 tokens in 128-token increments.
    o1 = store.as_of("openai", "o1-preview", dt.date(2025, 1, 10))
    assert (o1.read_multiplier, o1.min_cacheable_tokens, o1.increment_tokens) == (
        Decimal("0.5"),
        1024,
        128,
    )
    # Anthropic pricing table: Opus 3 $18.75 write / $1.50 hit on $15; Haiku 3 $0.30 write /
    # $0.03 hit on $0.25; Haiku 3's minimum is 2048 tokens (the caching page).
    opus = store.as_of("anthropic", "claude-3-opus-20240229", dt.date(2024, 9, 1))
    assert opus.read_multiplier == Decimal("0.1")
    assert opus.ttl_by_name("5m").write_multiplier == Decimal("1.25")
    haiku = store.as_of("anthropic", "claude-3-haiku-20240307", dt.date(2024, 9, 1))
    assert (haiku.read_multiplier, haiku.min_cacheable_tokens) == (Decimal("0.12"), 2048)
    assert haiku.ttl_by_name("5m").write_multiplier == Decimal("1.2")


@pytest.mark.parametrize(
    ("provider", "model", "day"),
    [
        # Shutdown days (OpenAI deprecations; Anthropic model deprecations): no version after.
        ("openai", "gpt-3.5-turbo-0613", dt.date(2024, 9, 13)),
        ("openai", "gpt-4-0314", dt.date(2026, 3, 26)),
        ("openai", "gpt-3.5-turbo", dt.date(2026, 10, 23)),
        ("openai", "o1-preview", dt.date(2025, 7, 28)),
        ("openai", "gpt-5.2-chat-latest", dt.date(2026, 8, 10)),
        ("anthropic", "claude-3-opus-20240229", dt.date(2026, 1, 5)),
        ("anthropic", "claude-3-haiku-20240307", dt.date(2026, 4, 20)),
        ("anthropic", "claude-2.1", dt.date(2025, 7, 21)),
    ],
)
def test_no_version_after_a_shutdown(
    migrated_db_url: str, provider: str, model: str, day: dt.date
) -> None:
    store = ContractStore(migrated_db_url)
    store.as_of(provider, model, day - dt.timedelta(days=1))  # the last day served
    with pytest.raises(UnknownContractError):
        store.as_of(provider, model, day)


def test_a_log_before_the_launch_names_it(migrated_db_url: str) -> None:
    store = ContractStore(migrated_db_url)
    with pytest.raises(ContractNotYetInForceError) as caught:
        store.served("openai", "gpt-3.5-turbo", dt.date(2023, 2, 28), TODAY)
    assert "launched on 2023-03-01" in str(caught.value)


def test_every_touched_model_has_a_launch_and_no_gap(migrated_db_url: str) -> None:
    store = ContractStore(migrated_db_url)
    lifecycle = read_lifecycle()
    history = [terms for key in TOUCHED for terms in store.history(*key)]
    summary = history_gaps(history, TODAY, lifecycle)
    assert summary.gaps == []
    assert summary.contracts == len(TOUCHED)
    # Claude 2.0's price before 2023-11-21 is in no source: no launch recorded for it.
    assert summary.launch_unknown == ["anthropic/claude-2.0"]
    # The stored versions of 2026-12-03 follow the retirements: declared as not served.
    assert lifecycle[("openai", "o1-mini")].not_served[0].end == dt.date(2026, 12, 3)


def test_hand_computed_bills(migrated_db_url: str) -> None:
    store = ContractStore(migrated_db_url)
    plain = ObservedUsage(input_tokens=1_000, output_tokens=100)
    # gpt-3.5-turbo on 2023-05-01 at $2 / $2: 1,000 x $2 / 1e6 = $0.002;
    # 100 x $2 / 1e6 = $0.0002; total $0.0022
    turbo = store.as_of("openai", "gpt-3.5-turbo", dt.date(2023, 5, 1))
    assert bill(plain, turbo) == Decimal("0.0022")
    # gpt-4 on 2024-01-10 at $30 / $60: $0.03 + 100 x $60 / 1e6 = $0.006; total $0.036
    gpt4 = store.as_of("openai", "gpt-4", dt.date(2024, 1, 10))
    assert bill(plain, gpt4) == Decimal("0.036")
    # o1-mini on 2024-11-01: 2,000 prompt tokens of which 1,280 cached, 100 out:
    #   720 x $3 / 1e6 = $0.00216; 1,280 x $1.50 / 1e6 = $0.00192; 100 x $12 / 1e6 = $0.0012
    #   total $0.00528
    o1_mini = store.as_of("openai", "o1-mini", dt.date(2024, 11, 1))
    observed = ObservedUsage(input_tokens=2_000, cache_read_tokens=1_280, output_tokens=100)
    assert bill(observed, o1_mini) == Decimal("0.00528")
    # claude-3-haiku on 2024-09-01: 1,000 uncached + 3,000 read + 2,048 written (5m) + 100 out:
    #   1,000 x $0.25 = $0.00025; 3,000 x $0.03 = $0.00009; 2,048 x $0.30 = $0.0006144;
    #   100 x $1.25 = $0.000125; total $0.0010794
    haiku = store.as_of("anthropic", "claude-3-haiku-20240307", dt.date(2024, 9, 1))
    total = total_input_tokens(1_000, 3_000, 2_048, reported_input_includes_cached=False)
    written = ObservedUsage(
        input_tokens=total,
        cache_read_tokens=3_000,
        cache_write_tokens=2_048,
        cache_write_by_ttl={"5m": 2_048},
        output_tokens=100,
    )
    assert bill(written, haiku) == Decimal("0.0010794")
