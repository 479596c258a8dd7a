"""Cache policies behind one interface, built from a kind and (optionally) a contract.

Provider policies take their parameters from contract *fields* (mode, minimum, increment,
lookback, breakpoints, TTL options, storage price), not from provider names; mechanics the
stored terms do not hold yet come from ``contracts.mechanics``, asked with the contract.
"""

from __future__ import annotations

from typing import Any

from cachecast.contracts.mechanics import caches_replies
from cachecast.contracts.model import CacheMode, ContractTerms, TtlOption
from cachecast.simulator.policies.automatic import AutomaticPrefixCache
from cachecast.simulator.policies.base import CachePolicy
from cachecast.simulator.policies.explicit import (
    OPENAI_READ_BREAKPOINTS,
    ExplicitBreakpointCache,
)
from cachecast.simulator.policies.gemini import ImplicitPlusCachedContent
from cachecast.simulator.policies.nocache import NoCache
from cachecast.simulator.policies.radix import RadixPrefixCache
from cachecast.simulator.policies.vllm import VllmPrefixCache

__all__ = [
    "ENGINE_KINDS",
    "POLICY_KINDS",
    "AutomaticPrefixCache",
    "CachePolicy",
    "ExplicitBreakpointCache",
    "ImplicitPlusCachedContent",
    "NoCache",
    "RadixPrefixCache",
    "VllmPrefixCache",
    "build_policy",
    "policy_for_contract",
]

POLICY_KINDS = ("automatic", "explicit", "gemini", "vllm", "radix", "none")
ENGINE_KINDS = ("vllm", "radix")
"""Policies of a self-hosted engine: they take no terms from a provider's contract, so they
replay under one that offers no caching as under any other."""
DEFAULT_BLOCK_WITHOUT_INCREMENT = 16
"""Matching granularity of implicit caches whose contract names no increment: hits are
counted in whole 16-token blocks (an assumption; pass ``block_size`` to change it)."""


def _ttl_options(contract: ContractTerms | None, ttl_seconds: int | None) -> list[TtlOption]:
    """The contract's TTL options; ``ttl_seconds`` overrides the default one's lifetime."""
    from decimal import Decimal

    if contract is None:
        return [
            TtlOption(
                name="default",
                ttl_seconds=ttl_seconds or 300,
                refresh_on_hit=True,
                write_multiplier=Decimal(1),
            )
        ]
    options = list(contract.ttl_options)
    if ttl_seconds is not None:
        options[0] = options[0].model_copy(update={"ttl_seconds": ttl_seconds})
    return options


def build_policy(kind: str, contract: ContractTerms | None = None, **options: Any) -> CachePolicy:
    """A policy of ``kind``; contract fields supply defaults, ``options`` override them.

    Options: block_size, capacity_blocks, ttl_seconds, min_tokens, increment,
    state_checkpoint_tokens, max_breakpoints, lookback_blocks, implicit_last_message.
    """
    known = {
        "block_size",
        "capacity_blocks",
        "ttl_seconds",
        "min_tokens",
        "increment",
        "state_checkpoint_tokens",
        "max_breakpoints",
        "lookback_blocks",
        "implicit_last_message",
    }
    unknown = set(options) - known
    if unknown:
        raise ValueError(f"unknown policy options: {', '.join(sorted(unknown))}")
    block_size: int | None = options.get("block_size")
    capacity: int | None = options.get("capacity_blocks")
    ttl_seconds: int | None = options.get("ttl_seconds")
    checkpoint: int | None = options.get("state_checkpoint_tokens")
    min_tokens: int = options.get("min_tokens", contract.min_cacheable_tokens if contract else 1024)
    increment: int | None = options.get(
        "increment", contract.increment_tokens if contract else None
    )
    if kind == "none":
        return NoCache()
    if contract is not None and not contract.offers_caching and kind not in ENGINE_KINDS:
        raise ValueError(
            f"{contract.provider}/{contract.model} (from {contract.effective_from}) offers no"
            f" prompt caching: a {kind!r} policy has nothing to take from it (use 'none')"
        )
    default_ttl = contract.default_ttl if contract else None
    write_bucket = default_ttl.name if default_ttl else "kv"
    if kind == "vllm":
        return VllmPrefixCache(
            block_size or 16,
            capacity,
            state_checkpoint_tokens=checkpoint,
            write_bucket=write_bucket,
        )
    if kind == "radix":
        tokens = None if capacity is None else capacity * (block_size or 1)
        return RadixPrefixCache(
            tokens, state_checkpoint_tokens=checkpoint, write_bucket=write_bucket
        )
    ttl_options = _ttl_options(contract, ttl_seconds)
    if kind == "automatic":
        default = ttl_options[0]
        return AutomaticPrefixCache(
            block_size=block_size or increment or DEFAULT_BLOCK_WITHOUT_INCREMENT,
            min_tokens=min_tokens,
            increment=increment,
            ttl_seconds=default.ttl_seconds if (contract or ttl_seconds) else None,
            refresh_on_hit=default.refresh_on_hit,
            ttl_name=default.name,
            capacity_blocks=capacity,
            ttl_options=ttl_options if contract is not None else (),
            caches_replies=contract is not None and caches_replies(contract),
        )
    if kind == "explicit":
        lookback = options.get("lookback_blocks", contract.lookback_blocks if contract else 20)
        openai_style = contract is not None and contract.mode is CacheMode.BOTH and lookback is None
        return ExplicitBreakpointCache(
            ttl_options=ttl_options,
            min_tokens=min_tokens,
            max_breakpoints=options.get(
                "max_breakpoints", contract.max_breakpoints if contract else 4
            ),
            lookback_blocks=lookback,
            implicit_last_message=options.get(
                "implicit_last_message",
                contract is not None and contract.mode is CacheMode.BOTH,
            ),
            capacity=capacity,
            # Breakpoints and an implicit one with no content-block lookback: GPT-5.6+.
            read_window=OPENAI_READ_BREAKPOINTS if openai_style else None,
        )
    if kind == "gemini":
        return ImplicitPlusCachedContent(
            ttl_options=ttl_options,
            min_tokens=min_tokens,
            block_size=block_size or increment or DEFAULT_BLOCK_WITHOUT_INCREMENT,
            capacity_blocks=capacity,
        )
    raise ValueError(f"unknown policy kind {kind!r} (known: {', '.join(POLICY_KINDS)})")


def policy_for_contract(contract: ContractTerms, **options: Any) -> CachePolicy:
    """The policy a contract's mode calls for.

    automatic -> automatic prefix caching; explicit -> breakpoints; both -> cached content
    billed for storage where the contract prices storage (Gemini-style), otherwise
    breakpoints plus an implicit one at the end of the latest message (GPT-5.6+); none ->
    :class:`NoCache` (no caching offered: nothing read or written; ``options`` ignored).
    """
    if not contract.offers_caching:
        return NoCache()
    if contract.mode is CacheMode.AUTOMATIC:
        return build_policy("automatic", contract, **options)
    if contract.mode is CacheMode.EXPLICIT:
        return build_policy("explicit", contract, **options)
    if contract.storage_per_mtok_hour is not None:
        return build_policy("gemini", contract, **options)
    return build_policy("explicit", contract, **options)
