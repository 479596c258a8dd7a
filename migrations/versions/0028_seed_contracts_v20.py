"""Seed contracts-v20.json: Bedrock base models public recordings name that no contract priced
(Claude 2 and 2.1, Cohere Command R and R+, AI21 Jurassic-2 Mid and Ultra, Pixtral Large 25.02,
Writer Palmyra X4 and X5, DeepSeek-V3.1 and V3.2, the Qwen3 models, the open-weight models of
December 2025 and February 2026) and Claude 3 Sonnet's cross-Region inference profiles.

Revision ID: 0028_seed_contracts_v20
Revises: 0027_seed_contracts_v19
Create Date: 2026-12-05

Each model gets its versions from its Bedrock launch to its end of life or to today, keyed, as
the Bedrock contracts of contracts-v13 and v16, by the ``regional.`` id a base model id falls
back to (``contracts/rules.py`` ``fallback_names``); the ``us.`` / ``eu.`` inference profiles
that bill the same price are aliases. Every version is of mode ``none``: none of these models
is on Bedrock's prompt-caching list. Launch dates are in ``data/lifecycle.json``; prices and
sources are in each version's notes and in docs/contracts.md ("contracts-v20").

Rows are added exactly as revision 0006 adds its own, with origin 'seed:contracts-v20'; the
downgrade deletes them.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from runpy import run_path

revision: str = "0028_seed_contracts_v20"
down_revision: str | None = "0027_seed_contracts_v19"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# Revision 0006's seeding functions (its file name is no importable module name).
SEEDING = str(Path(__file__).with_name("0006_seed_contracts_v2.py"))


def upgrade() -> None:
    run_path(SEEDING)["seed_file"]("contracts-v20.json", "seed:contracts-v20")


def downgrade() -> None:
    run_path(SEEDING)["unseed"]("seed:contracts-v20")
