"""engine measurements: the dtypes of the passport (weights and KV cache)

Revision ID: 0007_engine_measurement_dtype
Revises: 0006_seed_contracts_v2

Both columns are nullable: measurements stored before this revision did not record them, and
a server that does not expose its configuration (vLLM outside dev mode) does not say its
weights' dtype.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0007_engine_measurement_dtype"
down_revision: str | None = "0006_seed_contracts_v2"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("engine_measurements") as table:
        table.add_column(sa.Column("dtype", sa.String(length=32), nullable=True))
        table.add_column(sa.Column("kv_cache_dtype", sa.String(length=32), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("engine_measurements") as table:
        table.drop_column("kv_cache_dtype")
        table.drop_column("dtype")
