"""Hand-computed cases for the vllm policy (block ids follow vLLM's free-queue rules)."""

from __future__ import annotations

import pytest

from cachecast.simulator.policies.vllm import VllmPrefixCache
from cachecast.simulator.policies.vllm_free_queue import FreeBlockQueue

from .helpers import make_request, run


def hit(policy: VllmPrefixCache, tokens: list[int], **kwargs: object) -> int:
    return policy.process(make_request(tokens, **kwargs)).cache_read_tokens  # type: ignore[arg-type]


def test_a_fully_cached_prompt_recomputes_its_last_block() -> None:
    policy = VllmPrefixCache(16)
    a = run(64, 0)
    assert hit(policy, a) == 0
    # Resend of 64 tokens: at most 63 may hit, in whole blocks: floor(63/16)*16 = 48.
    assert hit(policy, a) == 48
    # One more token: floor(64/16)*16 = 64, all four cached blocks.
    assert hit(policy, [*a, 7]) == 64


def test_peek_predicts_the_hit_without_changing_anything() -> None:
    policy = VllmPrefixCache(16, 5)
    a = run(48, 0)
    hit(policy, a)
    before = policy.free_block_order()
    # floor(47/16) = 2 blocks; 48 + 1 tokens: all 3 cached blocks; too long (5 blocks): 0.
    assert policy.peek_hit_tokens(make_request(a)) == 32
    assert policy.peek_hit_tokens(make_request([*a, 1])) == 48
    assert policy.peek_hit_tokens(make_request(run(65, 0))) == 0
    assert policy.free_block_order() == before
    assert hit(policy, [*a, 1]) == 48


def test_divergence_inside_a_block_stops_the_hit_at_that_block() -> None:
    policy = VllmPrefixCache(16)
    a = run(64, 0)
    hit(policy, a)
    # Shares 40 tokens: blocks 0 and 1 (32 tokens) match, block 2 differs at token 40.
    assert hit(policy, a[:40] + run(30, 900)) == 32


def test_writes_are_the_newly_cached_full_blocks() -> None:
    policy = VllmPrefixCache(16)
    usage = policy.process(make_request(run(40, 0)))
    # 40 tokens: 2 full blocks cached (32 written), the 8-token tail is not.
    assert usage.cache_write_tokens == {"kv": 32}
    assert usage.uncached_input_tokens == 8


def test_lru_eviction_frees_the_deepest_block_first() -> None:
    # 5 blocks = null block + 4 usable (ids 1..4), free queue [1, 2, 3, 4].
    policy = VllmPrefixCache(16, 5)
    d = run(48, 0)
    hit(policy, d)  # takes 1, 2, 3; frees tail first: queue [4, 3, 2, 1]
    assert policy.free_block_order() == [4, 3, 2, 1]
    # 17 tokens need 2 blocks: 4 and 3 (block 3 held d's deepest block, now evicted).
    hit(policy, run(17, 500))
    # d plus one token: blocks 0 and 1 still cached (ids 1 and 2), block 2 was evicted.
    assert hit(policy, [*d, 1]) == 32


def test_least_recently_used_request_is_evicted_first() -> None:
    policy = VllmPrefixCache(16, 5)
    a, b, c = run(32, 0), run(32, 100), run(32, 200)
    hit(policy, a)  # blocks 1, 2 -> queue [3, 4, 2, 1]
    hit(policy, b)  # blocks 3, 4 -> queue [2, 1, 4, 3]
    hit(policy, c)  # reuses 2 and 1: a is evicted, b survives
    assert hit(policy, [*b, 9]) == 32
    assert hit(policy, [*a, 9]) == 0


def test_a_prompt_larger_than_the_pool_is_not_admitted_and_changes_nothing() -> None:
    policy = VllmPrefixCache(16, 3)  # 2 usable blocks = 32 tokens
    a = run(32, 0)
    hit(policy, a)
    before = policy.free_block_order()
    usage = policy.process(make_request(run(33, 0)))  # needs 3 blocks
    assert (usage.cache_read_tokens, usage.uncached_input_tokens) == (0, 33)
    assert policy.free_block_order() == before
    # a is still cached: its resend may hit floor(31/16) = 1 block (2 blocks fit the pool).
    assert hit(policy, a) == 16


def test_scope_and_model_isolation() -> None:
    policy = VllmPrefixCache(16)
    a = run(64, 0)
    hit(policy, a)
    assert hit(policy, a, scope="another-org") == 0
    assert hit(policy, a, model="another-model") == 0
    assert hit(policy, a) == 48


def test_hybrid_state_checkpoints_round_the_hit_down() -> None:
    policy = VllmPrefixCache(16, state_checkpoint_tokens=64)
    a = run(150, 0)
    hit(policy, a)
    # floor(149/16) = 9 blocks = 144 tokens; states exist every 64 tokens: 128.
    assert hit(policy, a) == 128


def test_too_small_a_pool_is_rejected() -> None:
    with pytest.raises(ValueError, match="null block"):
        VllmPrefixCache(16, 1)


def test_free_queue_runs_split_and_move_in_vllm_order() -> None:
    queue = FreeBlockQueue(1, 1)  # no never-used blocks: everything lives in runs
    key = {block: bytes([block]) * 16 for block in (3, 5, 7, 9)}  # the key each holds
    # A request freed chain [5, 3, 9] (depth order): vLLM frees deepest first, so the
    # queue reads 9, 3, 5.
    queue.append_runs([5, 3, 9], [], [key[5], key[3], key[9]], [])
    assert list(queue) == [9, 3, 5]
    # A hit on the first block only (5) splits the run: 9, 3 stay in front, and after
    # a request with one new block 7 the back reads (7 then the hit 5): 9, 3, 7, 5.
    pieces = queue.remove_hits([5])
    assert pieces == [(None, 0, 1)]  # not hit whole: the run stays where it was
    assert list(queue) == [9, 3]
    queue.append_runs([7], [5], [key[5], key[7]], pieces)
    assert list(queue) == [9, 3, 7, 5]
    # Hitting [5, 7], the whole second run, moves that run object as one piece.
    pieces = queue.remove_hits([5, 7])
    assert len(pieces) == 1 and pieces[0][0] is not None and pieces[0][1:] == (0, 2)
    assert list(queue) == [9, 3]
    queue.append_runs([], [5, 7], [key[5], key[7]], pieces)
    assert list(queue) == [9, 3, 7, 5]
    # A hit on 9 alone: 9 is the deeper block of the first run (chain [3, 9]), not its
    # first, so the general path removes it; 3 stays first in the queue.
    pieces = queue.remove_hits([9])
    assert list(queue) == [3, 7, 5]
    queue.append_runs([], [9], [key[9]], pieces)
    assert list(queue) == [3, 7, 5, 9]
    assert len(queue) == 4
    # Taking blocks hands back the keys they held, in the same order.
    assert queue.take(4) == ([3, 7, 5, 9], [key[3], key[7], key[5], key[9]])


def test_a_session_idle_an_hour_is_forgotten_by_the_shortcut_and_still_hits() -> None:
    # The per-session shortcut (a session's previous blocks) keeps only sessions used in
    # the last hour of log time; forgetting one must not change its hit. Unbounded pool:
    # nothing is evicted, so A's 4 cached blocks all hit when it resumes with 2 more
    # blocks (limit floor(95/16) = 5 blocks, 4 cached): 64 tokens.
    policy = VllmPrefixCache(16)
    a, b = run(64, 0), run(64, 1000)
    assert hit(policy, a, at=0.0, session="A") == 0
    assert hit(policy, b, at=3601.0, session="B") == 0
    assert [key[2] for key in policy._last_run] == ["B"]  # A idle past the hour: gone
    assert hit(policy, [*a, *run(32, 5000)], at=3700.0, session="A") == 64
    assert [key[2] for key in policy._last_run] == ["B", "A"]


def test_a_full_pool_keeps_its_key_table_the_size_of_a_fresh_copy() -> None:
    """A full pool evicts one key per key cached; CPython would regrow the dict's table to
    twice what its live keys need, the policy copies it back (same keys, same hits)."""
    import sys

    policy = VllmPrefixCache(16, 2001)  # 2,000 usable blocks
    for index in range(400):  # 400 distinct prompts of 20 blocks: the pool churns
        assert hit(policy, run(320, index * 320), at=float(index), line=index + 1) == 0
    table = policy._block_of_key
    assert len(table) == policy.cached_block_count() == 2000
    assert sys.getsizeof(table) <= sys.getsizeof(dict(table))
    # The last 100 prompts are still cached: resending the newest hits 19 blocks.
    assert hit(policy, run(320, 399 * 320), at=400.0, line=401) == 19 * 16


def test_a_trace_whose_ids_are_not_chained_is_looked_up_block_by_block() -> None:
    from .helpers import make_trace_request

    # Block size 1; the second prompt shares ids 0 and 1, then has 12 where the first had 2,
    # then the same 33: vLLM's walk stops at the first miss (12), so 2 blocks hit (limit
    # (4 - 1) // 1 = 3), whatever the later equal id.
    policy = VllmPrefixCache(1)
    first = policy.process(make_trace_request([0, 1, 2, 33], 4, block_size=1))
    assert first.cache_read_tokens == 0
    second = policy.process(make_trace_request([0, 1, 12, 33], 4, block_size=1, line=2))
    assert second.cache_read_tokens == 2
