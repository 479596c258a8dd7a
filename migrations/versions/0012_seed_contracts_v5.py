"""Seed contracts-v5.json: corrections found by reconciling recorded traffic, and the models of
providers the catalog did not store that the recordings show served.

Revision ID: 0012_seed_contracts_v5
Revises: 0011_seed_contracts_v4
Create Date: 2026-12-04

Corrections (docs/contracts.md, "Adding a version": a correction starts the day after the
version it corrects, which keeps that one day): Amazon Nova's caching is explicit
(cachePoint checkpoints only bill cache reads and writes; every stored Nova version said
'both'), and DeepSeek's 64-token unit in the V4 window (2026-04-24 onwards) for
deepseek-chat, deepseek-reasoner and deepseek-v4-flash. New: mistral/mistral-large-latest,
cohere/command-a-03-2025 and command-r7b-12-2024 (no caching discount: priced at the input
price), zai/glm-4.7-flash and azure/grok-4-1-fast-non-reasoning. Each version's notes give its
sources ([S] secondary, [U] unverified).

A correction of a version that has an end (a launch version of 0011, DeepSeek's bounded V4
versions) would overlap it, so the stored version is first shortened to end where its
correction starts; the correction runs to the same end, so no day loses its contract. Open
versions are closed by the seeding itself. Rows are added exactly as revision 0006 adds its
own, with origin 'seed:contracts-v5'; the downgrade gives each shortened version its end back
and deletes the rows.
"""

from __future__ import annotations

import runpy
from collections.abc import Sequence
from importlib import resources
from pathlib import Path

import sqlalchemy as sa
from alembic import op

from cachecast.contracts.model import ContractTerms
from cachecast.contracts.serialize import loads_json, parse_document

revision: str = "0012_seed_contracts_v5"
down_revision: str | None = "0011_seed_contracts_v4"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

SEED_FILE = "contracts-v5.json"
ORIGIN = "seed:contracts-v5"


# Revision 0006's seeding (its file name is not an importable module name).
SEEDING = Path(__file__).with_name("0006_seed_contracts_v2.py")


def _seed(seed_file: str = SEED_FILE) -> list[ContractTerms]:
    text = resources.files("cachecast.contracts").joinpath("data", seed_file).read_text("utf-8")
    return parse_document(loads_json(text, seed_file), seed_file)


def shorten_corrected(versions: sa.TableClause, seed_file: str = SEED_FILE) -> None:
    """End each bounded stored version where its correction in the seed starts; refuse a
    correction that does not run to the corrected version's end. (Later correcting seeds
    call it with their own file.)"""
    connection = op.get_bind()
    for terms in _seed(seed_file):
        covering = connection.execute(
            sa.select(versions.c.id, versions.c.effective_to).where(
                versions.c.provider == terms.provider,
                versions.c.model == terms.model,
                versions.c.effective_from < terms.effective_from,
                versions.c.effective_to > terms.effective_from,
            )
        ).all()
        for row in covering:
            if row.effective_to != terms.effective_to:
                raise ValueError(
                    f"{seed_file}: {terms.provider}/{terms.model} from {terms.effective_from}"
                    f" must end where the version it corrects ends ({row.effective_to})"
                )
            connection.execute(
                versions.update()
                .where(versions.c.id == row.id)
                .values(effective_to=terms.effective_from)
            )


def upgrade() -> None:
    seeding = runpy.run_path(str(SEEDING))
    shorten_corrected(seeding["versions_table"])
    seeding["seed_file"](SEED_FILE, ORIGIN)


def restore_corrected(
    versions: sa.TableClause, seed_file: str = SEED_FILE, origin: str = ORIGIN
) -> None:
    """Give each version a correction shortened its end back (the correction's end): revision
    0006's unseed would reopen it only up to the next remaining version, across a declared
    hole such as DeepSeek's of 2026-07-24 to 2026-10-01."""
    connection = op.get_bind()
    for terms in _seed(seed_file):
        connection.execute(
            versions.update()
            .where(
                versions.c.provider == terms.provider,
                versions.c.model == terms.model,
                versions.c.effective_to == terms.effective_from,
                versions.c.origin != origin,
            )
            .values(effective_to=terms.effective_to)
        )


def downgrade() -> None:
    seeding = runpy.run_path(str(SEEDING))
    restore_corrected(seeding["versions_table"])
    seeding["unseed"](ORIGIN)
