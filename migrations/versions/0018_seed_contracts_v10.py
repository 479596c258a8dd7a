"""Seed contracts-v10.json: OpenAI's and Anthropic's models back to their launches.

Revision ID: 0018_seed_contracts_v10
Revises: 0017_contract_mode_none
Create Date: 2026-12-05

Recordings of 2023-2026 name models the catalog lacked (``gpt-3.5-turbo``, ``gpt-4``, their
dated snapshots, GPT-4 Turbo, ``claude-2.1``) or name them on days before their first
stored version (``gpt-4o`` from 2024-05-13, ``gpt-4o-mini``, ``o1-preview``, ``o1-mini``,
Claude 3 Opus, Sonnet and Haiku, Claude 3.5 Sonnet from 2024-06-20, and two models a price
map first priced on 2026-12-03: ``gpt-5.2-chat-latest`` from 2025-12-11 and
``claude-fable-5-2`` from 2026-11-09). Each gets dated
versions from its launch: mode ``none`` (revision 0017) on the days its provider offered
no prompt caching for it, the caching terms from the day caching began (OpenAI 2024-10-01,
Anthropic 2024-08-14), price changes and pointer moves as versions of their own, and a last
version ending at the provider's shutdown day where a source gives one. Where a model was
shut down before the version a price map stored on 2026-12-03, ``data/lifecycle.json``
declares the days between as not served. Sources are in each version's notes and in
docs/contracts.md ("contracts-v10").

Rows are added exactly as revision 0006 adds its own, with origin 'seed:contracts-v10'; the
downgrade deletes them and reopens what they closed.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from runpy import run_path

revision: str = "0018_seed_contracts_v10"
down_revision: str | None = "0017_contract_mode_none"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# Revision 0006's seeding functions (its file name is no importable module name).
SEEDING = str(Path(__file__).with_name("0006_seed_contracts_v2.py"))


def upgrade() -> None:
    run_path(SEEDING)["seed_file"]("contracts-v10.json", "seed:contracts-v10")


def downgrade() -> None:
    run_path(SEEDING)["unseed"]("seed:contracts-v10")
