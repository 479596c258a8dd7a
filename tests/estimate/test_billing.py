"""Bills to the cent on worked examples; every expected figure is computed by hand below."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pytest

from cachecast.contracts.model import CacheMode, ContractTerms, PriceTier, TtlOption
from cachecast.simulator.billing import (
    BillingError,
    BillTotals,
    bill_request,
    bill_without_cache,
    money,
    prices_for,
    storage_cost,
    total_input_tokens,
    usage_from_observed,
)
from cachecast.simulator.types import RequestUsage
from cachecast.tokenizers.types import ObservedUsage

D = Decimal


def anthropic_sonnet() -> ContractTerms:
    # Sonnet-class terms: $3 in / $15 out, 5m write x1.25, 1h write x2, read x0.1.
    return ContractTerms(
        provider="anthropic",
        model="claude-test",
        effective_from=dt.date(2025, 1, 1),
        verified_on=dt.date(2025, 1, 1),
        source="https://example.invalid/anthropic",
        mode=CacheMode.EXPLICIT,
        min_cacheable_tokens=1024,
        max_breakpoints=4,
        lookback_blocks=20,
        ttl_options=(
            TtlOption(name="5m", ttl_seconds=300, refresh_on_hit=True, write_multiplier=D("1.25")),
            TtlOption(name="1h", ttl_seconds=3600, refresh_on_hit=True, write_multiplier=D("2")),
        ),
        read_multiplier=D("0.1"),
        reported_input_includes_cached=False,
        input_per_mtok=D("3"),
        output_per_mtok=D("15"),
    )


def gemini_like() -> ContractTerms:
    # $1.25 in / $10 out up to 200k prompt tokens, $2.50 / $15 above; storage $4.50/MTok/h.
    return ContractTerms(
        provider="google",
        model="gemini-test",
        effective_from=dt.date(2025, 1, 1),
        verified_on=dt.date(2025, 1, 1),
        source="https://example.invalid/gemini",
        mode=CacheMode.BOTH,
        min_cacheable_tokens=2048,
        ttl_options=(
            TtlOption(name="1h", ttl_seconds=3600, refresh_on_hit=False, write_multiplier=D("1")),
        ),
        read_multiplier=D("0.1"),
        storage_per_mtok_hour=D("4.50"),
        input_per_mtok=D("1.25"),
        output_per_mtok=D("10"),
        long_context_tiers=(
            PriceTier(
                above_input_tokens=200_000, input_per_mtok=D("2.50"), output_per_mtok=D("15")
            ),
        ),
    )


def usage(
    input_tokens: int,
    read: int,
    writes: dict[str, int],
    output: int,
    storage_token_seconds: int = 0,
) -> RequestUsage:
    return RequestUsage(
        request_id="r1",
        line=1,
        timestamp=0.0,
        scope="org",
        input_tokens=input_tokens,
        output_tokens=output,
        cache_read_tokens=read,
        cache_write_tokens=writes,
        uncached_input_tokens=input_tokens - read - sum(writes.values()),
        storage_token_seconds=storage_token_seconds,
    )


def test_anthropic_worked_example_to_the_cent() -> None:
    # 10,000-token prompt: 8,000 read, 1,500 written at 5m, 500 uncached; 200 output; $3/$15.
    # reads    8000 * 3 * 0.1  / 1e6 = 0.0024
    # writes   1500 * 3 * 1.25 / 1e6 = 0.005625
    # uncached  500 * 3        / 1e6 = 0.0015
    # output    200 * 15       / 1e6 = 0.003
    # total = 0.0024 + 0.005625 + 0.0015 + 0.003 = 0.012525
    cost = bill_request(usage(10_000, 8_000, {"5m": 1_500}, 200), anthropic_sonnet())
    assert cost.cache_read == D("0.0024")
    assert cost.cache_write == D("0.005625")
    assert cost.input == D("0.0015")
    assert cost.output == D("0.003")
    assert cost.storage == 0
    assert cost.total == D("0.012525")
    # Caching off: 10000 * 3 / 1e6 = 0.03 input + 0.003 output = 0.033; saving 0.020475.
    off = bill_without_cache(usage(10_000, 8_000, {"5m": 1_500}, 200), anthropic_sonnet())
    assert off.total == D("0.033")
    assert off.total - cost.total == D("0.020475")


def test_ttl_split_bills_each_ttl_at_its_own_multiplier() -> None:
    # Same prompt, writes split 1,000 at 5m and 500 at 1h:
    # 5m: 1000 * 3 * 1.25 / 1e6 = 0.00375 ; 1h: 500 * 3 * 2 / 1e6 = 0.003 ; writes = 0.00675
    # total = 0.0024 + 0.00675 + 0.0015 + 0.003 = 0.01365
    cost = bill_request(usage(10_000, 8_000, {"5m": 1_000, "1h": 500}, 200), anthropic_sonnet())
    assert cost.cache_write == D("0.00675")
    assert cost.total == D("0.01365")
    # Billing all 1,500 at the 5m rate (the classic bug) would give 0.012525 instead.
    assert cost.total != D("0.012525")


def test_unknown_ttl_name_is_an_error_naming_the_request() -> None:
    with pytest.raises(BillingError, match=r"line 1.*'24h'"):
        bill_request(usage(2_000, 0, {"24h": 1_000}, 0), anthropic_sonnet())


def test_usage_that_does_not_add_up_is_refused() -> None:
    broken = usage(10_000, 8_000, {}, 0)
    broken.uncached_input_tokens = 1  # 8000 + 0 + 1 != 10000
    with pytest.raises(AssertionError):
        bill_request(broken, anthropic_sonnet())


def test_long_context_tier_applies_to_the_whole_request() -> None:
    contract = gemini_like()
    # 250,000-token prompt exceeds 200,000: every token type uses $2.50 in / $15 out.
    # reads 200000 * 2.50 * 0.1 / 1e6 = 0.05 ; uncached 50000 * 2.50 / 1e6 = 0.125
    # output 1000 * 15 / 1e6 = 0.015 ; total 0.19
    cost = bill_request(usage(250_000, 200_000, {}, 1_000), contract)
    assert (cost.cache_read, cost.input, cost.output) == (D("0.05"), D("0.125"), D("0.015"))
    assert cost.total == D("0.19")
    # Exactly 200,000 tokens is not *above* the threshold: base prices.
    # 200000 * 1.25 / 1e6 = 0.25 ; 1000 * 10 / 1e6 = 0.01
    at_threshold = bill_request(usage(200_000, 0, {}, 1_000), contract)
    assert (at_threshold.input, at_threshold.output) == (D("0.25"), D("0.01"))
    assert prices_for(contract, 200_001).tier_above_input_tokens == 200_000
    assert prices_for(contract, 200_000).tier_above_input_tokens is None


def test_storage_billed_per_token_hour_where_the_contract_has_it() -> None:
    # 100,000 tokens stored for 1,800 s = 180,000,000 token-s = 50,000 token-h;
    # 50000 * 4.50 / 1e6 = 0.225. Written 100,000 at x1: 100000 * 1.25 / 1e6 = 0.125.
    cost = bill_request(
        usage(100_000, 0, {"1h": 100_000}, 0, storage_token_seconds=180_000_000), gemini_like()
    )
    assert cost.storage == D("0.225")
    assert cost.cache_write == D("0.125")
    assert cost.total == D("0.35")
    # One token-second at $4.50/MTok/h = 4.5 / 3.6e9 = 1.25e-9 exactly.
    assert storage_cost(1, gemini_like()) == D("1.25e-9")
    # A contract with no storage price charges none.
    assert storage_cost(180_000_000, anthropic_sonnet()) == 0


def test_non_terminating_storage_is_rounded_only_at_1e_15() -> None:
    # 7 token-s at $4.50/MTok/h = 31.5 / 3.6e9 = 8.75e-9 exactly (terminates).
    assert storage_cost(7, gemini_like()) == D("8.75e-9")
    # 1 token-s at $1/MTok/h = 1 / 3.6e9 = 2.7777...e-10 -> 0.000000000277778 at 15 places.
    one_dollar = gemini_like().model_copy(update={"storage_per_mtok_hour": D("1")})
    assert storage_cost(1, one_dollar) == D("0.000000000277778")


def test_exclusive_and_inclusive_reported_input() -> None:
    # Anthropic: input_tokens=500 counts only uncached; total = 500 + 8000 + 1500 = 10,000.
    assert total_input_tokens(500, 8_000, 1_500, reported_input_includes_cached=False) == 10_000
    # OpenAI: prompt_tokens=10,000 already includes the 8,000 cached.
    assert total_input_tokens(10_000, 8_000, 0, reported_input_includes_cached=True) == 10_000
    # Inclusive input smaller than its own cached part is inconsistent.
    with pytest.raises(BillingError, match="includes cached"):
        total_input_tokens(500, 8_000, 1_500, reported_input_includes_cached=True)


def test_observed_usage_bills_like_the_worked_example() -> None:
    contract = anthropic_sonnet()
    total = total_input_tokens(500, 8_000, 1_500, reported_input_includes_cached=False)
    observed = ObservedUsage(
        input_tokens=total,
        cache_read_tokens=8_000,
        cache_write_tokens=1_500,
        cache_write_by_ttl={"5m": 1_000, "1h": 500},
        output_tokens=200,
    )
    as_usage = usage_from_observed(
        observed,
        contract,
        request_id="r1",
        line=1,
        timestamp=0.0,
        scope="org",
        fallback_input_tokens=0,
        fallback_output_tokens=0,
    )
    assert as_usage.uncached_input_tokens == 500
    assert bill_request(as_usage, contract).total == D("0.01365")  # the TTL-split example
    # Writes without a TTL split go to the default (first) option, 5m: total 0.012525.
    no_split = ObservedUsage(
        input_tokens=10_000, cache_read_tokens=8_000, cache_write_tokens=1_500, output_tokens=200
    )
    as_usage = usage_from_observed(
        no_split,
        contract,
        request_id="r1",
        line=1,
        timestamp=0.0,
        scope="org",
        fallback_input_tokens=0,
        fallback_output_tokens=0,
    )
    assert as_usage.cache_write_tokens == {"5m": 1_500}
    assert bill_request(as_usage, contract).total == D("0.012525")


def test_totals_accumulate_exactly() -> None:
    contract = anthropic_sonnet()
    totals = BillTotals()
    for _ in range(3):
        request = usage(10_000, 8_000, {"5m": 1_500}, 200)
        totals.add(
            request, bill_request(request, contract), bill_without_cache(request, contract), True
        )
    # Three times the worked example: 3 * 0.012525 = 0.037575; off 3 * 0.033 = 0.099.
    assert totals.cost.total == D("0.037575")
    assert totals.cost_without_cache.total == D("0.099")
    assert totals.savings == D("0.061425")
    assert totals.cache_read_tokens == 24_000
    assert totals.cache_write_tokens == {"5m": 4_500}
    assert totals.hit_rate == 24_000 / 30_000


@pytest.mark.parametrize(
    ("amount", "text"),
    [
        (D("0.00160"), "0.0016"),  # trailing zeros dropped: equal amounts print equally
        (D("1.25E-9"), "0.00000000125"),  # never an exponent
        (D("100"), "100"),  # normalize() would give 1E+2
        (D("0E-15"), "0"),
        (D("-0.50"), "-0.5"),  # savings can be negative when writes cost more than they save
    ],
)
def test_money_strings(amount: Decimal, text: str) -> None:
    assert money(amount) == text
