"""Batch terms v2: Azure OpenAI Global Batch and Groq's Batch API.

Revision ID: 0035_batch_terms_v2
Revises: 0034_batch_terms
Create Date: 2026-12-05

Inserts the terms of ``cachecast/contracts/data/batch-terms-v2.json`` (origin
'seed:batch-terms-v2') into ``batch_term`` (docs/contracts.md, "Batch terms"); the downgrade
deletes exactly those rows, and their batch requests are billed at on-demand prices with a
note, as before.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

from cachecast.contracts.batch_terms import SEED_FILE_V2, batch_term_row, seed_terms
from cachecast.contracts.sqltypes import ExactDecimal

revision: str = "0035_batch_terms_v2"
down_revision: str | None = "0034_batch_terms"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

ORIGIN = "seed:batch-terms-v2"
TABLE = sa.table(
    "batch_term",
    sa.column("provider", sa.String),
    sa.column("models", sa.Text),
    sa.column("tier", sa.String),
    sa.column("effective_from", sa.Date),
    sa.column("effective_to", sa.Date),
    sa.column("price_ratio", ExactDecimal()),
    sa.column("applies_to", sa.String),
    sa.column("verified_on", sa.Date),
    sa.column("source", sa.Text),
    sa.column("notes", sa.Text),
    sa.column("origin", sa.String),
)


def upgrade() -> None:
    op.bulk_insert(TABLE, [batch_term_row(term, ORIGIN) for term in seed_terms(SEED_FILE_V2)])


def downgrade() -> None:
    op.execute(TABLE.delete().where(TABLE.c.origin == ORIGIN))
