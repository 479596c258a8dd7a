"""service jobs: background estimate jobs shared by every worker and instance

Revision ID: 0003_service_jobs
Revises: 0002_seed_contracts
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0003_service_jobs"
down_revision: str | None = "0002_seed_contracts"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "service_jobs",
        sa.Column("id", sa.String(length=36), primary_key=True),
        sa.Column("kind", sa.String(length=32), nullable=False),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("request_json", sa.Text(), nullable=False),
        sa.Column("total_records", sa.Integer(), nullable=False),
        sa.Column("processed_records", sa.Integer(), nullable=False),
        sa.Column("claimed_by", sa.String(length=200), nullable=True),
        sa.Column("heartbeat_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("started_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("finished_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("result_json", sa.Text(), nullable=True),
        sa.Column("error_json", sa.Text(), nullable=True),
        sa.CheckConstraint(
            "status IN ('queued', 'running', 'done', 'failed')", name="ck_service_jobs_status"
        ),
        # A finished job has exactly one of result and error; 'done' always carries its result.
        sa.CheckConstraint(
            "status <> 'done' OR result_json IS NOT NULL", name="ck_service_jobs_done_result"
        ),
    )
    op.create_index("ix_service_jobs_status", "service_jobs", ["status"])


def downgrade() -> None:
    op.drop_index("ix_service_jobs_status", table_name="service_jobs")
    op.drop_table("service_jobs")
