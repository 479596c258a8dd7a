"""Contract store: which caching rules a version inherits from its model family.

Revision ID: 0005_contract_inferred_fields
Revises: 0004_engine_measurements
Create Date: 2026-12-02

A child table of contract_version, like its TTL options and aliases: one row per field whose
value no source states for that model and was taken from its family (for example a minimum
length documented for "Claude Sonnet" models but not for one dated snapshot). Versions
without such rows infer nothing, so every stored version keeps its meaning.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0005_contract_inferred_fields"
down_revision: str | None = "0004_engine_measurements"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "contract_inferred_field",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column(
            "contract_id",
            sa.Integer,
            sa.ForeignKey(
                "contract_version.id",
                ondelete="CASCADE",
                name="fk_contract_inferred_field_contract",
            ),
            nullable=False,
        ),
        sa.Column("position", sa.Integer, nullable=False),
        sa.Column("field", sa.String(64), nullable=False),
        sa.UniqueConstraint("contract_id", "field", name="uq_contract_inferred_field_field"),
    )
    op.create_index(
        "ix_contract_inferred_field_contract_id", "contract_inferred_field", ["contract_id"]
    )


def downgrade() -> None:
    op.drop_index("ix_contract_inferred_field_contract_id", table_name="contract_inferred_field")
    op.drop_table("contract_inferred_field")
