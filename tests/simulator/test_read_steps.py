"""DeepSeek's 128-token read steps under the V4 rules (docs/predictions.md, "DeepSeek's
128-token steps"), worked by hand from the figures a measurement report recorded on
deepseek-chat (V4-Flash) on 2026-08-10: identical prompts resent at once."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

from cachecast.contracts.mechanics import read_step
from cachecast.contracts.model import CacheMode, ContractTerms, TtlOption
from cachecast.simulator.policies import build_policy

from .helpers import make_request, run


def deepseek(effective_from: dt.date, increment: int | None) -> ContractTerms:
    """DeepSeek's automatic cache as the store holds it: no write premium, 0.02x reads."""
    return ContractTerms(
        provider="deepseek",
        model="deepseek-chat",
        effective_from=effective_from,
        verified_on=dt.date(2026, 12, 5),
        source="https://api-docs.deepseek.com/guides/kv_cache",
        mode=CacheMode.AUTOMATIC,
        min_cacheable_tokens=0 if increment is None else increment,
        increment_tokens=increment,
        ttl_options=[
            TtlOption(name="best-effort", ttl_seconds=3600, refresh_on_hit=True, write_multiplier=1)
        ],
        read_multiplier=Decimal("0.02"),
        input_per_mtok=Decimal("0.14"),
        output_per_mtok=Decimal("0.28"),
    )


def resent_read(contract: ContractTerms, length: int) -> int:
    """The read of a prompt of ``length`` tokens sent a second time, a second later."""
    policy = build_policy("automatic", contract)
    prompt = run(length, 0)
    policy.process(make_request(prompt, at=0))
    return policy.process(make_request(prompt, at=1)).cache_read_tokens


def test_v4_reads_whole_128_token_steps() -> None:
    # Stored step 64 (contracts-v5's correction) or none: read in 128-token steps.
    for stored in (64, None):
        v4 = deepseek(dt.date(2026, 4, 25), stored)
        assert read_step(v4) == 128
        # 201 -> 128 (64-token units: 192); 1,015 -> 896 = 7 x 128 (64: 960); 1,868 ->
        # 1,792 = 14 x 128 (64: 1,856); 2,024 -> 1,920 = 15 x 128 (64: 1,984).
        assert [resent_read(v4, n) for n in (201, 1015, 1868, 2024)] == [128, 896, 1792, 1920]
        # 98 tokens: no whole step, nothing read (the report's 98-token prompt read 0).
        assert resent_read(v4, 98) == 0


def test_before_v4_the_stored_64_token_units_stand() -> None:
    v32 = deepseek(dt.date(2025, 9, 29), 64)
    assert read_step(v32) is None
    assert [resent_read(v32, n) for n in (201, 1015)] == [192, 960]  # 3 x 64, 15 x 64


def test_an_explicit_increment_overrides_the_step() -> None:
    # build_policy's options win over the contract and its mechanics: 64-token steps asked.
    policy = build_policy("automatic", deepseek(dt.date(2026, 4, 25), 64), increment=64)
    prompt = run(201, 0)
    policy.process(make_request(prompt, at=0))
    assert policy.process(make_request(prompt, at=1)).cache_read_tokens == 192
