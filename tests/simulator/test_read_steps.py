"""DeepSeek's 128-token read steps under the V4 rules (docs/predictions.md, "DeepSeek's
128-token steps"; stored by contracts-v23), worked by hand from the figures a measurement
report recorded on deepseek-chat (V4-Flash) on 2026-08-10: identical prompts resent at once.
The steps come from the contracts a real SQLite file migrated to head holds."""

from __future__ import annotations

import datetime as dt

from cachecast.contracts import ContractStore
from cachecast.contracts.model import ContractTerms
from cachecast.simulator.policies import build_policy

from .helpers import make_request, run


def resent_read(contract: ContractTerms, length: int, **options: int) -> int:
    """The read of a prompt of ``length`` tokens sent a second time, a second later."""
    policy = build_policy("automatic", contract, **options)
    prompt = run(length, 0)
    policy.process(make_request(prompt, at=0))
    return policy.process(make_request(prompt, at=1)).cache_read_tokens


def test_v4_reads_whole_128_token_steps(migrated_db_url: str) -> None:
    store = ContractStore(migrated_db_url)
    # The measured model on the report's day, deepseek-chat's V4 days (contracts-v5 stored 64
    # there) and deepseek-v4-flash today (stored none before contracts-v23).
    for model, day in (
        ("deepseek-v4-flash", dt.date(2026, 8, 10)),
        ("deepseek-chat", dt.date(2026, 6, 8)),
        ("deepseek-v4-flash", dt.date(2026, 12, 5)),
    ):
        v4 = store.as_of("deepseek", model, day)
        # 201 -> 128 (64-token units: 192); 1,015 -> 896 = 7 x 128 (64: 960); 1,868 ->
        # 1,792 = 14 x 128 (64: 1,856); 2,024 -> 1,920 = 15 x 128 (64: 1,984).
        assert [resent_read(v4, n) for n in (201, 1015, 1868, 2024)] == [128, 896, 1792, 1920]
        # 98 tokens: no whole step, nothing read (the report's 98-token prompt read 0).
        assert resent_read(v4, 98) == 0


def test_before_v4_the_stored_64_token_units_stand(migrated_db_url: str) -> None:
    # deepseek-chat's V3.2 version (from 2025-09-29) and its last V4-eve day.
    store = ContractStore(migrated_db_url)
    for day in (dt.date(2026, 1, 10), dt.date(2026, 4, 23)):
        v32 = store.as_of("deepseek", "deepseek-chat", day)
        assert [resent_read(v32, n) for n in (201, 1015)] == [192, 960]  # 3 x 64, 15 x 64


def test_an_explicit_increment_overrides_the_step(migrated_db_url: str) -> None:
    # build_policy's options win over the contract: 64-token steps asked.
    v4 = ContractStore(migrated_db_url).as_of("deepseek", "deepseek-chat", dt.date(2026, 6, 8))
    assert resent_read(v4, 201, increment=64) == 192
