"""Seed contracts-v29.json: Cohere's legacy Command models from the day their names existed.

Revision ID: 0039_seed_contracts_v29
Revises: 0038_seed_contracts_v28
Create Date: 2026-12-05

Recordings of Cohere's v1 chat name ``command`` (a langtrace cassette of 2024-04-26), which
the catalog lacked. ``command``, ``command-light``, ``command-nightly`` and
``command-light-nightly`` get one version each from 2023-04-26, the day Cohere's changelog
renamed ``command-xlarge``, ``command-medium`` and their nightly builds to them, at the price
maps' $1.00 / $2.00 and $0.30 / $0.60 per MTok [S], mode ``none`` (Cohere offers no prompt
caching). None has a shutdown day in our sources, so all stay open. What is unverified (the
price on the days before 2024-03-14, the nightly ids' own prices) is in each version's notes
and in docs/contracts.md ("contracts-v29"); the launches are in ``data/lifecycle.json``.

Rows are added exactly as revision 0006 adds its own, with origin 'seed:contracts-v29'; the
downgrade deletes them and reopens what they closed (nothing: no stored version of these
models exists before).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from runpy import run_path

revision: str = "0039_seed_contracts_v29"
down_revision: str | None = "0038_seed_contracts_v28"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# Revision 0006's seeding functions (its file name is no importable module name).
SEEDING = str(Path(__file__).with_name("0006_seed_contracts_v2.py"))


def upgrade() -> None:
    run_path(SEEDING)["seed_file"]("contracts-v29.json", "seed:contracts-v29")


def downgrade() -> None:
    run_path(SEEDING)["unseed"]("seed:contracts-v29")
