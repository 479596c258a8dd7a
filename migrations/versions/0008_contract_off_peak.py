"""Contract store: off-peak prices (discount windows by UTC time of day, DeepSeek's).

Revision ID: 0008_contract_off_peak
Revises: 0007_engine_measurement_dtype
Create Date: 2026-12-03

At most one row per contract version: the prices that replace its base input, output and
read prices for a request sent inside one of the windows. The windows are one text column
(``1,2,3,4,5 10:00-24:00; 6,7 00:00-24:00``), read and written only through
``OffPeakWindow``. Versions without a row have no off-peak prices, so every stored version
keeps its meaning.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

from cachecast.contracts.sqltypes import ExactDecimal

revision: str = "0008_contract_off_peak"
down_revision: str | None = "0007_engine_measurement_dtype"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

TABLE = "contract_off_peak"


def upgrade() -> None:
    owner = sa.ForeignKey(
        "contract_version.id", ondelete="CASCADE", name="fk_contract_off_peak_contract"
    )
    op.create_table(
        TABLE,
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("contract_id", sa.Integer, owner, nullable=False),
        sa.Column("windows", sa.Text, nullable=False),
        sa.Column("input_per_mtok", ExactDecimal(), nullable=False),
        sa.Column("output_per_mtok", ExactDecimal(), nullable=False),
        sa.Column("read_multiplier", ExactDecimal(), nullable=False),
        sa.UniqueConstraint("contract_id", name="uq_contract_off_peak_contract"),
    )
    op.create_index(f"ix_{TABLE}_contract_id", TABLE, ["contract_id"])


def downgrade() -> None:
    op.drop_index(f"ix_{TABLE}_contract_id", table_name=TABLE)
    op.drop_table(TABLE)
