"""The job table as several workers see it: atomic claims, orphans, never half-written.

Runs on SQLite and on PostgreSQL (skipped with a reason when no server is configured).
"""

from __future__ import annotations

import datetime as dt
import json
import logging
import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Mapping
from typing import Any

import pytest
import sqlalchemy as sa

from cachecast.core import db
from cachecast.service.jobs import (
    JobRunner,
    JobStore,
    _process_start_ticks,
    jobs_table,
    new_worker_id,
)


def _job_ids(store: JobStore, count: int) -> list[str]:
    return [store.submit("store-test", {"n": index}, total_records=1) for index in range(count)]


def test_concurrent_claims_take_each_job_exactly_once(service_db_url: str) -> None:
    store = JobStore(service_db_url)
    submitted = set(_job_ids(store, 24))
    claimed: list[str] = []
    lock = threading.Lock()
    start = threading.Barrier(6)

    def worker() -> None:
        worker_id = new_worker_id()  # each thread is a separate claimant
        start.wait()
        while True:
            job = store.claim_next(worker_id)
            if job is None:
                return
            with lock:
                claimed.append(job[0])

    threads = [threading.Thread(target=worker) for _ in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert len(claimed) == len(set(claimed))  # no job claimed twice
    assert submitted <= set(claimed)  # every job claimed (a shared PostgreSQL db may hold more)
    assert store.counts()["running"] >= 24


def test_result_and_status_are_written_together_and_only_by_the_claimant(
    service_db_url: str,
) -> None:
    store = JobStore(service_db_url)
    (job_id,) = _job_ids(store, 1)
    owner, intruder = new_worker_id(), new_worker_id()
    claimed = store.claim_next(owner)
    while claimed is not None and claimed[0] != job_id:
        claimed = store.claim_next(owner)  # other tests' jobs on a shared PostgreSQL db
    assert claimed is not None
    assert not store.complete(job_id, intruder, {"x": 1}, processed=1)
    view = store.get(job_id)
    assert view is not None and (view.status, view.result) == ("running", None)
    assert store.complete(job_id, owner, {"x": 1}, processed=1)
    view = store.get(job_id)
    assert view is not None and (view.status, view.result) == ("done", {"x": 1})
    # Once done, nobody can fail it or overwrite it.
    assert not store.fail(job_id, owner, {"detail": "late"})
    assert not store.complete(job_id, owner, {"x": 2}, processed=1)


def test_a_done_row_without_result_is_refused_by_the_database(service_db_url: str) -> None:
    store = JobStore(service_db_url)
    (job_id,) = _job_ids(store, 1)
    with db.get_engine(service_db_url).connect() as connection:
        try:
            connection.execute(
                jobs_table.update().where(jobs_table.c.id == job_id).values(status="done")
            )
            connection.commit()
        except sa.exc.IntegrityError:
            connection.rollback()
        else:
            raise AssertionError("status 'done' without a result was accepted")


def _dead_process_claim() -> str:
    """A claim by a process of this host that has exited (a real pid, really gone)."""
    child = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"],
        capture_output=True,
        text=True,
        check=True,
    )
    pid = int(child.stdout)
    assert _process_start_ticks(pid) is None
    return f"{socket.gethostname()}:{pid}:12345:deadbeef"


def test_orphans_of_dead_local_processes_and_expired_leases_fail(service_db_url: str) -> None:
    store = JobStore(service_db_url, lease_seconds=30)
    dead_local, alive_local, stale_remote, fresh_remote = _job_ids(store, 4)
    now = dt.datetime.now(dt.UTC)
    me = os.getpid()
    claims = {
        dead_local: (_dead_process_claim(), now),
        alive_local: (f"{socket.gethostname()}:{me}:{_process_start_ticks(me)}:cafe", now),
        stale_remote: ("other-host:42:1:ab", now - dt.timedelta(seconds=31)),
        fresh_remote: ("other-host:43:1:cd", now - dt.timedelta(seconds=5)),
    }
    with db.get_engine(service_db_url).begin() as connection:
        for job_id, (claimed_by, heartbeat) in claims.items():
            connection.execute(
                jobs_table.update()
                .where(jobs_table.c.id == job_id)
                .values(
                    status="running",
                    claimed_by=claimed_by,
                    heartbeat_at=heartbeat,
                    started_at=heartbeat,
                )
            )
    failed = store.fail_orphans()
    assert dead_local in failed and stale_remote in failed
    assert alive_local not in failed and fresh_remote not in failed
    for job_id in (dead_local, stale_remote):
        view = store.get(job_id)
        assert view is not None
        assert (view.status, view.result) == ("failed", None)
        assert view.error is not None and "interrupted" in view.error["detail"]
    for job_id in (alive_local, fresh_remote):
        view = store.get(job_id)
        assert view is not None and view.status == "running"
    with db.get_engine(service_db_url).connect() as connection:
        stored = connection.execute(
            sa.select(jobs_table.c.error_json).where(jobs_table.c.id == dead_local)
        ).scalar_one()
    assert json.loads(stored)["title"] == "Job interrupted"


def test_a_runner_that_cannot_record_a_job_s_end_logs_one_line_and_goes_on(
    migrated_db_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    """The database goes away while a job runs (here its jobs table is dropped, a real
    OperationalError from SQLite, as a file removed under a shutting-down process gives):
    the runner thread logs one line naming the job, keeps running, and claims no more."""
    store = JobStore(migrated_db_url)
    started = threading.Event()

    def handler(request: Mapping[str, Any], progress: Callable[[int], None]) -> dict[str, Any]:
        started.set()
        with db.get_engine(migrated_db_url).begin() as connection:
            connection.execute(sa.text("DROP TABLE service_jobs"))
        return {"ok": True}

    job_id = store.submit("vanishing", {}, total_records=1)
    runner = JobRunner(store, {"vanishing": handler}, threads=1, poll_seconds=0.05)
    with caplog.at_level(logging.WARNING, logger="cachecast.service.jobs"):
        runner.start()
        assert started.wait(60)
        deadline = time.monotonic() + 60
        while not any(job_id in record.getMessage() for record in caplog.records):
            assert time.monotonic() < deadline, caplog.text
            time.sleep(0.05)
        (thread,) = runner.threads
        assert thread.is_alive()  # the runner goes on (it retries its claims)
        runner.stop(grace_seconds=0)
        thread.join(60)
    ended = [r for r in caplog.records if job_id in r.getMessage()]
    assert [r.levelno for r in ended] == [logging.WARNING]
    assert "could not record the end of job" in ended[0].getMessage()
    assert "no such table" in ended[0].getMessage()
    assert ended[0].exc_info is None  # one line, no traceback
