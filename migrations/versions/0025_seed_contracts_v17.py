"""Seed contracts-v17.json: OpenAI's legacy Completions models (gpt-3.5-turbo-instruct,
davinci-002, babbage-002).

Revision ID: 0025_seed_contracts_v17
Revises: 0024_seed_contracts_v16
Create Date: 2026-12-05

Public recordings call OpenAI's ``/v1/completions`` with ``gpt-3.5-turbo-instruct`` (and its
snapshot ``gpt-3.5-turbo-instruct-0914``), ``davinci-002`` and ``babbage-002``; the catalog had
only Azure's gpt-3.5-turbo-instruct (contracts-v13). Each gets one version on provider openai
from its launch (2023-09-18; 2023-08-22 for the two base models) to its shutdown on
2026-09-28, of mode ``none``: OpenAI's prompt caching covers gpt-4o and newer models. Prices
are OpenAI's model pages' ($1.50 / $2.00 and $2 / $2 per MTok) or, for babbage-002, LiteLLM's
map [S]; launch dates are in ``data/lifecycle.json``; sources are in each version's notes and
in docs/contracts.md ("contracts-v17").

Rows are added exactly as revision 0006 adds its own, with origin 'seed:contracts-v17'; the
downgrade deletes them.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from runpy import run_path

revision: str = "0025_seed_contracts_v17"
down_revision: str | None = "0024_seed_contracts_v16"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# Revision 0006's seeding functions (its file name is no importable module name).
SEEDING = str(Path(__file__).with_name("0006_seed_contracts_v2.py"))


def upgrade() -> None:
    run_path(SEEDING)["seed_file"]("contracts-v17.json", "seed:contracts-v17")


def downgrade() -> None:
    run_path(SEEDING)["unseed"]("seed:contracts-v17")
