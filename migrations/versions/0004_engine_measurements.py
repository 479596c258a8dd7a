"""engine measurements: replays on a real vLLM engine (the inference passport)

Revision ID: 0004_engine_measurements
Revises: 0003_service_jobs
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0004_engine_measurements"
down_revision: str | None = "0003_service_jobs"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "engine_measurements",
        sa.Column("id", sa.Integer(), primary_key=True, autoincrement=True),
        sa.Column("measured_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("engine_kind", sa.String(length=16), nullable=False),
        sa.Column("engine_version", sa.String(length=64), nullable=False),
        sa.Column("model", sa.String(length=500), nullable=False),
        sa.Column("device", sa.String(length=200), nullable=False),
        sa.Column("block_size", sa.Integer(), nullable=False),
        sa.Column("num_blocks", sa.Integer(), nullable=False),
        sa.Column("endpoint", sa.String(length=500), nullable=True),
        sa.Column("source", sa.String(length=1000), nullable=False),
        sa.Column("requests", sa.Integer(), nullable=False),
        sa.Column("prompt_tokens", sa.Integer(), nullable=False),
        sa.Column("output_tokens", sa.Integer(), nullable=False),
        sa.Column("measured_cached_tokens", sa.Integer(), nullable=True),
        sa.Column("predicted_cached_tokens", sa.Integer(), nullable=True),
        sa.Column("exact_match_share", sa.Float(), nullable=True),
        sa.Column("hit_rate", sa.Float(), nullable=False),
        sa.Column("ttft_cold_p50_s", sa.Float(), nullable=True),
        sa.Column("ttft_cold_p90_s", sa.Float(), nullable=True),
        sa.Column("ttft_cold_p99_s", sa.Float(), nullable=True),
        sa.Column("ttft_warm_p50_s", sa.Float(), nullable=True),
        sa.Column("ttft_warm_p90_s", sa.Float(), nullable=True),
        sa.Column("ttft_warm_p99_s", sa.Float(), nullable=True),
        sa.Column("input_tokens_per_s", sa.Float(), nullable=False),
        sa.Column("output_tokens_per_s", sa.Float(), nullable=False),
        sa.Column("report_json", sa.Text(), nullable=False),
    )
    op.create_index("ix_engine_measurements_measured_at", "engine_measurements", ["measured_at"])


def downgrade() -> None:
    op.drop_index("ix_engine_measurements_measured_at", table_name="engine_measurements")
    op.drop_table("engine_measurements")
