"""Seed contracts-v4.json: launch versions of models whose stored history began after the
day recorded traffic shows them serving.

Revision ID: 0011_seed_contracts_v4
Revises: 0010_job_owner
Create Date: 2026-12-04

xai/grok-4.3 from its API launch (2026-04-30) and Bedrock's amazon.nova-2-lite-v1:0 with its
geographic profiles from their launch (2025-12-02), up to the first stored version of each
(2026-10-01, the day our first reference read them): the stored terms carried back, with the
launch sources in ``data/lifecycle.json`` and each version's notes ([S]: secondary sources;
[U]: prices at launch not in our sources). Rows are added exactly as revision 0006 adds its own
(same overlap check), with origin 'seed:contracts-v4'; the downgrade deletes them.
"""

from __future__ import annotations

import runpy
from collections.abc import Sequence
from pathlib import Path
from typing import Any

revision: str = "0011_seed_contracts_v4"
down_revision: str | None = "0010_job_owner"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

SEED_FILE = "contracts-v4.json"
ORIGIN = "seed:contracts-v4"


def _seeding() -> dict[str, Any]:
    """Revision 0006's seeding functions (its file name is no importable module name)."""
    return runpy.run_path(str(Path(__file__).with_name("0006_seed_contracts_v2.py")))


def upgrade() -> None:
    _seeding()["seed_file"](SEED_FILE, ORIGIN)


def downgrade() -> None:
    _seeding()["unseed"](ORIGIN)
