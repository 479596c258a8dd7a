"""Seed contracts-v25.json: OpenRouter's free variant of Llama 3.3 8B Instruct, at $0.

Revision ID: 0033_seed_contracts_v25
Revises: 0032_seed_contracts_v24
Create Date: 2026-12-05

Recordings of calls to openrouter.ai name models no vendor's own API serves under that name:
``meta-llama/llama-3.3-8b-instruct:free`` is OpenRouter's ``:free`` variant, which OpenRouter
documents as free of charge ("Free variants provide access to models without cost",
https://openrouter.ai/docs/features/variants/free). This revision seeds it under the provider
``openrouter``, mode none, $0 / $0 per MTok, from 2025-05-14 (the model page's "Created May
14, 2025"), open-ended. Sources are in the version's notes and in docs/contracts.md
("contracts-v25").

Rows are added exactly as revision 0006 adds its own, with origin 'seed:contracts-v25'; the
downgrade deletes them.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from runpy import run_path

revision: str = "0033_seed_contracts_v25"
down_revision: str | None = "0032_seed_contracts_v24"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# Revision 0006's seeding functions (its file name is no importable module name).
SEEDING = str(Path(__file__).with_name("0006_seed_contracts_v2.py"))


def upgrade() -> None:
    run_path(SEEDING)["seed_file"]("contracts-v25.json", "seed:contracts-v25")


def downgrade() -> None:
    run_path(SEEDING)["unseed"]("seed:contracts-v25")
