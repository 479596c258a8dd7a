"""Migrations 0001/0002 on a fresh SQLite file: upgrade, downgrade, upgrade again."""

from __future__ import annotations

import datetime as dt
import sqlite3
from pathlib import Path
from typing import Any

import sqlalchemy as sa

from cachecast.contracts import ContractStore
from cachecast.core import db
from tests.contracts.builders import terms
from tests.contracts.conftest import SCHEMA_REVISION, SEED_REVISION, table_counts

CONTRACT_TABLES = {
    "contract_version",
    "contract_ttl_option",
    "contract_alias",
    "contract_price_tier",
}


def _tables(url: str) -> set[str]:
    return set(sa.inspect(db.get_engine(url)).get_table_names()) & CONTRACT_TABLES


def _expected_counts(seed_entries: list[dict[str, Any]]) -> dict[str, int]:
    # Counted from the JSON file itself: one version row per entry, one child row per
    # TTL option, alias and price tier listed in it.
    return {
        "contract_version": len(seed_entries),
        "contract_ttl_option": sum(len(entry["ttl_options"]) for entry in seed_entries),
        "contract_alias": sum(len(entry["aliases"]) for entry in seed_entries),
        "contract_price_tier": sum(len(entry["long_context_tiers"]) for entry in seed_entries),
    }


def test_upgrade_downgrade_upgrade_on_a_fresh_file(
    sqlite_url: str, seed_entries: list[dict[str, Any]]
) -> None:
    expected = _expected_counts(seed_entries)
    assert expected["contract_version"] >= 30  # the brief asks for nine providers' contracts

    db.upgrade(sqlite_url, SEED_REVISION)
    assert _tables(sqlite_url) == CONTRACT_TABLES
    assert table_counts(sqlite_url) == expected

    db.downgrade(sqlite_url, SCHEMA_REVISION)
    assert _tables(sqlite_url) == CONTRACT_TABLES
    assert table_counts(sqlite_url) == dict.fromkeys(CONTRACT_TABLES, 0)

    db.downgrade(sqlite_url, "base")
    assert _tables(sqlite_url) == set()

    db.upgrade(sqlite_url, SEED_REVISION)
    assert table_counts(sqlite_url) == expected
    assert db.current_revision(sqlite_url) == SEED_REVISION
    db.get_engine(sqlite_url).dispose()


def test_seed_downgrade_removes_exactly_the_seeded_rows(seeded_url: str) -> None:
    store = ContractStore(seeded_url)
    store.add_version(terms())  # acme/acme-1: one TTL option, no alias, no price tier
    # A seeded version closed by a later user version is still a seeded row.
    later_gpt4o = store.as_of("openai", "gpt-4o", dt.date(2026, 1, 1)).model_copy(
        update={"effective_from": dt.date(2026, 11, 1), "source": "https://example.test/later"}
    )
    store.add_version(later_gpt4o)

    db.downgrade(seeded_url, SCHEMA_REVISION)

    # Left: the two versions added through the store (1 TTL option each, no alias on acme;
    # gpt-4o's copy keeps the seed's two aliases).
    assert table_counts(seeded_url) == {
        "contract_version": 2,
        "contract_ttl_option": 2,
        "contract_alias": 2,
        "contract_price_tier": 0,
    }
    assert store.known_models() == [("acme", "acme-1"), ("openai", "gpt-4o")]


def test_money_is_stored_as_exact_text_on_sqlite(seeded_url: str) -> None:
    path = Path(seeded_url.removeprefix("sqlite:///"))
    with sqlite3.connect(path) as connection:
        rows = connection.execute(
            "SELECT v.read_multiplier, typeof(v.read_multiplier), t.write_multiplier,"
            " typeof(t.write_multiplier) FROM contract_version v JOIN contract_ttl_option t"
            " ON t.contract_id = v.id WHERE v.provider = 'anthropic'"
            " AND v.model = 'claude-sonnet-4-5' ORDER BY t.position"
        ).fetchall()
    # Anthropic: reads 0.1x, writes 1.25x (5m) and 2x (1h) -- reference section 3.
    assert rows == [("0.1", "text", "1.25", "text"), ("0.1", "text", "2", "text")]
