"""Replay order, the bounded reorder window, and policies built from contract fields."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pytest

from cachecast.contracts.model import CacheMode, ContractTerms, TtlOption
from cachecast.simulator import OutOfOrderError, build_policy, policy_for_contract, usages_in_order
from cachecast.simulator.policies import (
    AutomaticPrefixCache,
    ExplicitBreakpointCache,
    ImplicitPlusCachedContent,
)

from .helpers import make_request, run


def contract(mode: CacheMode, **fields: object) -> ContractTerms:
    values: dict[str, object] = {
        "provider": "p",
        "model": "m",
        "effective_from": dt.date(2026, 1, 1),
        "verified_on": dt.date(2026, 1, 1),
        "source": "https://example.invalid/terms",
        "mode": mode,
        "min_cacheable_tokens": 1024,
        "ttl_options": (
            TtlOption(name="5m", ttl_seconds=300, refresh_on_hit=True, write_multiplier=1),
        ),
        "read_multiplier": Decimal("0.1"),
        "input_per_mtok": Decimal(1),
        "output_per_mtok": Decimal(2),
    }
    values.update(fields)
    return ContractTerms(**values)  # type: ignore[arg-type]


def test_requests_are_replayed_in_timestamp_order_within_the_window() -> None:
    policy = build_policy("vllm", block_size=16)
    prompt = run(64, 0)
    late = make_request(prompt, at=5.0, request_id="late")
    early = make_request(prompt, at=1.0, request_id="early")
    usages = list(usages_in_order([late, early], policy))
    assert [usage.request_id for usage in usages] == ["early", "late"]
    # The earlier one ran first, cold; the later one hit floor(63/16)*16 = 48 tokens.
    assert [usage.cache_read_tokens for usage in usages] == [0, 48]


def test_a_request_older_than_the_window_is_an_error_naming_its_line() -> None:
    requests = [
        make_request(run(16, 0), at=3.0, line=1),
        make_request(run(16, 0), at=4.0, line=2),
        make_request(run(16, 0), at=1.0, line=3),
    ]
    with pytest.raises(OutOfOrderError, match=r"test.jsonl:3: timestamp: "):
        list(usages_in_order(requests, build_policy("vllm"), window=1))


def test_policies_follow_the_contract_fields() -> None:
    automatic = policy_for_contract(contract(CacheMode.AUTOMATIC, increment_tokens=128))
    assert isinstance(automatic, AutomaticPrefixCache)
    assert (automatic.block_size, automatic.min_tokens, automatic.increment) == (128, 1024, 128)
    assert automatic.ttl_seconds == 300

    explicit = policy_for_contract(
        contract(CacheMode.EXPLICIT, lookback_blocks=20, max_breakpoints=4)
    )
    assert isinstance(explicit, ExplicitBreakpointCache)
    assert (explicit.lookback_blocks, explicit.max_breakpoints) == (20, 4)
    assert not explicit.implicit_last_message

    both = policy_for_contract(contract(CacheMode.BOTH, max_breakpoints=4))
    assert isinstance(both, ExplicitBreakpointCache) and both.implicit_last_message

    stored = policy_for_contract(contract(CacheMode.BOTH, storage_per_mtok_hour=Decimal("4.5")))
    assert isinstance(stored, ImplicitPlusCachedContent)


def test_unknown_kinds_and_options_are_rejected() -> None:
    with pytest.raises(ValueError, match="unknown policy kind 'lru'"):
        build_policy("lru")
    with pytest.raises(ValueError, match="unknown policy options: colour"):
        build_policy("vllm", colour="red")
