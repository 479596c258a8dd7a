"""What the provider said it held feeds later predictions (``CachePolicy.learn``;
docs/predictions.md, "Warm caches the log shows"). Expected values are the arithmetic in
the comments: the provider's observed read of a request is a prefix it holds afterwards."""

from __future__ import annotations

from cachecast.logs.types import ObservedUsage
from cachecast.simulator.policies.automatic import AutomaticPrefixCache
from cachecast.tokenizers.types import Breakpoint, Segment

from .helpers import make_request, run
from .test_explicit import anthropic_like

SYSTEM = run(1200, 0)  # a 1,200-token system prompt both requests open with


def warm_first_request() -> tuple[list[int], tuple[Segment, ...]]:
    """System (1,200) + two messages (300 each): 1,800 tokens, a breakpoint at the end."""
    tokens = SYSTEM + run(600, 10_000)
    segments = (
        Segment("system", "system", 0, 1200),
        Segment("message", "messages[0]", 1200, 1500),
        Segment("message", "messages[1]", 1500, 1800),
    )
    return tokens, segments


def second_request() -> tuple[list[int], tuple[Segment, ...]]:
    """The same system, another message (400): 1,600 tokens, a breakpoint at the end."""
    tokens = SYSTEM + run(400, 20_000)
    segments = (
        Segment("system", "system", 0, 1200),
        Segment("message", "messages[0]", 1200, 1600),
    )
    return tokens, segments


def replay(observed_read: int, learn: bool) -> tuple[int, int]:
    """Request 1 found the system prompt cached before the log (observed read
    ``observed_read``, write 1,800 - 1,200 = 600); request 2, a minute later, shares only the
    system prompt. Returns request 2's predicted (read, write)."""
    policy = anthropic_like()
    tokens, segments = warm_first_request()
    first = make_request(tokens, segments=segments, breakpoints=[Breakpoint(1800)], at=0)
    usage = policy.process(first)
    assert (usage.cache_read_tokens, usage.cache_write_total) == (0, 1800)  # first sight
    if learn:
        policy.learn(first, ObservedUsage(1800, observed_read, 1800 - observed_read))
    tokens, segments = second_request()
    second = make_request(tokens, segments=segments, breakpoints=[Breakpoint(1600)], at=60)
    usage = policy.process(second)
    return usage.cache_read_tokens, usage.cache_write_total


def test_a_read_before_the_log_is_held_for_the_next_request() -> None:
    # Without what request 1 observed, nothing ends at 1,200 in our cache: request 2 writes
    # its whole 1,600-token prefix.
    assert replay(1200, learn=False) == (0, 1600)
    # The provider read 1,200 tokens of request 1, so it holds that prefix; request 2's
    # lookback from its breakpoint (1,600) reaches the system's end (1,200): read 1,200,
    # write 1,600 - 1,200 = 400.
    assert replay(1200, learn=True) == (1200, 400)


def test_a_read_a_few_tokens_off_is_placed_at_the_nearest_boundary() -> None:
    # Anthropic's count of the same prefix may sit a few tokens off the approximation's:
    # 1,197 is 3 tokens from the boundary at 1,200 (within max(8, 1%)), learned there.
    assert replay(1197, learn=True) == (1200, 400)
    # 1,150 is 50 tokens from every boundary (over max(8, 11.5)): nothing is learned.
    assert replay(1150, learn=True) == (0, 1600)


def test_a_learned_prefix_expires_with_the_default_ttl() -> None:
    policy = anthropic_like()
    tokens, segments = warm_first_request()
    first = make_request(tokens, segments=segments, breakpoints=[Breakpoint(1800)], at=0)
    policy.process(first)
    policy.learn(first, ObservedUsage(1800, 1200, 600))
    tokens, segments = second_request()
    # 300 s after the read the 5-minute entry is gone (alive while t < 0 + 300).
    late = make_request(tokens, segments=segments, breakpoints=[Breakpoint(1600)], at=300)
    usage = policy.process(late)
    assert (usage.cache_read_tokens, usage.cache_write_total) == (0, 1600)


def test_automatic_cache_holds_an_observed_prefix_our_terms_did_not_cache() -> None:
    # Minimum 1,024, 128-token blocks and steps. Request 1 (1,000 tokens) is under our
    # minimum, so our replay caches nothing; the provider read 896 of it (7 blocks of 128).
    policy = AutomaticPrefixCache(block_size=128, min_tokens=1024, increment=128)
    shared = run(1000, 0)
    first = make_request(shared, at=0)
    assert policy.process(first).cache_read_tokens == 0
    second = make_request([*shared, *run(400, 5000)], at=1)
    assert policy.matched_tokens(second)[0] == 0  # nothing held before learning
    policy.learn(first, ObservedUsage(1000, 896, 0))
    # Request 2 extends request 1: its first 7 blocks (896 tokens) are now held; 896 is
    # under the 1,024 minimum, so no hit is billed.
    assert policy.matched_tokens(second)[0] == 896
    assert policy.process(second).cache_read_tokens == 0
