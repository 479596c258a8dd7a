"""Seed contracts-v23.json: DeepSeek's cache reads in 128-token steps under the V4 rules.

Revision ID: 0031_seed_contracts_v23
Revises: 0030_seed_contracts_v22
Create Date: 2026-12-05

Every contract version with DeepSeek's caching mechanics in force from the V4 launch
(2026-04-24) on stored a 64-token unit (contracts-v1, -v3, -v5) or none (0 / none): DeepSeek's
guide of the V4 rules gives no size, and the recordings made under them read in 128-token
steps (docs/predictions.md, "DeepSeek's 128-token steps" [U]). This revision sets
``increment_tokens`` 128 and ``min_cacheable_tokens`` max(stored, 128) on them: every
``deepseek`` version from 2026-04-24 (deepseek-chat, -reasoner, -v4-flash, -v4-flash-vision-exp,
-v4-pro, -v3.2, -v3.1-terminus, -v3, -r1, -coder) and Alibaba's ``deepseek-v4-flash`` and
``deepseek-v4-flash-0731``, whose mechanics were taken from deepseek/deepseek-v4-flash as of
2026-10-01. Versions before 2026-04-24 keep 64. Alibaba's ``deepseek-v4-pro`` (mechanics taken
from alibaba/qwen3.7-max) and Bedrock's DeepSeek models (mode none) are not DeepSeek's mechanics.

The correction changes three columns of stored rows in place (``min_cacheable_tokens``,
``increment_tokens`` and ``notes``, which says why); rows keep their ids, origins and child
rows (TTL options, aliases, tiers, inferred fields, off-peak prices). Deleting and reseeding
them, as revision 0029 did, would have to rewrite the off-peak rows too and reopen versions
between them on the way back. Every other column of a corrected row must equal the file's
version, or the upgrade stops. deepseek-coder's version of 2024-08-02 runs across the V4
launch: it now ends on 2026-04-24 (as revision 0012 shortens a version it corrects) and the
file's version from 2026-04-24 to 2026-12-03 is added with origin 'seed:contracts-v23'. The
downgrade deletes that version, gives the shortened one its end back, and writes the three
columns of each corrected row back as the packaged file of its origin has them.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from runpy import run_path
from typing import Any

import sqlalchemy as sa
from alembic import op

from cachecast.contracts.model import ContractTerms

revision: str = "0031_seed_contracts_v23"
down_revision: str | None = "0030_seed_contracts_v22"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

SEED_FILE = "contracts-v23.json"
ORIGIN = "seed:contracts-v23"

# Revision 0006's seeding functions (its file name is no importable module name).
SEEDING = str(Path(__file__).with_name("0006_seed_contracts_v2.py"))

CORRECTED = ("min_cacheable_tokens", "increment_tokens", "notes")
"""The columns this revision changes in a stored row."""

UNCHANGED = (
    "effective_to",
    "verified_on",
    "source",
    "mode",
    "lookback_blocks",
    "max_breakpoints",
    "read_multiplier",
    "storage_per_mtok_hour",
    "scope",
    "reported_input_includes_cached",
    "input_per_mtok",
    "output_per_mtok",
)
"""The columns a corrected row must already hold as the file's version has them."""


def _column_value(terms: ContractTerms, column: str) -> Any:
    value = getattr(terms, column)
    return value.value if column == "mode" else value


def _stored(seeding: dict[str, Any], terms: ContractTerms) -> Any:
    """The stored row that starts on the file version's day, or None."""
    versions = seeding["versions_table"]
    return (
        op.get_bind()
        .execute(
            sa.select(versions).where(
                versions.c.provider == terms.provider,
                versions.c.model == terms.model,
                versions.c.effective_from == terms.effective_from,
            )
        )
        .first()
    )


def upgrade() -> None:
    seeding = run_path(SEEDING)
    versions = seeding["versions_table"]
    connection = op.get_bind()
    for terms in seeding["_read_seed"](SEED_FILE):
        where = f"{SEED_FILE}: {terms.provider}/{terms.model} from {terms.effective_from}"
        row = _stored(seeding, terms)
        if row is None:
            _split(seeding, terms, where)
            continue
        for column in UNCHANGED:
            if getattr(row, column) != _column_value(terms, column):
                raise ValueError(
                    f"{where}: field {column!r} is {_column_value(terms, column)!r}, the stored"
                    f" version has {getattr(row, column)!r} (a correction changes only"
                    f" {', '.join(CORRECTED)})"
                )
        connection.execute(
            versions.update()
            .where(versions.c.id == row.id)
            .values({column: getattr(terms, column) for column in CORRECTED})
        )


def _split(seeding: dict[str, Any], terms: ContractTerms, where: str) -> None:
    """End the stored version that covers ``terms``' first day there and add ``terms``,
    which must run to that version's end."""
    versions = seeding["versions_table"]
    connection = op.get_bind()
    covering = connection.execute(
        sa.select(versions.c.id, versions.c.effective_to).where(
            versions.c.provider == terms.provider,
            versions.c.model == terms.model,
            versions.c.effective_from < terms.effective_from,
            versions.c.effective_to > terms.effective_from,
        )
    ).all()
    if len(covering) != 1 or covering[0].effective_to != terms.effective_to:
        raise ValueError(
            f"{where}: field 'effective_from' starts no stored version and must fall inside one"
            f" that ends on {terms.effective_to}"
        )
    if terms.off_peak is not None:
        raise ValueError(f"{where}: field 'off_peak': a split version carries none")
    connection.execute(
        versions.update()
        .where(versions.c.id == covering[0].id)
        .values(effective_to=terms.effective_from)
    )
    seeding["insert_version"](connection, terms, ORIGIN)


def downgrade() -> None:
    seeding = run_path(SEEDING)
    versions = seeding["versions_table"]
    connection = op.get_bind()
    for terms in seeding["_read_seed"](SEED_FILE):
        row = _stored(seeding, terms)
        if row is None:
            continue
        if row.origin == ORIGIN:
            for child in seeding["CHILDREN"]:
                op.execute(child.delete().where(child.c.contract_id == row.id))
            op.execute(versions.delete().where(versions.c.id == row.id))
            connection.execute(
                versions.update()
                .where(
                    versions.c.provider == terms.provider,
                    versions.c.model == terms.model,
                    versions.c.effective_to == terms.effective_from,
                )
                .values(effective_to=terms.effective_to)
            )
            continue
        # The row's origin names the packaged file that seeded it ('seed:contracts-v5').
        (previous,) = [
            seeded
            for seeded in seeding["_read_seed"](f"{row.origin.removeprefix('seed:')}.json")
            if (seeded.provider, seeded.model, seeded.effective_from)
            == (terms.provider, terms.model, terms.effective_from)
        ]
        connection.execute(
            versions.update()
            .where(versions.c.id == row.id)
            .values({column: getattr(previous, column) for column in CORRECTED})
        )
