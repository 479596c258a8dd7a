"""The service's own table: background estimate jobs, shared by every worker and instance.

A job row is the only coordination between processes: a worker claims a queued job with a
conditional UPDATE (``WHERE status = 'queued'``), so two workers can never both run it, and
writes the result together with ``status = 'done'`` in one statement, so a reader sees either
no result or the whole result.
"""

from __future__ import annotations

import datetime as dt
from enum import StrEnum

import sqlalchemy as sa
from sqlmodel import Field, SQLModel


class JobStatus(StrEnum):
    QUEUED = "queued"
    RUNNING = "running"
    DONE = "done"
    FAILED = "failed"


class ServiceJob(SQLModel, table=True):
    __tablename__ = "service_jobs"
    # Kept identical to migrations 0003 and 0008 (tables are created only by migrations).
    __table_args__ = (
        sa.CheckConstraint(
            "status IN ('queued', 'running', 'done', 'failed')", name="ck_service_jobs_status"
        ),
        sa.CheckConstraint(
            "status <> 'done' OR result_json IS NOT NULL", name="ck_service_jobs_done_result"
        ),
    )

    id: str = Field(primary_key=True, max_length=36)
    kind: str = Field(max_length=32, description="what the job computes, e.g. 'estimate'")
    status: str = Field(default=JobStatus.QUEUED.value, max_length=16, index=True)
    # The request as submitted (JSON), so that any worker of any instance can run it.
    request_json: str = Field(sa_column=sa.Column(sa.Text, nullable=False))
    total_records: int = Field(default=0)
    processed_records: int = Field(default=0)
    # hostname:pid:token of the worker that claimed the job; lets a restarting worker tell a
    # job orphaned by a dead process on its own host from one a live peer is running.
    claimed_by: str | None = Field(default=None, max_length=200)
    heartbeat_at: dt.datetime | None = Field(
        default=None, sa_column=sa.Column(sa.DateTime(timezone=True), nullable=True)
    )
    created_at: dt.datetime = Field(sa_column=sa.Column(sa.DateTime(timezone=True), nullable=False))
    started_at: dt.datetime | None = Field(
        default=None, sa_column=sa.Column(sa.DateTime(timezone=True), nullable=True)
    )
    finished_at: dt.datetime | None = Field(
        default=None, sa_column=sa.Column(sa.DateTime(timezone=True), nullable=True)
    )
    result_json: str | None = Field(default=None, sa_column=sa.Column(sa.Text, nullable=True))
    error_json: str | None = Field(default=None, sa_column=sa.Column(sa.Text, nullable=True))
    # SHA-256 (hex) of the owner token the submission answered with (migration 0008): the
    # token itself is never stored. None: a job from before owners, readable by admins only.
    owner_digest: str | None = Field(default=None, max_length=64)
