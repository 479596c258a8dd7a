"""Partition keys: what they separate, the unit per policy, and what a wrong key costs."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import pytest

from cachecast.simulator import build_policy, usages_in_order
from cachecast.simulator.distributed import (
    CoupledCacheError,
    partition_key,
    partition_unit,
    replay_partitioned,
)
from cachecast.simulator.policies import AutomaticPrefixCache, CachePolicy
from cachecast.tokenizers.types import TokenizedRequest
from tests.simulator.helpers import make_request


def request(line: int, tokens: list[int], scope: str = "s1", model: str = "m1") -> TokenizedRequest:
    return make_request(
        tokens, at=float(line), scope=scope, model=model, request_id=f"r{line}", line=line
    )


def test_key_separates_models_and_looks_at_the_first_unit_only() -> None:
    base = request(1, [1, 2, 3, 4, 5, 6])
    assert partition_key(base, 4) == partition_key(request(2, [1, 2, 3, 4, 9]), 4)
    assert partition_key(base, 4) != partition_key(request(3, [1, 2, 3, 5, 5, 6]), 4)
    # Scopes share a partition (their cache entries stay apart: the seed has the scope), so
    # that a miss can be explained by the same prefix seen under another scope.
    assert partition_key(base, 4) == partition_key(request(4, base_tokens(), scope="s2"), 4)
    assert partition_key(base, 4) != partition_key(request(5, base_tokens(), model="m2"), 4)


def base_tokens() -> list[int]:
    return [1, 2, 3, 4, 5, 6]


def test_trace_requests_are_keyed_by_their_first_block_id() -> None:
    first = TokenizedRequest(
        "t", 1, "a", 0.0, "default", None, None, 1024, 1, block_keys=[7, 8], block_size=512
    )
    same_start = dataclasses.replace(first, line=2, block_keys=[7, 9])
    other_start = dataclasses.replace(first, line=3, block_keys=[6, 8])
    assert partition_key(first, 512) == partition_key(same_start, 512)
    assert partition_key(first, 512) != partition_key(other_start, 512)


def test_units_per_policy_and_coupled_caches_refused() -> None:
    # automatic: min(block 128, minimum 1024) = 128; minimum 0 counts as 1 -> min(16, 1).
    assert partition_unit(AutomaticPrefixCache(block_size=128, min_tokens=1024)) == 128
    assert partition_unit(AutomaticPrefixCache(block_size=16, min_tokens=0)) == 1
    assert partition_unit(build_policy("vllm", block_size=16)) == 16
    assert partition_unit(build_policy("radix")) == 1
    assert partition_unit(build_policy("explicit", min_tokens=2048)) == 2048
    with pytest.raises(CoupledCacheError):
        partition_unit(build_policy("vllm", block_size=16, capacity_blocks=100))
    with pytest.raises(CoupledCacheError):
        partition_unit(AutomaticPrefixCache(block_size=16, capacity_blocks=10))


# Hand-made stream for an automatic cache with 4-token blocks, a 4-token minimum, no
# increment, no expiry:
#   1: s1 [1..8]            cold                          read 0, write 8
#   2: s2 [1..8]            same text, other tenant       read 0, write 8
#   3: s1 [1,2,3,4,9,9,9,9] shares s1's first block       read 4, write 4
#   4: s1/m2 [1..8]         same text, other model        read 0, write 8
# Correct total reads: 4.
STREAM = [
    request(1, [1, 2, 3, 4, 5, 6, 7, 8]),
    request(2, [1, 2, 3, 4, 5, 6, 7, 8], scope="s2"),
    request(3, [1, 2, 3, 4, 9, 9, 9, 9]),
    request(4, [1, 2, 3, 4, 5, 6, 7, 8], model="m2"),
]


def make_policy() -> CachePolicy:
    return AutomaticPrefixCache(block_size=4, min_tokens=4)


def reads(usages: list[object]) -> list[int]:
    return [usage.cache_read_tokens for usage in usages]  # type: ignore[attr-defined]


def test_our_key_equals_single_process() -> None:
    single = list(usages_in_order(STREAM, make_policy()))
    assert reads(single) == [0, 0, 4, 0]
    unit = partition_unit(make_policy())
    ours = replay_partitioned(STREAM, make_policy, lambda r: partition_key(r, unit))
    assert ours == single


def test_a_cache_identity_ignoring_scope_or_model_double_counts() -> None:
    # With scope erased, request 2 reads request 1's 8 tokens (another tenant's cache);
    # with model erased too, request 4 reads them again: 8 + 4 + 8 = 20 instead of 4.
    def erased(r: TokenizedRequest) -> TokenizedRequest:
        return dataclasses.replace(r, scope="", model="")

    unit = partition_unit(make_policy())
    wrong = replay_partitioned(
        [erased(r) for r in STREAM], make_policy, lambda r: partition_key(r, unit)
    )
    assert reads(wrong) == [0, 8, 4, 8]
    assert sum(reads(wrong)) > sum(reads(list(usages_in_order(STREAM, make_policy()))))


def test_a_key_longer_than_the_unit_loses_hits() -> None:
    # Keyed on the whole prompt, request 3 is alone in its partition: its 4-token hit on
    # request 1's first block is lost (0 instead of 4).
    too_long: Callable[[TokenizedRequest], bytes] = lambda r: partition_key(r, 1 << 20)  # noqa: E731
    assert reads(replay_partitioned(STREAM, make_policy, too_long)) == [0, 0, 0, 0]
