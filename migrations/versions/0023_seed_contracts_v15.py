"""Seed contracts-v15.json: Perplexity's Sonar models, Cerebras's models and the Gemini API's
Gemini 3 Pro Preview, which recordings name and the catalog could not price.

Revision ID: 0023_seed_contracts_v15
Revises: 0022_seed_contracts_v14
Create Date: 2026-12-05

Public recordings of 2025-2026 call Perplexity (``api.perplexity.ai``: ``sonar``,
``sonar-pro``, ``sonar-reasoning``, ``sonar-reasoning-pro``, ``sonar-deep-research``) and
Cerebras (``api.cerebras.ai``: ``llama3.1-8b``, ``llama-3.3-70b``, ``qwen-3-32b``,
``gpt-oss-120b``), two providers the catalog had no contract for, and Gemini 3 Pro Preview on
the Gemini API, stored only for Vertex AI. Each gets dated versions from its launch to its
shutdown or to today. Neither Perplexity nor Cerebras prices cached prompt tokens apart, so
their versions are of mode ``none``; Perplexity's per-request search fee has no field in a
contract version and is not billed. Launch dates are in ``data/lifecycle.json``; prices and
sources are in each version's notes and in docs/contracts.md ("contracts-v15").

Rows are added exactly as revision 0006 adds its own, with origin 'seed:contracts-v15'; the
downgrade deletes them.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from runpy import run_path

revision: str = "0023_seed_contracts_v15"
down_revision: str | None = "0020_seed_contracts_v12"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# Revision 0006's seeding functions (its file name is no importable module name).
SEEDING = str(Path(__file__).with_name("0006_seed_contracts_v2.py"))


def upgrade() -> None:
    run_path(SEEDING)["seed_file"]("contracts-v15.json", "seed:contracts-v15")


def downgrade() -> None:
    run_path(SEEDING)["unseed"]("seed:contracts-v15")
