"""Hand-computed cases for the token-granular radix cache (SGLang-style)."""

from __future__ import annotations

from cachecast.simulator.policies.radix import RadixPrefixCache

from .helpers import make_request, run


def read(policy: RadixPrefixCache, tokens: list[int], at: float, **kwargs: object) -> int:
    request = make_request(tokens, at=at, **kwargs)  # type: ignore[arg-type]
    return policy.process(request).cache_read_tokens


def test_token_granular_hits_and_the_last_token_rule() -> None:
    policy = RadixPrefixCache()
    a = run(100, 0)
    assert read(policy, a, 0) == 0
    assert read(policy, a, 1) == 99  # at most len - 1 tokens
    usage = policy.process(make_request(a[:50] + run(30, 900), at=2))
    assert (usage.cache_read_tokens, usage.cache_write_tokens) == (50, {"kv": 30})


def test_the_least_recently_used_leaf_is_evicted_whole() -> None:
    policy = RadixPrefixCache(150)
    a, b = run(100, 0), run(40, 1000)
    read(policy, a, 0)
    read(policy, b, 1)  # 140 tokens held
    read(policy, run(30, 2000), 2)  # needs 20 more: the LRU leaf is a (100 tokens)
    assert read(policy, b, 3) == 39
    assert read(policy, a, 4) == 0


def test_leaves_go_before_the_shared_prefix_they_hang_from() -> None:
    policy = RadixPrefixCache(150)
    shared = run(60, 0)
    a, b = shared + run(40, 1000), shared + run(40, 2000)
    read(policy, a, 0)
    read(policy, b, 1)  # tree: shared (60) -> a-tail (40), b-tail (40): 140 tokens
    assert read(policy, a, 2) == 99  # touches shared and a-tail
    read(policy, run(30, 3000), 3)  # needs 20: the LRU leaf is b-tail (t=1)
    assert read(policy, b, 4) == 60
    # b's tail (40) came back: 130 + 40 > 150, so the LRU leaf goes again: a's tail
    # (used at t=2; the 30-token leaf was used at t=3). The shared 60 stay.
    assert read(policy, a, 5) == 60


def test_state_checkpoints_and_scope_isolation() -> None:
    policy = RadixPrefixCache(state_checkpoint_tokens=32)
    a = run(100, 0)
    read(policy, a, 0)
    assert read(policy, a, 1) == 96  # 99 rounded down to a multiple of 32
    assert read(policy, a, 2, scope="other") == 0
    assert read(policy, a, 3, model="other") == 0
