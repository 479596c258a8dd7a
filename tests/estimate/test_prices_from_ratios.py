"""A cache price stored as a ratio of two published prices bills the published price.

The price maps give absolute prices (Azure's EU gpt-4o: $2.75 input, $1.38 cached input per
million tokens); the catalog stores the cached price as a ratio to ten places, 1.38 / 2.75 =
0.50181818181818... -> 0.5018181818. Its product with 2.75 is 1.37999999995, not the
published 1.38 (docs/contracts.md, "Prices from ratios").
"""

from __future__ import annotations

from decimal import Decimal

from cachecast.contracts import ContractTerms, TtlOption
from cachecast.simulator.billing import bill_request
from cachecast.simulator.types import RequestUsage
from tests.contracts.builders import terms


def eu_gpt_4o() -> ContractTerms:
    base = terms(read="0.5018181818")
    return base.model_copy(
        update={
            "input_per_mtok": Decimal("2.75"),
            "output_per_mtok": Decimal(11),
            # 1.375 published for a write (x0.5 of 2.75) is exact; 1.38 as a write ratio is not
            "ttl_options": (
                TtlOption(
                    name="5m",
                    ttl_seconds=300,
                    refresh_on_hit=True,
                    write_multiplier=Decimal("0.5018181818"),
                ),
            ),
        }
    )


def prompt(tokens: int, *, read: int = 0, written: int = 0) -> RequestUsage:
    """A prompt of ``tokens`` with ``read`` tokens read and ``written`` written (5m)."""
    writes = {"5m": written} if written else {}
    return RequestUsage("r", 1, 0.0, "s", tokens, 0, read, writes, tokens - read - written)


def test_a_million_cached_tokens_cost_the_published_cached_price() -> None:
    usage = prompt(1_000_000, read=1_000_000)
    # 1,000,000 tokens x $1.38 / 1,000,000 = $1.38 (the map's published price)
    assert bill_request(usage, eu_gpt_4o()).cache_read == Decimal("1.38")


def test_writes_too() -> None:
    usage = prompt(2_000_000, written=2_000_000)
    # 2,000,000 x $1.38 / 1,000,000 = $2.76
    assert bill_request(usage, eu_gpt_4o()).cache_write == Decimal("2.76")


def test_an_exact_ratio_is_unchanged() -> None:
    usage = prompt(1_234_567, read=1_234_567)
    # the builder's $3 input x 0.5 = $1.50 a million: 1,234,567 x 1.5 / 1e6 = 1.8518505
    assert bill_request(usage, terms(read="0.5")).cache_read == Decimal("1.8518505")
