"""Seed contracts-v11.json: Gemini 1.5 from launch to shutdown; Mistral models from their cards.

Revision ID: 0019_seed_contracts_v11
Revises: 0018_seed_contracts_v10
Create Date: 2026-12-05

Recordings of 2024-2025 name ``gemini-1.5-flash`` and ``gemini-1.5-pro``, which the catalog
priced only from 2026-12-03 (a price-map import) or not at all. Each gets dated versions from
its billing start in the Gemini API (2024-05-30) to its shutdown (2025-09-24): the days before
context caching launched (2024-06-27) are mode "none" versions (no prompt caching offered),
then explicit caching (cachedContents, reads at 0.25x plus storage per MTok per hour), with
the price cuts of 2024-08-12 (1.5 Flash) and 2024-10-01 (1.5 Pro) as new versions and the
>128K prompt tier on every version. ``gemini-1.5-flash-8b`` is priced from 2024-10-03 to its
shutdown. Dated ids (-001, -002, -latest) are aliases. Launch dates and the span the
gemini-1.5-flash id was not served (2025-09-24 to the stored version of 2026-12-03) are in
``data/lifecycle.json``; sources in each version's notes and in docs/contracts.md
("contracts-v11").

Mistral models recordings name that the catalog lacked (mistral-medium-latest, codestral-latest,
open-mistral-nemo, Pixtral, Magistral, Ministral and their dated ids) are priced from Mistral's
own model cards (release, retirement, price), with the caching terms of mistral-small-latest.
Cohere's Command R, R+, their 08-2024 updates, R7B and A get versions of mode "none" from
their release (Cohere offers no prompt caching), the last two up to their stored versions.
xAI's Grok 3 models (from 2025-04-09) and grok-code-fast-1 (from 2025-08-26) are priced up to
their stored versions with contracts-v6's caching terms; Kimi K2 0711, 0905 and Thinking from
their releases with their stored terms.

Rows are added exactly as revision 0006 adds its own, with origin 'seed:contracts-v11'; the
downgrade deletes them and reopens what they closed.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from runpy import run_path

revision: str = "0019_seed_contracts_v11"
down_revision: str | None = "0018_seed_contracts_v10"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# Revision 0006's seeding functions (its file name is no importable module name).
SEEDING = str(Path(__file__).with_name("0006_seed_contracts_v2.py"))


def upgrade() -> None:
    run_path(SEEDING)["seed_file"]("contracts-v11.json", "seed:contracts-v11")


def downgrade() -> None:
    run_path(SEEDING)["unseed"]("seed:contracts-v11")
