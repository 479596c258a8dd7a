"""Seed contracts-v13.json: models recordings name that the catalog could not price, and two
corrections of what was stored.

Revision ID: 0021_seed_contracts_v13
Revises: 0020_seed_contracts_v12
Create Date: 2026-12-05

Public recordings of 2023-2025 name models the catalog lacked: Google's Gemini 1.0 Pro
(``gemini-pro``), Meta's Llama models on Bedrock (``meta.llama2-13b-chat-v1``...) and Azure
OpenAI's GPT-3.5 Turbo and GPT-4 (``gpt-35-turbo``...); also Claude Instant 1.2 (Anthropic
API and Bedrock), xAI's ``grok-beta`` and ``grok-2-1212`` and Mistral's ``mistral-tiny``
(``open-mistral-7b``). Each gets dated versions from its launch, of mode ``none`` where the
provider cached no prompts for it. ``gpt-4o-2024-08-06``, until now an alias of ``gpt-4o``,
gets a contract of its own so that the days before 2024-10-01 carry the snapshot's price, not
the pointer's. Launch dates are in ``data/lifecycle.json``; prices and sources are in each
version's notes and in docs/contracts.md ("contracts-v13").

Two corrections, explained in the same section:

- Cohere's ``command-r7b-12-2024`` and ``command-a-03-2025`` were stored from 2026-12-03 as
  mode ``explicit`` (read 1x), the way to say "no caching" before mode ``none`` existed. The
  seed adds a version of mode ``none`` from the day after, which ends them as a new version
  always ends the open one.
- ``google/gemini-1.5-flash`` was shut down on 2025-09-24 (contracts-v11), yet a price-map
  import (origin 'seed:contracts-v3') stored it again from 2026-12-03 with Gemini 2.5's caching
  mode ``both``: a retired model came back. No later version can end that row without pricing
  days on which the model did not serve, so this revision deletes exactly that row and its
  children (provider, model, start and origin must all match); no other row changes. The
  downgrade writes it back from contracts-v3.json.

Rows are added exactly as revision 0006 adds its own, with origin 'seed:contracts-v13'; the
downgrade deletes them.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from pathlib import Path
from runpy import run_path
from typing import Any

import sqlalchemy as sa
from alembic import op

revision: str = "0021_seed_contracts_v13"
down_revision: str | None = "0020_seed_contracts_v12"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# Revision 0006's seeding functions (its file name is no importable module name).
SEEDING = str(Path(__file__).with_name("0006_seed_contracts_v2.py"))

# The one stored version that brought a retired model back (docstring above).
RETIRED_RETURN = ("google", "gemini-1.5-flash", dt.date(2026, 12, 3), "seed:contracts-v3")
RETIRED_RETURN_FILE = "contracts-v3.json"


def upgrade() -> None:
    seeding = run_path(SEEDING)
    seeding["seed_file"]("contracts-v13.json", "seed:contracts-v13")
    _delete_retired_return(seeding)


def downgrade() -> None:
    seeding = run_path(SEEDING)
    seeding["unseed"]("seed:contracts-v13")
    _restore_retired_return(seeding)


def _retired_return_ids(seeding: dict[str, Any]) -> sa.Select[Any]:
    versions = seeding["versions_table"]
    provider, model, start, origin = RETIRED_RETURN
    return sa.select(versions.c.id).where(
        versions.c.provider == provider,
        versions.c.model == model,
        versions.c.effective_from == start,
        versions.c.origin == origin,
    )


def _delete_retired_return(seeding: dict[str, Any]) -> None:
    ids = _retired_return_ids(seeding)
    # Children first: SQLite enforces the foreign keys only when the pragma is on.
    for child in seeding["CHILDREN"]:
        op.execute(child.delete().where(child.c.contract_id.in_(ids)))
    versions = seeding["versions_table"]
    op.execute(versions.delete().where(versions.c.id.in_(ids)))


def _restore_retired_return(seeding: dict[str, Any]) -> None:
    """Write the deleted row back as contracts-v3.json has it, unless it is there."""
    connection = op.get_bind()
    if connection.execute(_retired_return_ids(seeding)).first() is not None:
        return
    provider, model, start, origin = RETIRED_RETURN
    (terms,) = [
        terms
        for terms in seeding["_read_seed"](RETIRED_RETURN_FILE)
        if (terms.provider, terms.model, terms.effective_from) == (provider, model, start)
    ]
    seeding["insert_version"](connection, terms, origin)
