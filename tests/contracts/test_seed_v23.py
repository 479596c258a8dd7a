"""Revision 0031 (contracts-v23.json): DeepSeek's caching mechanics read in 128-token steps
from the V4 launch (2026-04-24) on.

Expected steps are what docs/predictions.md ("DeepSeek's 128-token steps") infers from the
recordings [U: DeepSeek's guide of the V4 rules, https://api-docs.deepseek.com/guides/kv_cache,
states no size]: a measurement report on deepseek-chat (V4-Flash, 2026-08-10; GitHub
jeojdi/Brevitas-Systems, docs/DEEPSEEK_CACHE_MAP.md) read 128 of a 201-token prompt resent,
896 of 1,015, 1,792 of 1,868, 1,920 of 2,024: whole 128s, where 64-token units read 192, 960,
1,856 and 1,984. So 128 tokens of step and minimum from 2026-04-24; before it, V3's guide
(https://api-docs.deepseek.com/news/news0802): "The cache system uses 64 tokens as a storage
unit; content less than 64 tokens will not be cached", 64 and 64."""

from __future__ import annotations

import datetime as dt
import sqlite3
from pathlib import Path
from runpy import run_path

import pytest

from cachecast.contracts import ContractStore
from cachecast.contracts.history import history_gaps
from cachecast.core import db

TODAY = dt.date(2026, 12, 5)
REVISION = "0031_seed_contracts_v23"
V4 = dt.date(2026, 4, 24)


@pytest.mark.parametrize(
    ("provider", "model", "day"),
    [
        # DeepSeek's own names, on the V4 launch day, in the V4 window and today.
        ("deepseek", "deepseek-chat", V4),
        ("deepseek", "deepseek-chat", dt.date(2026, 6, 8)),
        ("deepseek", "deepseek-chat", dt.date(2026, 10, 1)),
        ("deepseek", "deepseek-reasoner", V4),
        ("deepseek", "deepseek-reasoner", dt.date(2026, 6, 10)),
        ("deepseek", "deepseek-v4-flash", V4),
        ("deepseek", "deepseek-v4-flash", dt.date(2026, 8, 10)),
        ("deepseek", "deepseek-v4-flash", dt.date(2026, 10, 1)),
        ("deepseek", "deepseek-v4-flash", TODAY),
        ("deepseek", "deepseek-v4-flash-vision-exp", TODAY),
        ("deepseek", "deepseek-v4-pro", TODAY),
        ("deepseek", "deepseek-v3.2", TODAY),
        ("deepseek", "deepseek-v3.1-terminus", TODAY),
        ("deepseek", "deepseek-v3", TODAY),
        ("deepseek", "deepseek-r1", TODAY),
        ("deepseek", "deepseek-coder", V4),
        ("deepseek", "deepseek-coder", TODAY),
        # Alibaba's DeepSeek V4-Flash: mechanics taken from deepseek/deepseek-v4-flash.
        ("alibaba", "deepseek-v4-flash", V4),
        ("alibaba", "deepseek-v4-flash-0731", TODAY),
    ],
)
def test_from_v4_the_step_and_minimum_are_128(
    migrated_db_url: str, provider: str, model: str, day: dt.date
) -> None:
    terms = ContractStore(migrated_db_url).as_of(provider, model, day)
    assert (terms.increment_tokens, terms.min_cacheable_tokens) == (128, 128)
    assert "docs/predictions.md" in terms.notes
    assert "[U" in terms.notes


@pytest.mark.parametrize(
    ("model", "day"),
    [
        ("deepseek-chat", dt.date(2024, 8, 2)),
        ("deepseek-chat", dt.date(2026, 4, 23)),
        ("deepseek-reasoner", dt.date(2026, 4, 23)),
        ("deepseek-v3.2", dt.date(2026, 1, 10)),
        ("deepseek-coder", dt.date(2024, 9, 1)),
        ("deepseek-coder", dt.date(2026, 4, 23)),
    ],
)
def test_before_v4_the_64_token_unit_stands(migrated_db_url: str, model: str, day: dt.date) -> None:
    terms = ContractStore(migrated_db_url).as_of("deepseek", model, day)
    assert (terms.increment_tokens, terms.min_cacheable_tokens) == (64, 64)


def test_deepseek_coder_is_split_on_the_v4_launch(migrated_db_url: str) -> None:
    # Its version of 2024-08-02 ran to 2026-12-03 across the launch: the V4 days are their own
    # version now, the earlier days keep theirs.
    spans = [
        (terms.effective_from, terms.effective_to, terms.increment_tokens)
        for terms in ContractStore(migrated_db_url).history("deepseek", "deepseek-coder")
    ]
    assert spans == [
        (dt.date(2024, 8, 2), V4, 64),
        (V4, dt.date(2026, 12, 3), 128),
        (dt.date(2026, 12, 3), None, 128),
    ]


def test_alibaba_deepseek_v4_pro_keeps_qwen_mechanics(migrated_db_url: str) -> None:
    # Its mechanics were taken from alibaba/qwen3.7-max (256-token minimum), not DeepSeek's.
    terms = ContractStore(migrated_db_url).as_of("alibaba", "deepseek-v4-pro", TODAY)
    assert (terms.increment_tokens, terms.min_cacheable_tokens) == (None, 256)


def test_no_history_gap_anywhere(migrated_db_url: str) -> None:
    summary = history_gaps(ContractStore(migrated_db_url).list(), TODAY)
    assert summary.gaps == []


TABLES = (
    "contract_version",
    "contract_ttl_option",
    "contract_alias",
    "contract_price_tier",
    "contract_inferred_field",
    "contract_off_peak",
)


def _rows(url: str) -> dict[str, list[tuple[object, ...]]]:
    """Every row of every contract table, ids included."""
    with sqlite3.connect(url.removeprefix("sqlite:///")) as connection:
        return {
            table: sorted(connection.execute(f"SELECT * FROM {table}").fetchall(), key=repr)
            for table in TABLES
        }


def _versions(rows: dict[str, list[tuple[object, ...]]]) -> dict[object, tuple[object, ...]]:
    return {row[0]: row for row in rows["contract_version"]}


def test_the_round_trip_gives_back_the_rows_exactly(sqlite_url: str) -> None:
    migration = Path(__file__).parents[2] / "migrations" / "versions" / f"{REVISION}.py"
    previous = str(run_path(str(migration))["down_revision"])
    db.upgrade(sqlite_url, previous)
    db.get_engine(sqlite_url).dispose()
    before = _rows(sqlite_url)
    db.upgrade(sqlite_url, REVISION)
    db.get_engine(sqlite_url).dispose()
    after = _rows(sqlite_url)
    old, new = _versions(before), _versions(after)
    # (provider, model, from) of the rows changed in place, the one added and the one
    # shortened; nothing removed.
    changed = sorted(
        (str(row[1]), str(row[2]), str(row[3])) for key, row in new.items() if old.get(key) != row
    )
    assert set(old) <= set(new)
    assert changed == [
        ("alibaba", "deepseek-v4-flash", "2026-04-24"),
        ("alibaba", "deepseek-v4-flash-0731", "2026-04-24"),
        ("deepseek", "deepseek-chat", "2026-04-24"),
        ("deepseek", "deepseek-chat", "2026-04-25"),
        ("deepseek", "deepseek-chat", "2026-10-01"),
        ("deepseek", "deepseek-coder", "2024-08-02"),
        ("deepseek", "deepseek-coder", "2026-04-24"),
        ("deepseek", "deepseek-coder", "2026-12-03"),
        ("deepseek", "deepseek-r1", "2026-12-03"),
        ("deepseek", "deepseek-reasoner", "2026-04-24"),
        ("deepseek", "deepseek-reasoner", "2026-04-25"),
        ("deepseek", "deepseek-v3", "2026-12-03"),
        ("deepseek", "deepseek-v3.1-terminus", "2026-12-03"),
        ("deepseek", "deepseek-v3.2", "2026-12-03"),
        ("deepseek", "deepseek-v4-flash", "2026-04-24"),
        ("deepseek", "deepseek-v4-flash", "2026-04-25"),
        ("deepseek", "deepseek-v4-flash", "2026-10-01"),
        ("deepseek", "deepseek-v4-flash", "2026-10-02"),
        ("deepseek", "deepseek-v4-flash-vision-exp", "2026-12-03"),
        ("deepseek", "deepseek-v4-pro", "2026-12-03"),
    ]
    # Child rows (TTL options, aliases, off-peak prices ...) of the corrected rows untouched.
    for table in TABLES[1:]:
        assert [row for row in before[table] if row not in after[table]] == []
    db.downgrade(sqlite_url, previous)
    db.get_engine(sqlite_url).dispose()
    assert _rows(sqlite_url) == before
