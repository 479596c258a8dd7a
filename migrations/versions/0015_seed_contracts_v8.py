"""Seed contracts-v8.json: Anthropic's fast mode, priced as models of their own.

Revision ID: 0015_seed_contracts_v8
Revises: 0013_seed_contracts_v6
Create Date: 2026-12-04

A Claude Code response served in fast mode says ``"speed": "fast"`` in its usage and is read
as ``<model>-fast`` (docs/clients.md, "Format variants"). Fast mode bills a multiple of the
standard prices, so each ``<model>-fast`` gets dated versions of its own, from the day fast
mode became available for the model to its removal where documented: Opus 4.6 (launch
promotion, then 6x with a long-context tier, then 6x flat), Opus 4.7 (6x, removed
2026-07-24), Opus 4.8 (2x, removed 2026-11-30), Opus 5, Opus 5.5, Fable 5.2 and Mythos
5.2 (2x). Sources are in each version's notes and in docs/contracts.md ("contracts-v8");
launch dates in ``data/lifecycle.json``. The models are new, so rows are only added, exactly as revision 0006
adds its own (same overlap check), with origin 'seed:contracts-v8'; the downgrade deletes them.
"""

from __future__ import annotations

import runpy
from collections.abc import Sequence
from pathlib import Path
from typing import Any

revision: str = "0015_seed_contracts_v8"
down_revision: str | None = "0013_seed_contracts_v6"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

SEED_FILE = "contracts-v8.json"
ORIGIN = "seed:contracts-v8"


def _seeding() -> dict[str, Any]:
    """Revision 0006's seeding functions (its file name is no importable module name)."""
    return runpy.run_path(str(Path(__file__).with_name("0006_seed_contracts_v2.py")))


def upgrade() -> None:
    _seeding()["seed_file"](SEED_FILE, ORIGIN)


def downgrade() -> None:
    _seeding()["unseed"](ORIGIN)
