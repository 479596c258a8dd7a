"""Seed contracts-v18.json: the cache-priced models genai-prices 0.2.5 added (GPT-6.2 Astra and
Sol, Gemini 4 Carbon and Neon) and Gemini 4 Argon's price of 2026-12-01.

Revision ID: 0026_seed_contracts_v18
Revises: 0025_seed_contracts_v17
Create Date: 2026-12-05

genai-prices 0.2.5 prices four models of our providers with cache reads that the catalog
lacked: ``openai/gpt-6.2-astra`` and ``openai/gpt-6.2-sol`` (released 2026-11-17) and
``gemini-4-carbon`` (2026-11-10, introductory price to 2026-11-30, doubled from 2026-12-01) and
``gemini-4-neon`` (2026-11-18), the Gemini ones on provider google and vertex. Gemini 4 Argon's
stored versions kept its introductory $2 / $10 past 2026-11-30; a version from 2026-12-01 at
$4 / $20 (Google's own page) closes them. Launch dates are in ``data/lifecycle.json``; sources
are in each version's notes and in docs/contracts.md ("contracts-v18").

Rows are added exactly as revision 0006 adds its own, with origin 'seed:contracts-v18'; the
downgrade deletes them and reopens the Argon versions they closed.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from runpy import run_path

revision: str = "0026_seed_contracts_v18"
down_revision: str | None = "0025_seed_contracts_v17"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# Revision 0006's seeding functions (its file name is no importable module name).
SEEDING = str(Path(__file__).with_name("0006_seed_contracts_v2.py"))


def upgrade() -> None:
    run_path(SEEDING)["seed_file"]("contracts-v18.json", "seed:contracts-v18")


def downgrade() -> None:
    run_path(SEEDING)["unseed"]("seed:contracts-v18")
