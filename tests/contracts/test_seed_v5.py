"""Revision 0012 (contracts-v5.json): corrections found by reconciling recorded traffic, and
the first versions of models of providers the catalog did not store.

Expected terms are the figures the versions' sources state (their notes and docs/contracts.md
name them): AWS's Nova caching page and the Nova guide (cost savings only at explicit
cachePoint checkpoints), DeepSeek's 64-token unit, Mistral's "billed at 10% of the standard
input token price", LiteLLM 1.110.2's prices for Mistral, Cohere, Z.ai and Azure's grok."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import sqlalchemy as sa

from cachecast.contracts import ContractStore
from cachecast.contracts.model import CacheMode
from cachecast.core import db

NOVA = (
    "amazon.nova-2-lite-v1:0",
    "us.amazon.nova-2-lite-v1:0",
    "eu.amazon.nova-2-lite-v1:0",
    "apac.amazon.nova-2-lite-v1:0",
    "amazon.nova-lite-v1:0",
    "amazon.nova-micro-v1:0",
    "amazon.nova-pro-v1:0",
    "amazon.nova-premier-v1:0",
    "amazon.nova-2-pro-preview-20251202-v1:0",
)


def test_nova_caches_only_at_checkpoints_from_the_day_after_each_stored_start(
    migrated_db_url: str,
) -> None:
    store = ContractStore(migrated_db_url)
    today = dt.date(2026, 12, 4)
    for model in NOVA:
        assert store.as_of("bedrock", model, today).mode is CacheMode.EXPLICIT, model
    # Nova 2 Lite's launch version [2025-12-02, 2026-10-01): its first day keeps 'both'
    # (a correction cannot share a start); from 2025-12-03 to 2026-10-01 explicit.
    lite = "us.amazon.nova-2-lite-v1:0"
    assert store.as_of("bedrock", lite, dt.date(2025, 12, 2)).mode is CacheMode.BOTH
    corrected = store.as_of("bedrock", lite, dt.date(2026, 8, 19))
    assert corrected.mode is CacheMode.EXPLICIT
    assert (corrected.effective_from, corrected.effective_to) == (
        dt.date(2025, 12, 3),
        dt.date(2026, 10, 1),
    )
    # Everything else as stored: 1,000-token minimum (AWS: "1K"), $0.33 in / $2.75 out
    # (the us. profile's price), reads 0.25x.
    assert corrected.min_cacheable_tokens == 1000
    assert (corrected.input_per_mtok, corrected.read_multiplier) == (
        Decimal("0.33"),
        Decimal("0.25"),
    )


def test_deepseek_v4_window_keeps_the_64_token_unit(sqlite_url: str) -> None:
    # Revision 0012's own correction; contracts-v23 (revision 0031) sets 128 since
    # (tests/contracts/test_seed_v23.py).
    db.upgrade(sqlite_url, "0012_seed_contracts_v5")
    store = ContractStore(sqlite_url)
    # The recordings are of 2026-06-08 (deepseek-chat) and 2026-06-10 (deepseek-reasoner).
    for model in ("deepseek-chat", "deepseek-reasoner", "deepseek-v4-flash"):
        terms = store.as_of("deepseek", model, dt.date(2026, 6, 10))
        assert (terms.min_cacheable_tokens, terms.increment_tokens) == (64, 64), model
        assert terms.read_multiplier == Decimal("0.02"), model  # unchanged: $0.0028 / $0.14
    # deepseek-chat's hole (not served 2026-07-24 .. 2026-10-01) stays a hole.
    assert store.as_of("deepseek", "deepseek-chat", dt.date(2026, 7, 23)).effective_to == (
        dt.date(2026, 7, 24)
    )


def test_providers_new_to_the_catalog(migrated_db_url: str) -> None:
    store = ContractStore(migrated_db_url)
    day = dt.date(2026, 12, 4)
    mistral = store.as_of("mistral", "mistral-large-latest", day)
    # $0.50 in / $1.50 out; cached tokens "billed at 10% of the standard input token price".
    assert (mistral.input_per_mtok, mistral.output_per_mtok, mistral.read_multiplier) == (
        Decimal("0.5"),
        Decimal("1.5"),
        Decimal("0.1"),
    )
    assert mistral.mode is CacheMode.AUTOMATIC
    # Cohere prices no cached input: nothing cached (explicit, no control), reads at 1x. That
    # version keeps its first day; contracts-v13 corrects it to mode none from 2026-12-04.
    for model, prices in (
        ("command-a-03-2025", (Decimal("2.5"), Decimal("10"))),
        ("command-r7b-12-2024", (Decimal("0.0375"), Decimal("0.15"))),
    ):
        cohere = store.as_of("cohere", model, dt.date(2026, 12, 3))
        assert (cohere.input_per_mtok, cohere.output_per_mtok) == prices
        assert (cohere.mode, cohere.read_multiplier) == (CacheMode.EXPLICIT, Decimal("1"))
    # Z.ai GLM-4.7-Flash is free: $0 input, cached input and output.
    glm = store.as_of("zai", "glm-4.7-flash", day)
    assert (glm.input_per_mtok, glm.output_per_mtok) == (Decimal("0"), Decimal("0"))
    # Azure's grok: $0.20 / $0.50 (Azure's retail list), cached input $0.05 (genai-prices):
    # 0.05 / 0.20 = 0.25x.
    grok = store.as_of("azure", "grok-4-1-fast-non-reasoning", day)
    assert (grok.input_per_mtok, grok.output_per_mtok, grok.read_multiplier) == (
        Decimal("0.2"),
        Decimal("0.5"),
        Decimal("0.25"),
    )


def _spans(url: str) -> list[tuple[object, ...]]:
    engine = db.get_engine(url)
    with engine.connect() as connection:
        rows = connection.execute(
            sa.text(
                "SELECT provider, model, effective_from, effective_to, mode, increment_tokens"
                " FROM contract_version ORDER BY provider, model, effective_from"
            )
        ).all()
    return [tuple(row) for row in rows]


def test_the_downgrade_gives_back_every_end_it_shortened(sqlite_url: str) -> None:
    db.upgrade(sqlite_url, "0011_seed_contracts_v4")
    before = _spans(sqlite_url)
    db.upgrade(sqlite_url)
    assert _spans(sqlite_url) != before
    db.downgrade(sqlite_url, "0011_seed_contracts_v4")
    # deepseek-chat's V4 version ends on 2026-07-24 again (not at the next version, 10-01).
    assert _spans(sqlite_url) == before
    db.get_engine(sqlite_url).dispose()
