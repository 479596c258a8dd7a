"""Partition keys under which a partitioned replay gives exactly the single-process answer.

Why it is exact: every cache entry our policies keep is a prefix of some prompt, keyed by a
chain that starts from the namespace seed (model, scope; ``blocks.namespace_seed``). A hit
therefore needs the same namespace and an equal prefix at least as long as the smallest
entry the policy can hold (its *unit*). Two requests whose (namespace, first ``unit``
tokens) differ can never touch the same entry, so a cache without a shared capacity limit
(every hosted, TTL-based contract) evolves independently per key: replaying each key's
requests alone, in the same relative order, gives each request the same usage.

Units per policy (the smallest prefix any hit or entry can have):

- automatic (and the Gemini implicit cache): one block, and no hit below ``min_tokens``:
  ``min(block_size, max(min_tokens, 1))``;
- explicit breakpoints and Gemini cached content: an entry is a prefix of at least
  ``min_tokens`` tokens (and at least 1);
- vLLM: one block; radix: 1 token.
- Block-level traces (Mooncake): an entry is at least one trace block, and equal block ids
  are the only evidence of an equal prefix, so the key is the first block id.

Where a shared capacity couples the keys (an LRU pool: vLLM or radix with a block budget,
or a provider policy given ``capacity_blocks``) an eviction in one partition changes
another's hits; ``partition_unit`` raises ``CoupledCacheError`` for those (route them per
engine replica instead: ``cachecast.simulator.routing``).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable, Sequence

from cachecast.core.errors import BadInputError
from cachecast.simulator.blocks import KEY_BYTES, namespace_seed, token_bytes
from cachecast.simulator.misses import HISTORY_BLOCK_TOKENS
from cachecast.simulator.policies import (
    AutomaticPrefixCache,
    CachePolicy,
    ExplicitBreakpointCache,
    ImplicitPlusCachedContent,
    NoCache,
    RadixPrefixCache,
    VllmPrefixCache,
)
from cachecast.simulator.policies.vllm import UNBOUNDED_BLOCKS
from cachecast.simulator.types import RequestUsage
from cachecast.tokenizers.types import TokenizedRequest

PartitionKey = bytes


class CoupledCacheError(BadInputError):
    """The policy shares one capacity across partitions: partitioning would be approximate."""


def partition_unit(policy: CachePolicy) -> int:
    """Tokens of the shortest prefix that any entry or hit of ``policy`` implies equal."""
    if isinstance(policy, AutomaticPrefixCache):
        if policy.cache.capacity is not None:
            raise CoupledCacheError(
                "an automatic cache with capacity_blocks evicts across partitions"
            )
        return min(policy.block_size, max(policy.min_tokens, 1))
    if isinstance(policy, ImplicitPlusCachedContent):
        implicit = partition_unit(policy.implicit)
        return min(implicit, max(policy.implicit.min_tokens, 1))
    if isinstance(policy, ExplicitBreakpointCache):
        if policy.cache.capacity is not None:
            raise CoupledCacheError("an explicit cache with a capacity evicts across partitions")
        return max(policy.min_tokens, 1)
    if isinstance(policy, VllmPrefixCache):
        if policy.num_blocks != UNBOUNDED_BLOCKS:
            raise CoupledCacheError(
                "a vLLM block pool is shared by every prefix: partitioning it is approximate;"
                " simulate one partition per engine replica (--replicas/--routing)"
            )
        return policy.block_size
    if isinstance(policy, RadixPrefixCache):
        if policy.capacity_tokens is not None:
            raise CoupledCacheError("a radix cache with a capacity evicts across partitions")
        return 1
    if isinstance(policy, NoCache):
        # Nothing is cached, so any partition is exact; the history's default opening keeps
        # the unit of a replay with other targets as theirs (``common_unit`` takes the least).
        return HISTORY_BLOCK_TOKENS
    raise CoupledCacheError(f"no partition rule is known for policy {policy.name!r}")


def common_unit(policies: Iterable[CachePolicy]) -> int:
    """A unit valid for every policy at once (the smallest), for one shared shuffle."""
    units = [partition_unit(policy) for policy in policies]
    if not units:
        raise ValueError("no policy given")
    return min(units)


def partition_key(request: TokenizedRequest, unit: int) -> PartitionKey:
    """(model, first ``unit`` tokens) of ``request``, hashed to 16 bytes.

    Every cache key starts from the policies' own seed (model and scope), so requests of
    two scopes in one partition never share an entry; the scope is left out of the key so
    that they meet in one partition all the same: explaining a miss says when the same
    prefix was seen under another scope (``simulator.misses``). A prompt shorter than
    ``unit`` can hold and hit no entry; its key is its whole prompt (any key would do).
    """
    digest = hashlib.blake2b(namespace_seed(request.model, ""), digest_size=KEY_BYTES)
    if request.tokens is not None:
        digest.update(b"t")
        digest.update(token_bytes(request.tokens[:unit]))
    elif request.block_keys:
        digest.update(b"b")
        digest.update(int(request.block_keys[0]).to_bytes(16, "little", signed=True))
    return digest.digest()


def bucket_of(key: PartitionKey, buckets: int) -> int:
    """Which of ``buckets`` shuffle buckets holds partition ``key`` (uniform: it is a hash)."""
    return int.from_bytes(key[:8], "little") % buckets


def replay_partitioned(
    requests: Sequence[TokenizedRequest],
    make_policy: Callable[[], CachePolicy],
    key: Callable[[TokenizedRequest], PartitionKey],
) -> list[RequestUsage]:
    """In-process reference of the partitioned replay: one fresh policy per partition.

    ``requests`` must already be in replay order; the usages come back in that order. With
    ``key`` = ``partition_key(·, partition_unit(policy))`` this equals ``usages_in_order`` on one
    policy; a key that splits requests able to share an entry loses their hits.
    """
    partitions: dict[PartitionKey, list[int]] = {}
    for position, request in enumerate(requests):
        partitions.setdefault(key(request), []).append(position)
    usages: list[RequestUsage | None] = [None] * len(requests)
    for positions in partitions.values():
        policy = make_policy()
        for position in positions:
            usage = policy.process(requests[position])
            usage.check()
            usages[position] = usage
    return [usage for usage in usages if usage is not None]
