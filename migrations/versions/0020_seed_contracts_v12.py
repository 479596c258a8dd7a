"""Seed contracts-v12.json: Groq's models, priced from launch to shutdown.

Revision ID: 0020_seed_contracts_v12
Revises: 0019_seed_contracts_v11
Create Date: 2026-12-05

Recordings name Groq's models (``api.groq.com``, provider ``groq``), for which the catalog had
no contract, so every Groq request was not priced. This adds twenty-one of them with dated
versions from each model's launch to its shutdown: the Llama 3, 3.1, 3.2 vision, 3.3 and 4
models, Llama Guard 4, Mixtral 8x7B, Gemma 7B and Gemma 2 9B, Mistral Saba, DeepSeek R1 Distill
Llama 70B, Qwen3 32B, the gpt-oss models, Kimi K2 and Kimi K2 0905. Groq cached prompts only
for Kimi K2 (from 2025-08-20), Kimi K2 0905, gpt-oss-20b (from 2025-09-25), gpt-oss-120b (from
2025-10-21) and gpt-oss-safeguard-20b, with reads at half the input price and no write fee;
every other day of every model is a version of mode ``none``. API ids with a vendor prefix
(``openai/gpt-oss-120b``) are aliases of ids without it. Launch dates are in
``data/lifecycle.json``; sources are in each version's notes and in docs/contracts.md
("contracts-v12").

Rows are added exactly as revision 0006 adds its own, with origin 'seed:contracts-v12'; the
downgrade deletes them.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from runpy import run_path

revision: str = "0020_seed_contracts_v12"
down_revision: str | None = "0019_seed_contracts_v11"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# Revision 0006's seeding functions (its file name is no importable module name).
SEEDING = str(Path(__file__).with_name("0006_seed_contracts_v2.py"))


def upgrade() -> None:
    run_path(SEEDING)["seed_file"]("contracts-v12.json", "seed:contracts-v12")


def downgrade() -> None:
    run_path(SEEDING)["unseed"]("seed:contracts-v12")
