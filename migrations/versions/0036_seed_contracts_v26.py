"""Seed contracts-v26.json: Gemini 2.5 preview snapshots of the Gemini API, on their dates.

Revision ID: 0036_seed_contracts_v26
Revises: 0035_batch_terms_v2
Create Date: 2026-12-05

Recordings of 2025 name Gemini preview ids the catalog lacked, so their requests were not
priced: ``gemini-2.5-pro-preview-03-25``, ``-05-06`` and ``-06-05`` (from the release dates of
Google's deprecations page to their shutdown on 2025-12-02, $1.25 / $10 per MTok, over 200k
tokens $2.50 / $15), ``gemini-2.5-flash-preview-04-17`` and ``-05-20`` ($0.15 / $0.60, the
non-thinking output price: a contract carries one output price) and
``gemini-2.5-flash-lite-preview-06-17`` ($0.10 / $0.40). Caching terms are the GA family's,
listed as inferred. Sources and what is secondary [S] or unverified [U] are in each version's
notes and in docs/contracts.md ("contracts-v26").

Rows are added exactly as revision 0006 adds its own, with origin 'seed:contracts-v26'; the
downgrade deletes them.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from runpy import run_path

revision: str = "0036_seed_contracts_v26"
down_revision: str | None = "0035_batch_terms_v2"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# Revision 0006's seeding functions (its file name is no importable module name).
SEEDING = str(Path(__file__).with_name("0006_seed_contracts_v2.py"))


def upgrade() -> None:
    run_path(SEEDING)["seed_file"]("contracts-v26.json", "seed:contracts-v26")


def downgrade() -> None:
    run_path(SEEDING)["unseed"]("seed:contracts-v26")
