"""Background jobs kept in the shared database, run by any worker of any instance.

Life of a job: ``queued`` (inserted by the request that submitted it) -> ``running`` (claimed
by exactly one worker with ``UPDATE ... WHERE id = :id AND status = 'queued'``; a worker that
updates no row lost the race and tries the next job) -> ``done`` (result and status written by
one UPDATE, so never half-written) or ``failed`` (error written the same way).
``DELETE /v1/jobs/{id}`` cancels a queued or running job: ``failed`` with a ``job-cancelled``
problem, written by the API in one conditional UPDATE; the worker running it sees at its next
heartbeat that the row is no longer running under its claim, and stops at the handler's next
progress report (:class:`JobTakenError`), writing nothing.

A worker that dies mid-job leaves a ``running`` row. Such a row is marked ``failed`` when
(a) a process starting on the same host sees that the claiming process no longer exists
(claims carry host, pid and the process start time, so a reused pid is not mistaken for the
dead one), or (b) its heartbeat is older than the lease (a dead host, seen by any instance).
Instances that share a hostname must therefore share a PID namespace (plain processes on one
machine do; containers get their own hostnames by default).
"""

from __future__ import annotations

import datetime as dt
import json
import logging
import os
import socket
import threading
import time
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Engine

from cachecast.core import db
from cachecast.service.tables import JobStatus, ServiceJob
from cachecast.tokenizers import refuse_local_tokenizer_directories

logger = logging.getLogger(__name__)

jobs_table: sa.Table = ServiceJob.__table__  # type: ignore[attr-defined]

ProgressCallback = Callable[[int], None]
JobHandler = Callable[[Mapping[str, Any], ProgressCallback], dict[str, Any]]


class JobInputError(Exception):
    """The job's input is wrong (not the service): stored as the job's error problem."""

    def __init__(self, problem: dict[str, Any]) -> None:
        super().__init__(problem.get("detail", "invalid job input"))
        self.problem = problem


class JobQueueFullError(Exception):
    """As many jobs as the queue holds are queued or running; nothing was stored."""

    def __init__(self, limit: int) -> None:
        super().__init__(f"{limit} jobs are queued or running already (setting job_queue_limit)")
        self.limit = limit


class JobAbandonedError(Exception):
    """Raised inside a handler's progress report when the server is stopping."""


class JobTakenError(Exception):
    """Raised inside a handler's progress report when the job is no longer this worker's:
    cancelled by a client (``DELETE /v1/jobs/{id}``), or failed as orphaned by a peer."""


def utcnow() -> dt.datetime:
    return dt.datetime.now(dt.UTC)


def as_utc(moment: dt.datetime | None) -> dt.datetime | None:
    """SQLite hands back naive datetimes; every stored time is UTC."""
    if moment is None or moment.tzinfo is not None:
        return moment
    return moment.replace(tzinfo=dt.UTC)


def _process_start_ticks(pid: int) -> str | None:
    """Start time of a process in clock ticks since boot (Linux), None if it does not exist."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    # The command name (field 2) may contain spaces; fields after its ')' are plain.
    fields = stat[stat.rindex(")") + 2 :].split()
    return fields[19]  # field 22 overall: starttime


def new_worker_id() -> str:
    """host:pid:process-start:token; the token tells apart runners inside one process."""
    pid = os.getpid()
    start = _process_start_ticks(pid) or "?"
    return f"{socket.gethostname()}:{pid}:{start}:{uuid.uuid4().hex[:8]}"


def claimant_is_dead_here(claimed_by: str, hostname: str) -> bool:
    """True only when the claimant ran on this host and that exact process is gone."""
    parts = claimed_by.split(":")
    if len(parts) != 4 or parts[0] != hostname or not parts[1].isdigit() or parts[2] == "?":
        return False
    return _process_start_ticks(int(parts[1])) != parts[2]


@dataclass(frozen=True)
class JobView:
    """A job as the API shows it."""

    id: str
    kind: str
    status: str
    total_records: int
    processed_records: int
    created_at: dt.datetime
    started_at: dt.datetime | None
    finished_at: dt.datetime | None
    result: dict[str, Any] | None
    error: dict[str, Any] | None
    owner_digest: str | None = None

    @property
    def processed(self) -> int:
        """Records processed, never more than the total (a pass may count past its bound)."""
        total = self.total_records
        return min(self.processed_records, total) if total else self.processed_records

    @property
    def fraction(self) -> float:
        """Share of the work done: processed / total, 1 for a finished job with no total."""
        if self.total_records:
            return self.processed / self.total_records
        return 1.0 if self.status == "done" else 0.0


class JobStore:
    def __init__(self, database_url: str, lease_seconds: float = 60.0) -> None:
        self.engine: Engine = db.get_engine(database_url)
        self.lease = dt.timedelta(seconds=lease_seconds)

    def submit(
        self,
        kind: str,
        request: Mapping[str, Any],
        total_records: int,
        *,
        queue_limit: int | None = None,
        owner_digest: str | None = None,
    ) -> str:
        """Queue a job; with ``queue_limit``, refuse it (:class:`JobQueueFullError`) when
        that many jobs are already queued or running. The count and the insert are one
        statement, so a full queue is never overfilled by one process (concurrent submits
        from several processes may pass it by a few)."""
        job_id = str(uuid.uuid4())
        values = {
            "id": job_id,
            "kind": kind,
            "status": JobStatus.QUEUED.value,
            "request_json": json.dumps(request, separators=(",", ":")),
            "total_records": total_records,
            "processed_records": 0,
            "created_at": utcnow(),
            "owner_digest": owner_digest,
        }
        with self.engine.begin() as connection:
            if queue_limit is None:
                connection.execute(jobs_table.insert().values(**values))
                return job_id
            pending = (
                sa.select(sa.func.count())
                .select_from(jobs_table)
                .where(jobs_table.c.status.in_([JobStatus.QUEUED.value, JobStatus.RUNNING.value]))
                .scalar_subquery()
            )
            row = sa.select(
                *(
                    sa.literal(value, type_=jobs_table.c[name].type).label(name)
                    for name, value in values.items()
                )
            )
            # The inserted ids, not ``rowcount``: PostgreSQL's driver reports no count for
            # an INSERT ... SELECT, whatever it inserted.
            inserted = connection.execute(
                jobs_table.insert()
                .from_select(list(values), row.where(pending < queue_limit))
                .returning(jobs_table.c.id)
            ).all()
        if len(inserted) != 1:
            raise JobQueueFullError(queue_limit)
        return job_id

    def get(self, job_id: str) -> JobView | None:
        with self.engine.connect() as connection:
            row = (
                connection.execute(sa.select(jobs_table).where(jobs_table.c.id == job_id))
                .mappings()
                .first()
            )
        if row is None:
            return None
        created_at = as_utc(row["created_at"])
        assert created_at is not None
        return JobView(
            id=row["id"],
            kind=row["kind"],
            status=row["status"],
            total_records=row["total_records"],
            processed_records=row["processed_records"],
            created_at=created_at,
            started_at=as_utc(row["started_at"]),
            finished_at=as_utc(row["finished_at"]),
            result=json.loads(row["result_json"]) if row["result_json"] else None,
            error=json.loads(row["error_json"]) if row["error_json"] else None,
            owner_digest=row["owner_digest"],
        )

    def claim_next(self, worker_id: str) -> tuple[str, str, dict[str, Any]] | None:
        """Claim the oldest queued job: (id, kind, request), or None when none is left."""
        while True:
            with self.engine.connect() as connection:
                candidate = connection.execute(
                    sa.select(jobs_table.c.id)
                    .where(jobs_table.c.status == JobStatus.QUEUED.value)
                    .order_by(jobs_table.c.created_at, jobs_table.c.id)
                    .limit(1)
                ).scalar_one_or_none()
            if candidate is None:
                return None
            now = utcnow()
            with self.engine.begin() as connection:
                claimed = connection.execute(
                    jobs_table.update()
                    .where(
                        jobs_table.c.id == candidate,
                        jobs_table.c.status == JobStatus.QUEUED.value,
                    )
                    .values(
                        status=JobStatus.RUNNING.value,
                        claimed_by=worker_id,
                        started_at=now,
                        heartbeat_at=now,
                    )
                ).rowcount
                if claimed != 1:
                    continue  # another worker won this one; look again
                row = connection.execute(
                    sa.select(jobs_table.c.kind, jobs_table.c.request_json).where(
                        jobs_table.c.id == candidate
                    )
                ).one()
            return candidate, row.kind, json.loads(row.request_json)

    def _update_running(self, job_id: str, claimed_by: str, **values: Any) -> bool:
        """Update the job only while it is still running under this claim; False if not."""
        with self.engine.begin() as connection:
            updated = connection.execute(
                jobs_table.update()
                .where(
                    jobs_table.c.id == job_id,
                    jobs_table.c.status == JobStatus.RUNNING.value,
                    jobs_table.c.claimed_by == claimed_by,
                )
                .values(**values)
            ).rowcount
        return bool(updated == 1)

    def heartbeat(self, job_id: str, worker_id: str, processed: int) -> bool:
        return self._update_running(
            job_id, worker_id, heartbeat_at=utcnow(), processed_records=processed
        )

    def complete(self, job_id: str, worker_id: str, result: dict[str, Any], processed: int) -> bool:
        """Result and 'done' in one statement. False if the job was taken from us meanwhile."""
        return self._update_running(
            job_id,
            worker_id,
            status=JobStatus.DONE.value,
            result_json=json.dumps(result, separators=(",", ":")),
            processed_records=processed,
            finished_at=utcnow(),
        )

    def fail(self, job_id: str, worker_id: str, problem: dict[str, Any]) -> bool:
        return self._update_running(
            job_id,
            worker_id,
            status=JobStatus.FAILED.value,
            error_json=json.dumps(problem, separators=(",", ":")),
            finished_at=utcnow(),
        )

    def cancel(self, job_id: str) -> JobView | None:
        """Cancel a queued or running job: it is failed with a ``job-cancelled`` problem in
        one conditional UPDATE (the worker running it finds the job no longer its own at its
        next heartbeat and stops). Returns the job as it now is (unchanged when it had
        already finished), or None for an unknown id."""
        with self.engine.connect() as connection:
            status = connection.execute(
                sa.select(jobs_table.c.status).where(jobs_table.c.id == job_id)
            ).scalar_one_or_none()
        if status in (JobStatus.QUEUED.value, JobStatus.RUNNING.value):
            with self.engine.begin() as connection:
                connection.execute(
                    jobs_table.update()
                    .where(
                        jobs_table.c.id == job_id,
                        jobs_table.c.status.in_([JobStatus.QUEUED.value, JobStatus.RUNNING.value]),
                    )
                    .values(
                        status=JobStatus.FAILED.value,
                        error_json=json.dumps(_cancelled_problem(job_id, status)),
                        finished_at=utcnow(),
                    )
                )
        return self.get(job_id)

    def fail_orphans(self, hostname: str | None = None) -> list[str]:
        """Mark failed every running job whose worker is known dead or whose lease expired."""
        hostname = hostname or socket.gethostname()
        stale_before = utcnow() - self.lease
        with self.engine.connect() as connection:
            running = connection.execute(
                sa.select(
                    jobs_table.c.id, jobs_table.c.claimed_by, jobs_table.c.heartbeat_at
                ).where(jobs_table.c.status == JobStatus.RUNNING.value)
            ).all()
        failed: list[str] = []
        for job_id, claimed_by, heartbeat_at in running:
            heartbeat = as_utc(heartbeat_at)
            if claimed_by and claimant_is_dead_here(claimed_by, hostname):
                reason = f"the worker process running it ({claimed_by}) stopped before finishing"
            elif heartbeat is None or heartbeat < stale_before:
                reason = (
                    f"its worker ({claimed_by}) sent no heartbeat for over "
                    f"{self.lease.total_seconds():g} s and is taken as crashed"
                )
            else:
                continue
            problem = _interrupted_problem(500, f"job {job_id} was interrupted: {reason}")
            # Conditional on the row still being the same claim, so a job that finished
            # between the read above and now is left alone.
            if self._update_running(
                job_id,
                claimed_by,
                status=JobStatus.FAILED.value,
                error_json=json.dumps(problem),
                finished_at=utcnow(),
            ):
                logger.warning("marked job %s failed: %s", job_id, reason)
                failed.append(job_id)
        return failed

    def fail_claimed_by(self, worker_id: str, problem: dict[str, Any]) -> list[str]:
        """Fail every job this worker still has running (used when it shuts down)."""
        condition = sa.and_(
            jobs_table.c.status == JobStatus.RUNNING.value, jobs_table.c.claimed_by == worker_id
        )
        with self.engine.begin() as connection:
            failed = connection.execute(
                jobs_table.update()
                .where(condition)
                .values(
                    status=JobStatus.FAILED.value,
                    error_json=json.dumps(problem),
                    finished_at=utcnow(),
                )
                .returning(jobs_table.c.id)
            ).scalars()
            return sorted(failed)

    def counts(self) -> dict[str, int]:
        with self.engine.connect() as connection:
            rows = connection.execute(
                sa.select(jobs_table.c.status, sa.func.count()).group_by(jobs_table.c.status)
            ).all()
        counts = {status.value: 0 for status in JobStatus}
        counts.update({status: int(count) for status, count in rows})
        return counts


class JobRunner:
    """Threads in one worker process that claim and run jobs until stopped."""

    def __init__(
        self,
        store: JobStore,
        handlers: Mapping[str, JobHandler],
        *,
        threads: int,
        poll_seconds: float,
        on_finished: Callable[[str, str], None] | None = None,
    ) -> None:
        self.store = store
        self.handlers = dict(handlers)
        self.thread_count = threads
        self.poll_seconds = poll_seconds
        self.on_finished = on_finished
        self.worker_id = new_worker_id()
        self.stopping = threading.Event()
        self.wake = threading.Event()
        self.threads: list[threading.Thread] = []
        self.abandon = threading.Event()
        # Orphans are checked at most this often, besides once at start.
        self.sweep_every = max(store.lease.total_seconds() / 4, poll_seconds)

    def start(self) -> None:
        try:
            self.store.fail_orphans()
        except sa.exc.OperationalError as error:
            # Not migrated yet, or the database is down: /readyz says so; the loop retries.
            logger.warning("could not check for interrupted jobs at start: %s", _reason(error))
        except Exception:
            logger.exception("could not check for interrupted jobs at start")
        for index in range(self.thread_count):
            thread = threading.Thread(
                target=self._loop, name=f"cachecast-jobs-{index}", daemon=True
            )
            thread.start()
            self.threads.append(thread)

    def stop(self, grace_seconds: float = 10.0) -> list[str]:
        """Stop claiming; give running jobs ``grace_seconds`` to finish, then fail them.

        A job still running when the process goes is failed here rather than left for the
        next start to find, so its client learns at once. Returns the ids failed this way.
        """
        self.stopping.set()
        self.wake.set()
        deadline = time.monotonic() + grace_seconds
        for thread in self.threads:
            thread.join(max(0.0, deadline - time.monotonic()))
        self.abandon.set()  # handlers stop at their next progress report
        # By claim in the database, not by what the threads say: a claim committed an
        # instant ago is caught too.
        try:
            return self.store.fail_claimed_by(self.worker_id, _shutdown_problem())
        except sa.exc.OperationalError as error:
            logger.warning(
                "could not mark this worker's running jobs failed at shutdown: %s", _reason(error)
            )
            return []
        except sa.exc.SQLAlchemyError:
            # Shutting down must not fail; the next start or a peer fails them instead.
            logger.exception("could not mark this worker's running jobs failed at shutdown")
            return []

    def notify(self) -> None:
        """A job was just submitted in this process: look now instead of after the poll wait."""
        self.wake.set()

    def _loop(self) -> None:
        # Jobs come from clients: they must never name a tokenizer directory on this machine.
        refuse_local_tokenizer_directories()
        last_sweep = 0.0
        while not self.stopping.is_set():
            try:
                now = time.monotonic()
                if now - last_sweep >= self.sweep_every:
                    self.store.fail_orphans()
                    last_sweep = now
                claimed = self.store.claim_next(self.worker_id)
            except sa.exc.OperationalError as error:
                # Foreseeable (the database is down or not migrated): one line, no traceback.
                logger.warning(
                    "job runner could not reach the database (%s); retrying", _reason(error)
                )
                self.stopping.wait(max(self.poll_seconds, 2.0))
                continue
            except Exception:
                # The database may be briefly unreachable; keep the worker alive and retry.
                logger.exception("job runner could not reach the database; retrying")
                self.stopping.wait(max(self.poll_seconds, 2.0))  # stop() cuts the wait short
                continue
            if claimed is None:
                self.wake.wait(self.poll_seconds)
                self.wake.clear()
                continue
            try:
                self._run(*claimed)
            except sa.exc.OperationalError as error:
                # The database went away as the job ended (a restart; the process shutting
                # down): one line, and this thread goes on; the job's lease runs out and the
                # orphan sweep fails it (docs/architecture.md, service jobs).
                logger.warning(
                    "job runner could not record the end of job %s (%s)",
                    claimed[0],
                    _reason(error),
                )
            except Exception:
                logger.exception("job runner could not record the end of job %s", claimed[0])

    def _run(self, job_id: str, kind: str, request: dict[str, Any]) -> None:
        processed = 0
        done = threading.Event()
        taken = threading.Event()  # the row is no longer running under our claim

        def progress(count: int) -> None:
            # Handlers report increments (as the estimator does), not running totals.
            nonlocal processed
            processed += count
            if self.abandon.is_set():
                raise JobAbandonedError(job_id)
            if taken.is_set():
                raise JobTakenError(job_id)

        def beat() -> None:
            interval = min(1.0, self.store.lease.total_seconds() / 4)
            while not done.wait(interval):
                try:
                    if not self.store.heartbeat(job_id, self.worker_id, processed):
                        taken.set()
                except Exception:
                    logger.exception("heartbeat for job %s failed", job_id)

        heart = threading.Thread(target=beat, name=f"cachecast-heartbeat-{job_id}", daemon=True)
        heart.start()
        outcome = "failed"
        try:
            if self.abandon.is_set():
                raise JobAbandonedError(job_id)
            handler = self.handlers.get(kind)
            if handler is None:
                raise RuntimeError(f"this server has no handler for jobs of kind {kind!r}")
            result = handler(request, progress)
            done.set()
            heart.join()
            if self.store.complete(job_id, self.worker_id, result, processed):
                outcome = "done"
            else:
                logger.warning("job %s was no longer ours when it finished; result dropped", job_id)
                outcome = "lost"
        except JobAbandonedError:
            done.set()
            heart.join()
            # stop() fails every job of ours; this covers a claim made while it ran.
            self.store.fail(job_id, self.worker_id, _shutdown_problem())
            outcome = "abandoned"
        except JobTakenError:
            done.set()
            heart.join()
            logger.info("job %s was cancelled or taken from this worker; stopped", job_id)
            outcome = "cancelled"
        except JobInputError as error:
            done.set()
            heart.join()
            self.store.fail(job_id, self.worker_id, error.problem)
        except sa.exc.OperationalError:
            # The database went away (recording the result, or under the handler): no row
            # can say so now; the loop logs it in one line and the lease's end fails the job.
            done.set()
            heart.join()
            raise
        except Exception as error:
            done.set()
            heart.join()
            logger.exception("job %s failed", job_id)
            self.store.fail(
                job_id,
                self.worker_id,
                {
                    "title": "Job failed",
                    "status": 500,
                    "detail": f"{type(error).__name__} while running the job; see the server log",
                },
            )
        finally:
            done.set()
        if self.on_finished is not None:
            self.on_finished(kind, outcome)


def _interrupted_problem(status: int, what_happened: str) -> dict[str, Any]:
    """The error of a job whose worker went away before it finished."""
    return {
        "type": "https://cachecast.dev/problems/job-interrupted",
        "title": "Job interrupted",
        "status": status,
        "detail": f"{what_happened}; no partial result was kept. Submit it again.",
    }


def _cancelled_problem(job_id: str, status: str) -> dict[str, Any]:
    return {
        "type": "https://cachecast.dev/problems/job-cancelled",
        "title": "Job cancelled",
        "status": 409,
        "detail": f"job {job_id} was cancelled by a client while {status}; no result was kept",
    }


def _shutdown_problem() -> dict[str, Any]:
    return _interrupted_problem(503, "the server shut down before the job finished")


def _reason(error: sa.exc.OperationalError) -> str:
    """The driver's reason for a database error, on one line (no URL, no traceback)."""
    return " ".join(str(error.orig).split())
