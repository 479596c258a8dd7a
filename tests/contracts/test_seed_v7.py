"""Revision 0014 (contracts-v7.json): deepseek-chat's history before V3.2-Exp.

Expected terms and bills are DeepSeek's published prices (USD per million tokens), as the
versions' notes cite them: news0802 (cache hits at a tenth of the 1-yuan miss price; $0.014 /
$0.14 / $0.28 on the pricing page), the pricing page's V3 prices after the promotion ended on
2025-02-08 ($0.07 / $0.27 / $1.10), news250226 (50% off from 16:30 to 00:30 UTC: $0.035 /
$0.135 / $0.55), news250821 (V3.1: $0.07 / $0.56 / $1.68)."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

from cachecast.contracts import ContractStore
from cachecast.contracts.model import ContractTerms
from cachecast.simulator.billing import bill_request, usage_from_observed
from cachecast.tokenizers.types import ObservedUsage


def bill(contract: ContractTerms, prompt: int, hit: int, output: int, when: dt.datetime) -> Decimal:
    observed = ObservedUsage(
        input_tokens=prompt, cache_read_tokens=hit, cache_write_tokens=0, output_tokens=output
    )
    usage = usage_from_observed(
        observed,
        contract,
        request_id="r1",
        line=1,
        timestamp=when.timestamp(),
        scope="org",
        fallback_input_tokens=0,
        fallback_output_tokens=0,
    )
    return bill_request(usage, contract).total


def test_deepseek_chat_is_priced_from_2024_08_02(migrated_db_url: str) -> None:
    store = ContractStore(migrated_db_url)
    expected = {
        # day: (miss $/MTok, hit multiplier, out $/MTok, version start)
        dt.date(2024, 8, 2): ("0.14", "0.1", "0.28", dt.date(2024, 8, 2)),  # 0.014 / 0.14
        dt.date(2025, 1, 10): ("0.14", "0.1", "0.28", dt.date(2024, 8, 2)),  # V3's promotion
        dt.date(2025, 2, 8): ("0.27", "0.2592592593", "1.1", dt.date(2025, 2, 8)),
        dt.date(2025, 3, 14): ("0.27", "0.2592592593", "1.1", dt.date(2025, 2, 26)),
        dt.date(2025, 9, 10): ("0.56", "0.125", "1.68", dt.date(2025, 9, 5)),  # 0.07 / 0.56
    }
    for day, (miss, hit, out, start) in expected.items():
        terms = store.as_of("deepseek", "deepseek-chat", day)
        assert (terms.input_per_mtok, terms.read_multiplier, terms.output_per_mtok) == (
            Decimal(miss),
            Decimal(hit),
            Decimal(out),
        ), day
        assert terms.effective_from == start, day
        assert (terms.min_cacheable_tokens, terms.increment_tokens) == (64, 64), day
    # The stored V3.2-Exp version still starts on 2025-09-29, where the last new one ends.
    assert store.as_of("deepseek", "deepseek-chat", dt.date(2025, 9, 29)).input_per_mtok == (
        Decimal("0.28")
    )
    assert store.as_of("deepseek", "deepseek-chat", dt.date(2025, 3, 14)).off_peak is not None
    assert store.as_of("deepseek", "deepseek-chat", dt.date(2025, 2, 20)).off_peak is None


def test_a_2025_bill_at_peak_and_off_peak(migrated_db_url: str) -> None:
    terms = ContractStore(migrated_db_url).as_of("deepseek", "deepseek-chat", dt.date(2025, 3, 14))
    # ruby-openai's cassette: 2025-03-14 14:01 UTC (peak), 5 prompt tokens all missed, 11 out:
    # 5 x 0.27 + 11 x 1.10 = 1.35 + 12.1 = 13.45 $ per million requests -> $0.00001345
    peak = dt.datetime(2025, 3, 14, 14, 1, 48, tzinfo=dt.UTC)
    assert bill(terms, 5, 0, 11, peak) == Decimal("0.00001345")
    # 17:00 UTC is inside 16:30-00:30: 1,000 missed x 0.135 + 1,000 hit x 0.035 (0.135 x
    # 0.2592592593 = 0.0350000000055, a derived price rounded to 1e-8 $/MTok: the page's
    # 0.035) + 100 out x 0.55, per million: 135 + 35 + 55 = 225 -> $0.000225
    night = dt.datetime(2025, 3, 14, 17, 0, tzinfo=dt.UTC)
    assert bill(terms, 2_000, 1_000, 100, night) == Decimal("0.000225")
