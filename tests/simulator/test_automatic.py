"""Hand-computed cases for automatic prefix caching (OpenAI-style)."""

from __future__ import annotations

from cachecast.simulator.policies.automatic import AutomaticPrefixCache, round_hit

from .helpers import make_request, run


def openai_like(**overrides: object) -> AutomaticPrefixCache:
    options: dict[str, object] = {"block_size": 128, "min_tokens": 1024, "increment": 128}
    options.update(overrides)
    return AutomaticPrefixCache(**options)  # type: ignore[arg-type]


def test_minimum_length_edges_1023_1024_1025() -> None:
    policy = openai_like()
    short = run(1023, 0)
    usage = policy.process(make_request(short, at=0))
    assert (usage.cache_read_tokens, usage.cache_write_total) == (0, 0)  # below the minimum
    assert policy.process(make_request(short, at=1)).cache_read_tokens == 0

    exact = run(1024, 5000)
    usage = policy.process(make_request(exact, at=2))
    assert usage.cache_write_tokens == {"default": 1024}  # 8 blocks of 128
    assert policy.process(make_request(exact, at=3)).cache_read_tokens == 1024

    usage = policy.process(make_request([*exact, 1], at=4))
    # 1,025 tokens: the 8 cached blocks are read; the 1-token tail is no full block.
    assert (usage.cache_read_tokens, usage.cache_write_total, usage.uncached_input_tokens) == (
        1024,
        0,
        1,
    )


def test_a_match_shorter_than_the_minimum_is_no_hit() -> None:
    policy = openai_like()
    policy.process(make_request(run(1024, 0), at=0))
    usage = policy.process(make_request(run(896, 0) + run(1104, 9000), at=1))
    # 896 tokens (7 blocks) match, under 1,024: read 0. The 2,000-token prompt has 15 full
    # blocks; 15 - 7 = 8 are new: 1,024 written; 2,000 - 1,024 = 976 uncached.
    assert usage.cache_read_tokens == 0
    assert usage.cache_write_total == 1024
    assert usage.uncached_input_tokens == 976


def test_hits_round_down_to_the_increment_past_the_minimum() -> None:
    assert round_hit(1023, 1024, 128) == 0
    assert round_hit(1024, 1024, 128) == 1024
    assert round_hit(1151, 1024, 128) == 1024  # 127 past the minimum: no full step
    assert round_hit(1152, 1024, 128) == 1152
    # Matching in 64-token blocks: 1,216 tokens match (19 blocks); 1,024 + 128 = 1,152.
    policy = openai_like(block_size=64)
    prompt = run(1216, 0)
    policy.process(make_request(prompt, at=0))
    usage = policy.process(make_request([*prompt, *run(100, 7000)], at=1))
    assert usage.cache_read_tokens == 1152


def test_ttl_expires_exactly_on_the_boundary_without_refresh() -> None:
    policy = openai_like(ttl_seconds=300, refresh_on_hit=False)
    prompt = run(1024, 0)
    policy.process(make_request(prompt, at=0.0))  # alive for t < 300
    assert policy.process(make_request(prompt, at=200.0)).cache_read_tokens == 1024
    assert policy.process(make_request(prompt, at=299.999)).cache_read_tokens == 1024
    # The hit at 200 did not refresh: at t = 300 the entry is gone (and is rewritten).
    usage = policy.process(make_request(prompt, at=300.0))
    assert (usage.cache_read_tokens, usage.cache_write_total) == (0, 1024)


def test_a_hit_refreshes_the_lifetime_when_the_contract_says_so() -> None:
    policy = openai_like(ttl_seconds=300, refresh_on_hit=True)
    prompt = run(1024, 0)
    policy.process(make_request(prompt, at=0.0))
    assert policy.process(make_request(prompt, at=200.0)).cache_read_tokens == 1024
    # Refreshed at 200: alive for t < 500.
    assert policy.process(make_request(prompt, at=499.0)).cache_read_tokens == 1024
    # Refreshed at 499: alive for t < 799; at exactly 799 it is gone.
    assert policy.process(make_request(prompt, at=799.0)).cache_read_tokens == 0


def test_capacity_evicts_least_recently_used_and_deepest_blocks_first() -> None:
    policy = openai_like(min_tokens=0, increment=None, capacity_blocks=12)
    a, b = run(1024, 0), run(1024, 10_000)
    policy.process(make_request(a, at=0))  # 8 blocks
    policy.process(make_request(b, at=1))  # 8 more: 4 of a's must go, deepest first
    # a keeps blocks 0..3: 512 tokens read (no minimum here).
    assert policy.process(make_request(a, at=2)).cache_read_tokens == 512
    # That request rewrote a's blocks 4..7, evicting the 4 least recently used: b's
    # deepest (b at t=1 is older than a at t=2). b now matches 4 blocks.
    assert policy.process(make_request(b, at=3)).cache_read_tokens == 512


def test_scope_isolation() -> None:
    policy = openai_like()
    prompt = run(2048, 0)
    policy.process(make_request(prompt, at=0, scope="org-a"))
    assert policy.process(make_request(prompt, at=1, scope="org-b")).cache_read_tokens == 0
    assert policy.process(make_request(prompt, at=2, scope="org-a")).cache_read_tokens == 2048
