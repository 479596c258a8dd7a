"""Seed contracts-v19.json: Gemini on Vertex AI before 2.5 (1.0 Pro, 1.5 Pro, 1.5 Flash, 2.0 Flash,
2.0 Flash-Lite), from each model's first day to its Vertex retirement.

Revision ID: 0027_seed_contracts_v19
Revises: 0026_seed_contracts_v18
Create Date: 2026-12-05

The catalog had ``vertex`` contracts for Gemini 2.5 and later only. Public test recordings of
2024-2025 call Vertex with ``gemini-pro``, ``gemini-1.0-pro-00x``, ``gemini-1.5-pro-00x``,
``gemini-1.5-flash-00x``, ``gemini-2.0-flash-001`` and ``gemini-2.0-flash-lite-001``; these are
aliases of the five new contracts. Days without context caching are mode ``none`` versions;
Vertex billed Gemini 1.0 and 1.5 per character, so their token prices are the equivalents
(say the notes). Launch dates are in ``data/lifecycle.json``; sources are in each version's
notes and in docs/contracts.md ("contracts-v19").

Rows are added exactly as revision 0006 adds its own, with origin 'seed:contracts-v19'; the
downgrade deletes them.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from runpy import run_path

revision: str = "0027_seed_contracts_v19"
down_revision: str | None = "0026_seed_contracts_v18"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# Revision 0006's seeding functions (its file name is no importable module name).
SEEDING = str(Path(__file__).with_name("0006_seed_contracts_v2.py"))


def upgrade() -> None:
    run_path(SEEDING)["seed_file"]("contracts-v19.json", "seed:contracts-v19")


def downgrade() -> None:
    run_path(SEEDING)["unseed"]("seed:contracts-v19")
