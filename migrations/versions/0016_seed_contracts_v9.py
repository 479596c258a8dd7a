"""Seed contracts-v9.json: mistral-small-latest, priced on the days recordings show it serving.

Revision ID: 0016_seed_contracts_v9
Revises: 0015_seed_contracts_v8
Create Date: 2026-12-04

Recordings of Mistral's chat completions name ``mistral-small-latest`` (a RubyLLM streamed
multi-turn cassette of 2026-04-02, another of 2025-04-27), which the catalog lacked. It gets two
dated versions: Mistral Small 3.1 (``mistral-small-2503``) from 2025-03-17 at $0.10 / $0.30 per
MTok, and Mistral Small 4 (``mistral-small-2603``) from 2026-03-16 at $0.15 / $0.60. The dated
ids ``mistral-small-2503`` (from 2025-03-17), ``mistral-small-2506`` (from 2025-06-20, both
$0.10 / $0.30) and ``mistral-small-2603`` (from 2026-03-16) are contracts of their own, their
launches in ``data/lifecycle.json``. ``mistral-large-latest`` gets a version back to Mistral
Large 3 (2025-12-02) at the stored terms. Caching terms are the stored ``mistral-large-latest``
contract's (reads 0.1x; minimum, unit and lifetime unknown). Sources are in each version's
notes and in docs/contracts.md ("contracts-v9").

Rows are added exactly as revision 0006 adds its own, with origin 'seed:contracts-v9'; the
downgrade deletes them and reopens what they closed.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from runpy import run_path

revision: str = "0016_seed_contracts_v9"
down_revision: str | None = "0015_seed_contracts_v8"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# Revision 0006's seeding functions (its file name is no importable module name).
SEEDING = str(Path(__file__).with_name("0006_seed_contracts_v2.py"))


def upgrade() -> None:
    run_path(SEEDING)["seed_file"]("contracts-v9.json", "seed:contracts-v9")


def downgrade() -> None:
    run_path(SEEDING)["unseed"]("seed:contracts-v9")
