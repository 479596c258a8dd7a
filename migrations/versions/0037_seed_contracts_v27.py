"""Seed contracts-v27.json: open-weight models on Together AI, Fireworks AI, SambaNova Cloud,
Cloudflare Workers AI and DeepInfra.

Revision ID: 0037_seed_contracts_v27
Revises: 0036_seed_contracts_v26
Create Date: 2026-12-05

Recordings of calls to these hosts (their API hosts are named in ``logs.http.endpoints``) were
unpriced because no contract covered the provider: Together's
``meta-llama/Llama-3.3-70B-Instruct-Turbo``, SambaNova's ``Meta-Llama-3.3-70B-Instruct``,
Workers AI's ``@cf/meta/llama-3.3-70b-instruct-fp8-fast``. Their most used serverless models
are added, the host's API id as the alias (a contract id has no '/'). Fireworks documents
automatic prompt caching with cached input at 50% of the input price unless a model lists its
own cached rate; the other hosts list no cached price for these models (mode none). Prices
come from the hosts' pricing pages where our sources hold them, else from LiteLLM's and
genai-prices' maps [S]; first days are the models' public releases where no source gives the
host's own [U]. Sources and flags are in each version's notes and in docs/contracts.md
("contracts-v27").

Rows are added exactly as revision 0006 adds its own, with origin 'seed:contracts-v27'; the
downgrade deletes them.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from runpy import run_path

revision: str = "0037_seed_contracts_v27"
down_revision: str | None = "0036_seed_contracts_v26"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# Revision 0006's seeding functions (its file name is no importable module name).
SEEDING = str(Path(__file__).with_name("0006_seed_contracts_v2.py"))


def upgrade() -> None:
    run_path(SEEDING)["seed_file"]("contracts-v27.json", "seed:contracts-v27")


def downgrade() -> None:
    run_path(SEEDING)["unseed"]("seed:contracts-v27")
