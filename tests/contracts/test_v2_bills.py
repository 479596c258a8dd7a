"""Hand-computed bills for every term contracts-v2 corrects, on contracts read from a
database migrated to head. Each expected amount is worked out in the comments from the
providers' published prices (per million tokens), never from our output."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pytest

from cachecast.contracts import ContractStore
from cachecast.core.errors import UnknownContractError
from cachecast.simulator.billing import total_input_tokens
from cachecast.tokenizers.types import ObservedUsage
from tests.contracts.builders import bill_of as bill

NOV = dt.date(2026, 11, 1)


def anthropic_usage(
    uncached: int, read: int, written: int, output: int, ttl: str | None = "5m"
) -> ObservedUsage:
    """Anthropic's input_tokens and Bedrock Converse's inputTokens count only tokens after
    the last breakpoint: the whole prompt is input + cache reads + cache writes. ``ttl``
    None: usage without a TTL split (Converse without cacheDetails)."""
    total = total_input_tokens(uncached, read, written, reported_input_includes_cached=False)
    return ObservedUsage(
        input_tokens=total,
        cache_read_tokens=read,
        cache_write_tokens=written,
        cache_write_by_ttl={ttl: written} if ttl else {},
        output_tokens=output,
    )


def test_sonnet_4_5_above_200k_counts_cache_reads_and_writes(migrated_db_url: str) -> None:
    store = ContractStore(migrated_db_url)
    sonnet = store.as_of("anthropic", "claude-sonnet-4-5-20250929", NOV)
    # 10,000 uncached + 150,000 read + 45,000 written = 205,000 > 200K: every token at the
    # long-context prices, $6 in / $22.50 out, cache multipliers on top:
    #   10,000 x $6          = $0.06
    #   150,000 x $6 x 0.1   = $0.09
    #   45,000 x $6 x 1.25   = $0.3375
    #   2,000 x $22.50       = $0.045      total $0.5325
    assert bill(anthropic_usage(10_000, 150_000, 45_000, 2_000), sonnet) == Decimal("0.5325")
    # 10,000 + 140,000 + 45,000 = 195,000: base prices $3 / $15:
    #   10,000 x $3 = $0.03; 140,000 x $0.30 = $0.042; 45,000 x $3.75 = $0.16875;
    #   2,000 x $15 = $0.03                                   total $0.27075
    assert bill(anthropic_usage(10_000, 140_000, 45_000, 2_000), sonnet) == Decimal("0.27075")


def test_gemini_thinking_tokens_are_billed_as_output(migrated_db_url: str) -> None:
    flash = ContractStore(migrated_db_url).as_of("google", "gemini-2.5-flash", NOV)
    # usageMetadata: promptTokenCount 12,000 (cachedContentTokenCount 8,000 included),
    # candidatesTokenCount 500, thoughtsTokenCount 1,500: output = 500 + 1,500 = 2,000.
    observed = ObservedUsage(input_tokens=12_000, cache_read_tokens=8_000, output_tokens=2_000)
    # 4,000 x $0.30 = $0.0012; 8,000 x $0.03 = $0.00024; 2,000 x $2.50 = $0.005
    assert bill(observed, flash) == Decimal("0.00644")


def test_bedrock_converse_usage_claude_3_5_haiku(migrated_db_url: str) -> None:
    haiku = ContractStore(migrated_db_url).as_of(
        "bedrock", "us.anthropic.claude-3-5-haiku-20241022-v1:0", dt.date(2025, 6, 1)
    )
    assert not haiku.reported_input_includes_cached
    # Converse: inputTokens 24 (non-cached only), cacheWriteInputTokens 18,131,
    # outputTokens 100; the prompt is 24 + 18,131 = 18,155 tokens.
    write = anthropic_usage(24, 0, 18_131, 100, ttl=None)
    # $0.80 in, 5m write $1.00, read $0.08, $4 out (Bedrock price of Claude 3.5 Haiku):
    #   24 x $0.80 = $0.0000192; 18,131 x $1 = $0.018131; 100 x $4 = $0.0004
    assert bill(write, haiku) == Decimal("0.0185502")
    read = anthropic_usage(24, 18_131, 0, 100, ttl=None)
    #   24 x $0.80 = $0.0000192; 18,131 x $0.08 = $0.00145048; 100 x $4 = $0.0004
    assert bill(read, haiku) == Decimal("0.00186968")


@pytest.mark.parametrize(
    "model_id",
    [
        "us.anthropic.claude-sonnet-4-5-20250929-v1:0",
        "eu.anthropic.claude-sonnet-4-5-20250929-v1:0",
        "arn:aws:bedrock:us-east-1:111122223333:inference-profile/"
        "us.anthropic.claude-sonnet-4-5-20250929-v1:0",
    ],
)
def test_bedrock_regional_profile_is_billed_at_the_regional_rate(
    migrated_db_url: str, model_id: str
) -> None:
    store = ContractStore(migrated_db_url)
    regional = store.as_of("bedrock", model_id, NOV)
    usage = anthropic_usage(1_000, 20_000, 2_000, 500, ttl=None)
    # Geographic profiles cost 10% more than global: $3.30 in, 5m write $4.125,
    # read $0.33, $16.50 out:
    #   1,000 x $3.30 = $0.0033; 20,000 x $0.33 = $0.0066; 2,000 x $4.125 = $0.00825;
    #   500 x $16.50 = $0.00825                               total $0.0264
    assert bill(usage, regional) == Decimal("0.0264")
    glob = store.as_of("bedrock", "global.anthropic.claude-sonnet-4-5-20250929-v1:0", NOV)
    # Global: 1,000 x $3 + 20,000 x $0.30 + 2,000 x $3.75 + 500 x $15 = $0.024
    assert bill(usage, glob) == Decimal("0.024")


def test_bedrock_sonnet_4_5_minimum_is_1024_and_history_is_kept(migrated_db_url: str) -> None:
    store = ContractStore(migrated_db_url)
    model = "anthropic.claude-sonnet-4-5-20250929-v1:0"
    # A recorded 1,322-token cache write needs a minimum of at most 1,322; the Anthropic
    # page gives 1,024 for Sonnet 4.5.
    assert store.as_of("bedrock", model, NOV).min_cacheable_tokens == 1024
    assert store.as_of("bedrock", model, dt.date(2026, 1, 15)).min_cacheable_tokens == 1024
    # The seed's 2026-10-01 version (4,096) is still stored, for its one day.
    history = store.history("bedrock", model)
    assert [(t.effective_from, t.effective_to, t.min_cacheable_tokens) for t in history] == [
        (dt.date(2025, 9, 29), dt.date(2026, 10, 1), 1024),
        (dt.date(2026, 10, 1), dt.date(2026, 10, 2), 4096),
        (dt.date(2026, 10, 2), None, 1024),
    ]


def openai_usage(prompt: int, cached: int, written: int, output: int) -> ObservedUsage:
    # prompt_tokens include cached_tokens and cache_write_tokens.
    return ObservedUsage(
        input_tokens=prompt,
        cache_read_tokens=cached,
        cache_write_tokens=written,
        output_tokens=output,
    )


def test_gpt_5_6_launch_prices_then_stored_prices(migrated_db_url: str) -> None:
    store = ContractStore(migrated_db_url)
    usage = openai_usage(10_000, 4_000, 3_000, 1_000)
    launch = store.as_of("openai", "gpt-5.6", dt.date(2026, 7, 1))
    # Launch list price $5 in, writes 1.25x = $6.25, reads 0.1x = $0.50, $30 out:
    #   3,000 x $5 = $0.015; 4,000 x $0.50 = $0.002; 3,000 x $6.25 = $0.01875;
    #   1,000 x $30 = $0.03                                   total $0.06575
    assert bill(usage, launch) == Decimal("0.06575")
    later = store.as_of("openai", "gpt-5.6", dt.date(2026, 7, 9))
    # From 2026-07-09 $4 / $0.40 / $5 / $20: 0.012 + 0.0016 + 0.015 + 0.02 = $0.0486
    assert bill(usage, later) == Decimal("0.0486")


def test_deepseek_chat_lineage_and_retirement(migrated_db_url: str) -> None:
    store = ContractStore(migrated_db_url)
    # prompt 10,000 = 6,000 hit + 4,000 miss; 1,000 out.
    usage = openai_usage(10_000, 6_000, 0, 1_000)
    v32 = store.as_of("deepseek", "deepseek-chat", dt.date(2026, 1, 15))
    # V3.2: 4,000 x $0.28 = $0.00112; 6,000 x $0.028 = $0.000168; 1,000 x $0.42 = $0.00042
    assert bill(usage, v32) == Decimal("0.001708")
    v4 = store.as_of("deepseek", "deepseek-chat", dt.date(2026, 5, 15))
    # Alias of V4-Flash: 4,000 x $0.14 = $0.00056; 6,000 x $0.0028 = $0.0000168;
    # 1,000 x $0.28 = $0.00028                                total $0.0008568
    assert bill(usage, v4) == Decimal("0.0008568")
    with pytest.raises(UnknownContractError, match="no contract version in force on 2026-08-01"):
        store.as_of("deepseek", "deepseek-chat", dt.date(2026, 8, 1))


def test_opus_4_6_long_context_premium_until_ga(migrated_db_url: str) -> None:
    store = ContractStore(migrated_db_url)
    usage = anthropic_usage(250_000, 0, 0, 1_000)
    beta = store.as_of("anthropic", "claude-opus-4-6", dt.date(2026, 2, 20))
    # Beta: 250,000 x $10 = $2.50; 1,000 x $37.50 = $0.0375
    assert bill(usage, beta) == Decimal("2.5375")
    ga = store.as_of("anthropic", "claude-opus-4-6", dt.date(2026, 4, 1))
    # GA at flat prices: 250,000 x $5 = $1.25; 1,000 x $25 = $0.025
    assert bill(usage, ga) == Decimal("1.275")


def test_older_models_resolve_by_their_dated_ids(migrated_db_url: str) -> None:
    store = ContractStore(migrated_db_url)
    june = dt.date(2025, 6, 1)
    mini = store.as_of("openai", "gpt-4o-mini-2024-07-18", june)
    # 2,048 prompt, 1,024 cached, 100 out; $0.15 / $0.075 / $0.60:
    #   1,024 x $0.15 = $0.0001536; 1,024 x $0.075 = $0.0000768; 100 x $0.60 = $0.00006
    assert bill(openai_usage(2_048, 1_024, 0, 100), mini) == Decimal("0.0002904")
    sonnet35 = store.as_of("anthropic", "claude-3-5-sonnet-20241022", june)
    # 100 uncached + 2,000 written (5m) + 50 out at $3 / $3.75 / $15:
    #   100 x $3 = $0.0003; 2,000 x $3.75 = $0.0075; 50 x $15 = $0.00075
    assert bill(anthropic_usage(100, 0, 2_000, 50), sonnet35) == Decimal("0.00855")
    assert sonnet35.model == "claude-3-5-sonnet" and sonnet35.min_cacheable_tokens == 1024
    # Claude 3.5 Sonnet retired on 2025-10-22.
    with pytest.raises(UnknownContractError):
        store.as_of("anthropic", "claude-3-5-sonnet-20241022", dt.date(2025, 11, 1))
    haiku = store.as_of("bedrock", "us.anthropic.claude-haiku-4-5-20251001-v1:0", NOV)
    assert (haiku.input_per_mtok, haiku.min_cacheable_tokens) == (Decimal("1.1"), 4096)
    assert store.as_of("anthropic", "claude-opus-4-8", NOV).min_cacheable_tokens == 1024
