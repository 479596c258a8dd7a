"""service jobs: the digest of the owner token returned at submission

Revision ID: 0010_job_owner
Revises: 0009_seed_contracts_v3

A job belongs to whoever submitted it: the submission answers with a random owner token, and
only its SHA-256 digest is stored here; reading or cancelling the job needs the token (or an
admin key). Jobs stored before this revision have none and are readable by admins only.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0010_job_owner"
down_revision: str | None = "0009_seed_contracts_v3"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("service_jobs") as table:
        table.add_column(sa.Column("owner_digest", sa.String(length=64), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("service_jobs") as table:
        table.drop_column("owner_digest")
