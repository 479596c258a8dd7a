"""Seed contracts-v16.json: Bedrock base models that public recordings name and the catalog
could not price (Claude 3 Haiku, Mistral AI, AI21 Jamba 1.5, Cohere Command, Amazon Titan Text).

Revision ID: 0024_seed_contracts_v16
Revises: 0023_seed_contracts_v15
Create Date: 2026-12-05

Bedrock recordings of 2025 (InvokeModel and Converse cassettes) call
``anthropic.claude-3-haiku-20240307-v1:0``, ``mistral.mistral-7b-instruct-v0:2``,
``ai21.jamba-1-5-mini-v1:0``, ``cohere.command-text-v14`` and
``amazon.titan-text-express-v1``, base model ids no stored contract named. Each of them, and
the Bedrock siblings of the same families (Mixtral 8x7B, Mistral Large 24.02 / 24.07, Mistral
Small 24.02, Jamba 1.5 Large, Command Light, Titan Text Lite and Premier) and five more base
ids of LiteLLM's map (DeepSeek-R1, Llama 4 Maverick and Scout, gpt-oss-120b and -20b), gets
one dated version from its Bedrock launch to its end of life or to today, keyed by the
``regional.`` id a base model id falls back to (as the Llama contracts of contracts-v13).
None of these models is on Bedrock's prompt-caching list, so every version is of mode
``none``. Prices are AWS's on-demand us-east-1 prices as the price maps give them [S]; launch
dates are in ``data/lifecycle.json``; sources are in each version's notes and in
docs/contracts.md ("contracts-v16").

Rows are added exactly as revision 0006 adds its own, with origin 'seed:contracts-v16'; the
downgrade deletes them.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from runpy import run_path

revision: str = "0024_seed_contracts_v16"
down_revision: str | None = "0023_seed_contracts_v15"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# Revision 0006's seeding functions (its file name is no importable module name).
SEEDING = str(Path(__file__).with_name("0006_seed_contracts_v2.py"))


def upgrade() -> None:
    run_path(SEEDING)["seed_file"]("contracts-v16.json", "seed:contracts-v16")


def downgrade() -> None:
    run_path(SEEDING)["unseed"]("seed:contracts-v16")
