"""Hosted (automatic) policies replay block-level traces in the trace's own blocks.

Needed for exact partitioning of the Mooncake trace under hosted contracts: before, a
policy whose block (the contract's 128-token increment) differed from the trace's 512-token
ids refused the trace.
"""

from __future__ import annotations

from decimal import Decimal

from cachecast.contracts.model import TtlOption
from cachecast.simulator.policies import AutomaticPrefixCache, ImplicitPlusCachedContent
from cachecast.tokenizers.types import TokenizedRequest
from tests.simulator.helpers import make_trace_request


def trace_request(line: int, time: float, length: int, ids: list[int]) -> TokenizedRequest:
    return make_trace_request(ids, length, at=time, scope="default", line=line)


def test_automatic_policy_matches_trace_blocks_with_minimum_and_increment() -> None:
    # OpenAI-like terms: 128-token increment as the policy block, 1,024-token minimum.
    policy = AutomaticPrefixCache(block_size=128, min_tokens=1024, increment=128)
    first = policy.process(trace_request(1, 0.0, 1600, [1, 2, 3, 4]))
    # Cold cache: nothing read; the 3 full 512-token blocks (1600 // 512) are written.
    assert (first.cache_read_tokens, first.cache_write_total) == (0, 3 * 512)
    second = policy.process(trace_request(2, 1.0, 2048, [1, 2, 9, 10]))
    # Ids 1, 2 match: 1,024 tokens = the minimum exactly; blocks 9, 10 are new writes.
    assert (second.cache_read_tokens, second.cache_write_total) == (1024, 2 * 512)
    third = policy.process(trace_request(3, 2.0, 1100, [1, 5, 6]))
    # One matched block (512) is below the 1,024 minimum: no read; block 5 is written
    # (1100 // 512 = 2 full blocks, the partial third id is not cached).
    assert (third.cache_read_tokens, third.cache_write_total) == (0, 512)


def test_gemini_implicit_cache_counts_trace_blocks() -> None:
    option = TtlOption(
        name="1h", ttl_seconds=3600, refresh_on_hit=False, write_multiplier=Decimal(1)
    )
    policy = ImplicitPlusCachedContent(ttl_options=[option], min_tokens=1024, block_size=16)
    policy.process(trace_request(1, 0.0, 1536, [7, 8, 9]))
    again = policy.process(trace_request(2, 1.0, 1536, [7, 8, 9]))
    # Same three ids: all 3 * 512 tokens are read from the implicit cache (no writes are
    # reported by the implicit cache).
    assert (again.cache_read_tokens, again.cache_write_total) == (1536, 0)
