"""Hand-computed cases for implicit caching plus storage-billed cached content."""

from __future__ import annotations

from decimal import Decimal

from cachecast.contracts.model import TtlOption
from cachecast.simulator.policies.gemini import ImplicitPlusCachedContent
from cachecast.tokenizers.types import Breakpoint

from .helpers import make_request, run

ONE_HOUR = TtlOption(name="1h", ttl_seconds=3600, refresh_on_hit=False, write_multiplier=Decimal(1))


def test_cached_content_is_created_once_billed_for_storage_and_expires() -> None:
    policy = ImplicitPlusCachedContent(ttl_options=(ONE_HOUR,), min_tokens=1024)
    prompt, points = run(6000, 0), [Breakpoint(5000)]
    usage = policy.process(make_request(prompt, breakpoints=points, at=0))
    # Creation: 5,000 tokens written, stored for the whole hour: 5,000 x 3,600.
    assert usage.cache_write_tokens == {"1h": 5000}
    assert usage.storage_token_seconds == 18_000_000
    assert usage.cache_read_tokens == 0
    usage = policy.process(make_request(prompt, breakpoints=points, at=100))
    # Read from the object while it lives; no new storage (no refresh on this option).
    # The implicit cache also matched: the whole 6,000-token prompt (375 blocks of 16).
    assert usage.cache_read_tokens == 6000
    assert usage.storage_token_seconds == 0
    usage = policy.process(make_request(prompt[:5500], breakpoints=points, at=3600))
    # At exactly created + 3,600 s the object is gone and is created again.
    assert usage.cache_write_tokens == {"1h": 5000}
    assert usage.storage_token_seconds == 18_000_000


def test_implicit_hits_need_the_minimum_and_write_nothing_billable() -> None:
    policy = ImplicitPlusCachedContent(ttl_options=(ONE_HOUR,), min_tokens=1024)
    short, long = run(1000, 0), run(2000, 5000)
    policy.process(make_request(short, at=0))
    assert policy.process(make_request(short, at=1)).cache_read_tokens == 0  # < 1,024
    first = policy.process(make_request(long, at=2))
    assert (first.cache_read_tokens, first.cache_write_total) == (0, 0)
    # 2,000 tokens = 125 blocks of 16, all cached by the first request.
    assert policy.process(make_request(long, at=3)).cache_read_tokens == 2000
    assert policy.process(make_request(long, at=4, scope="other")).cache_read_tokens == 0
