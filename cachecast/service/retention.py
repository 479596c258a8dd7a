"""Retention of background jobs: what the job table keeps, and for how long.

A job's request body is needed only until the job finishes, its result only until the client
has had a fair chance to fetch it. A periodic sweep (every ``job_sweep_seconds``, in a thread
of each service process, independent of the job runners) therefore:

1. drops the request body of every finished (done or failed) job;
2. deletes finished jobs older than ``job_retention_seconds`` (counted from when they
   finished);
3. deletes the oldest finished jobs while the results and errors kept add up to more than
   ``job_retention_bytes`` (measured as the stored JSON's length).

Queued and running jobs are never touched; a deleted job's ``GET /v1/jobs/{id}`` is a 404.
With ``job_queue_limit`` (``JobStore.submit``), the table is bounded: at most that many
request bodies, and results within the bytes above.
"""

from __future__ import annotations

import datetime as dt
import logging
import threading
from dataclasses import dataclass

import sqlalchemy as sa
from sqlalchemy.engine import Engine

from cachecast.service.jobs import jobs_table, utcnow
from cachecast.service.tables import JobStatus

logger = logging.getLogger(__name__)

_FINISHED = (JobStatus.DONE.value, JobStatus.FAILED.value)


@dataclass(frozen=True)
class SweepResult:
    bodies_dropped: int
    deleted_by_age: int
    deleted_by_size: int


def sweep(engine: Engine, *, max_age_seconds: float, max_bytes: int) -> SweepResult:
    """One pass of the module docstring's three steps (each its own short transaction)."""
    finished = jobs_table.c.status.in_(_FINISHED)
    with engine.begin() as connection:
        dropped = connection.execute(
            jobs_table.update()
            .where(finished, jobs_table.c.request_json != "")
            .values(request_json="")
        ).rowcount
    cutoff = utcnow() - dt.timedelta(seconds=max_age_seconds)
    with engine.begin() as connection:
        by_age = connection.execute(
            jobs_table.delete().where(finished, jobs_table.c.finished_at < cutoff)
        ).rowcount
    size = sa.func.coalesce(sa.func.length(jobs_table.c.result_json), 0) + sa.func.coalesce(
        sa.func.length(jobs_table.c.error_json), 0
    )
    with engine.connect() as connection:
        rows = connection.execute(
            sa.select(jobs_table.c.id, size.label("size"))
            .where(finished)
            .order_by(jobs_table.c.finished_at.desc(), jobs_table.c.id)
        ).all()
    kept = 0
    doomed: list[str] = []
    for job_id, job_size in rows:
        kept += int(job_size)
        if kept > max_bytes:
            doomed.append(job_id)
    by_size = 0
    for start in range(0, len(doomed), 500):
        with engine.begin() as connection:
            by_size += connection.execute(
                jobs_table.delete().where(
                    finished, jobs_table.c.id.in_(doomed[start : start + 500])
                )
            ).rowcount
    return SweepResult(dropped, by_age, by_size)


class RetentionSweeper:
    """A daemon thread running :func:`sweep` every ``every_seconds`` until stopped."""

    def __init__(
        self, engine: Engine, *, every_seconds: float, max_age_seconds: float, max_bytes: int
    ) -> None:
        self.engine = engine
        self.every = every_seconds
        self.max_age = max_age_seconds
        self.max_bytes = max_bytes
        self.stopping = threading.Event()
        self.thread = threading.Thread(target=self._loop, name="cachecast-retention", daemon=True)

    def start(self) -> None:
        self.thread.start()

    def stop(self) -> None:
        self.stopping.set()
        self.thread.join(timeout=10)

    def _loop(self) -> None:
        while not self.stopping.is_set():
            try:
                result = sweep(self.engine, max_age_seconds=self.max_age, max_bytes=self.max_bytes)
                if result.deleted_by_age or result.deleted_by_size:
                    logger.info(
                        "job retention: deleted %d finished job(s) by age, %d by size",
                        result.deleted_by_age,
                        result.deleted_by_size,
                    )
            except sa.exc.OperationalError as error:
                # Not migrated yet, or the database is down: /readyz says so; retried later.
                logger.warning("job retention sweep failed: %s", " ".join(str(error.orig).split()))
            except Exception:
                logger.exception("job retention sweep failed")
            self.stopping.wait(self.every)
