"""Seed contracts-v6.json: xAI's cache counts single tokens, not 128-token steps.

Revision ID: 0013_seed_contracts_v6
Revises: 0012_seed_contracts_v5
Create Date: 2026-12-04

Corrections (docs/contracts.md, "Adding a version": a correction starts the day after the
version it corrects, which keeps that one day) of every stored ``xai`` version with
``increment_tokens`` 128: the step came from one secondary source, while xAI's own prompt
caching pages show cached counts that are no multiple of it (98 of 125; 50 of 120, 120 of 200)
and recorded reads are off it (283, 192). ``increment_tokens`` becomes 1; every other term is
unchanged. Rows are added, and corrected bounded versions shortened, exactly as revision 0012
does (its helpers, called with this seed); the downgrade gives the ends back and deletes the
rows.
"""

from __future__ import annotations

import runpy
from collections.abc import Sequence
from pathlib import Path

revision: str = "0013_seed_contracts_v6"
down_revision: str | None = "0012_seed_contracts_v5"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

SEED_FILE = "contracts-v6.json"
ORIGIN = "seed:contracts-v6"

HERE = Path(__file__).parent
# Revision 0006's seeding and revision 0012's correction helpers (their file names are not
# importable module names).
SEEDING = HERE / "0006_seed_contracts_v2.py"
CORRECTING = HERE / "0012_seed_contracts_v5.py"


def upgrade() -> None:
    seeding = runpy.run_path(str(SEEDING))
    runpy.run_path(str(CORRECTING))["shorten_corrected"](seeding["versions_table"], SEED_FILE)
    seeding["seed_file"](SEED_FILE, ORIGIN)


def downgrade() -> None:
    seeding = runpy.run_path(str(SEEDING))
    restore = runpy.run_path(str(CORRECTING))["restore_corrected"]
    restore(seeding["versions_table"], SEED_FILE, ORIGIN)
    seeding["unseed"](ORIGIN)
