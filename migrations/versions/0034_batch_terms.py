"""Batch terms: dated Batch API (and OpenAI Flex) prices as a ratio of on-demand prices.

Revision ID: 0034_batch_terms
Revises: 0032_seed_contracts_v24
Create Date: 2026-12-05

One ``batch_term`` row per dated term of a provider (optionally a list of its models): from
which day to which day a tier (``batch`` or ``flex``) bills which token classes at
``price_ratio`` times the contract's on-demand price (docs/contracts.md, "Batch terms"). The
table is seeded from ``cachecast/contracts/data/batch-terms-v1.json`` (origin
'seed:batch-terms-v1'); the downgrade drops the table, and a database without it bills batch
requests at on-demand prices with a note, as before.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

from cachecast.contracts.batch_terms import batch_term_row, seed_terms
from cachecast.contracts.sqltypes import ExactDecimal

revision: str = "0034_batch_terms"
down_revision: str | None = "0033_seed_contracts_v25"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

TABLE = "batch_term"
ORIGIN = "seed:batch-terms-v1"


def upgrade() -> None:
    table = op.create_table(
        TABLE,
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("provider", sa.String(64), nullable=False),
        sa.Column("models", sa.Text),
        sa.Column("tier", sa.String(16), nullable=False),
        sa.Column("effective_from", sa.Date, nullable=False),
        sa.Column("effective_to", sa.Date),
        sa.Column("price_ratio", ExactDecimal(), nullable=False),
        sa.Column("applies_to", sa.String(64), nullable=False),
        sa.Column("verified_on", sa.Date, nullable=False),
        sa.Column("source", sa.Text, nullable=False),
        sa.Column("notes", sa.Text, nullable=False),
        sa.Column("origin", sa.String(64), nullable=False),
        sa.UniqueConstraint("provider", "tier", "effective_from", "models", name="uq_batch_term"),
        sa.CheckConstraint(
            "effective_to IS NULL OR effective_to > effective_from", name="ck_batch_term_range"
        ),
        sa.CheckConstraint("tier IN ('batch', 'flex')", name="ck_batch_term_tier"),
    )
    assert table is not None
    op.bulk_insert(table, [batch_term_row(term, ORIGIN) for term in seed_terms()])


def downgrade() -> None:
    op.drop_table(TABLE)
