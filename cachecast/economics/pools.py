"""Replaying a sized log through vLLM prefix-cache pools: the pass after the sizing's.

The replay pass holds each request as its block keys (:func:`block_key_prepare`) and checks
that it reads what the sizing pass read (:func:`check_same_request`, :func:`check_all_read`).
:func:`replay_pools` feeds every pool of a comparison each request in turn (``compare``'s
capacity curve and host tier); ``fleet`` routes the same requests over its replicas' pools
(:func:`vllm_pool`).
"""

from __future__ import annotations

from array import array
from collections.abc import Iterable
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from cachecast.core.errors import Location
from cachecast.economics.errors import ComparisonError
from cachecast.economics.sizing import Prepare, SizedLog
from cachecast.economics.timing import FloatArray
from cachecast.simulator import build_policy
from cachecast.simulator.compact import Compactor, KeyNeeds
from cachecast.simulator.policies import VllmPrefixCache
from cachecast.simulator.policies.vllm_unbounded import NeverEvictingVllmCache
from cachecast.tokenizers.types import TokenizedRequest


def block_key_prepare(block_size: int, *, prefix_tokens: int = 0) -> Prepare:
    """What the replay pass holds of each request: the chained key of every full block at
    ``block_size`` (all a vLLM pool reads, ``simulator.compact``), and its first
    ``prefix_tokens`` ids where a router hashes them (prefix-hash routing reads only those:
    ``simulator.distributed.partition.partition_key``)."""
    compact = Compactor(KeyNeeds(blocks=frozenset({block_size}))).compact
    if not prefix_tokens:
        return compact

    def keep_opening(request: TokenizedRequest) -> TokenizedRequest:
        tokens = request.tokens
        compacted = compact(request)
        if tokens is None or compacted is request:
            return compacted
        # The pools read the keys (a request's prompt_keys come first, simulator.blocks).
        return replace(compacted, tokens=tokens[:prefix_tokens])

    return keep_opening


def check_same_request(request: TokenizedRequest, index: int, sized: SizedLog) -> None:
    """The replay pass must read what the sizing pass read: the same requests, as many."""
    if index >= sized.count or request.input_tokens != sized.inputs[index]:
        raise ComparisonError(
            "the log changed between its two readings (a file written to meanwhile?)",
            location=Location(source=request.source, line=request.line),
        )


def check_all_read(count: int, sized: SizedLog) -> None:
    if count != sized.count:
        raise ComparisonError(
            f"the log changed between its two readings: {sized.count} requests, then {count}"
        )


def vllm_pool(
    block_size: int, num_blocks: int | None, state_checkpoint_tokens: int | None = None
) -> VllmPrefixCache:
    """vLLM prefix caching with ``num_blocks`` (None: unbounded; hybrid models: hits
    rounded down to the recurrent-state checkpoint interval too)."""
    options: dict[str, Any] = {"block_size": block_size, "capacity_blocks": num_blocks}
    if state_checkpoint_tokens is not None:
        options["state_checkpoint_tokens"] = state_checkpoint_tokens
    policy = build_policy("vllm", **options)
    assert isinstance(policy, VllmPrefixCache)
    return policy


@dataclass(frozen=True, slots=True)
class ReplayedPools:
    """Hit tokens of the log in every pool (by its ``num_blocks``; None: unbounded) and, for
    the pools asked for, each request's (replay order)."""

    hits: dict[int | None, int]
    cached: dict[int | None, FloatArray]


def replay_pools(
    sized: SizedLog,
    capacities: Iterable[int | None],
    *,
    per_request: Iterable[int | None] = (),
    state_checkpoint_tokens: int | None = None,
) -> ReplayedPools:
    """One more pass over the sized log through a vLLM pool of each of ``capacities``
    blocks at once (equal capacities share one pool: a pool's hits depend on nothing else).
    The window holds each request as its block keys (:func:`block_key_prepare`)."""
    pools: dict[int | None, VllmPrefixCache | NeverEvictingVllmCache] = {
        blocks: (
            vllm_pool(sized.block_size, blocks, state_checkpoint_tokens)
            if blocks is not None
            # the same hits in ~16 bytes per block instead of ~200 (policies/vllm_unbounded)
            else NeverEvictingVllmCache(
                sized.block_size, state_checkpoint_tokens=state_checkpoint_tokens
            )
        )
        for blocks in dict.fromkeys(capacities)
    }
    kept = [blocks in set(per_request) for blocks in pools]
    columns: list[array[float]] = [array("d") for _ in pools]
    totals = [0] * len(pools)
    steps = list(zip((pool.process for pool in pools.values()), kept, columns, strict=True))
    count = 0
    for request in sized.log.read(block_key_prepare(sized.block_size)):
        check_same_request(request, count, sized)
        count += 1
        for index, (process, keep, column) in enumerate(steps):
            hit = process(request).cache_read_tokens
            totals[index] += hit
            if keep:
                column.append(hit)
    check_all_read(count, sized)
    return ReplayedPools(
        hits=dict(zip(pools, totals, strict=True)),
        cached={
            blocks: np.frombuffer(column, dtype=np.float64)
            for blocks, keep, column in zip(pools, kept, columns, strict=True)
            if keep
        },
    )
