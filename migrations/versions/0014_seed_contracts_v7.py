"""Seed contracts-v7.json: deepseek-chat's history before V3.2-Exp.

Revision ID: 0014_seed_contracts_v7
Revises: 0013_seed_contracts_v6
Create Date: 2026-12-04

The stored ``deepseek/deepseek-chat`` began on 2025-09-29 (V3.2-Exp), so a log of 2024 or
2025 (public cassettes record deepseek-chat on 2025-03-14) met "no contract before". Four
versions run from the day DeepSeek's API cached prompts (2024-08-02) to that start, each with
its DeepSeek source in its notes (docs/contracts.md, contracts-v7): the V2/V2.5 prices kept by
V3's launch promotion, V3's standard prices from 2025-02-08, the night-time discount from
2025-02-26 (off-peak prices), V3.1's list from 2025-09-05. ``lifecycle.json`` dates the
model's first priced day 2024-08-02, so ``contracts audit`` sees no gap.

The versions are bounded and earlier than every stored one: nothing is closed or shortened.
Rows, and the off-peak prices, are added exactly as revision 0009 adds its own (its upgrade,
run with this seed's file and origin); the downgrade deletes them.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType

revision: str = "0014_seed_contracts_v7"
down_revision: str | None = "0013_seed_contracts_v6"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

SEED_FILE = "contracts-v7.json"
ORIGIN = "seed:contracts-v7"


def _seeding_with_off_peak() -> ModuleType:
    """Revision 0009 (its file name is not an importable module name), set to seed this
    revision's file under this revision's origin."""
    path = Path(__file__).with_name("0009_seed_contracts_v3.py")
    spec = importlib.util.spec_from_file_location("cachecast_migration_0009", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    module.SEED_FILE = SEED_FILE
    module.ORIGIN = ORIGIN
    return module


def upgrade() -> None:
    _seeding_with_off_peak().upgrade()


def downgrade() -> None:
    _seeding_with_off_peak().downgrade()
