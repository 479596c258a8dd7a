"""Jobs run apart from the API: a real ``cachecast serve`` with no job runner of its own and a
real ``cachecast worker`` process on the same database; cancelling queued and running jobs.

What "the API keeps answering" is measured by, without a wall-clock threshold: every health
check sent while the big job runs is answered, the job is still running after them, and
the CPU time the job took was spent by the worker process (and the work process it runs
jobs in), not the API's (read from /proc for both over the same interval).
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import httpx
import pytest
import sqlalchemy as sa

from cachecast.core import db
from cachecast.service.jobs import JobStore, jobs_table
from tests.service.conftest import make_settings, open_client
from tests.service.logs import big_job_body, estimate_body, shared_prefix_records
from tests.service.server import Server, Worker, poll_job

CANCELLED = "https://cachecast.dev/problems/job-cancelled"


def cpu_seconds(pid: int) -> float:
    """User plus system CPU time of a live process and its children, live or reaped (Linux
    /proc, clock ticks): a job runs in a work process the worker started."""
    import os

    total = 0
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue  # ended meanwhile
        if stat.parent.name == str(pid):  # utime, stime, then its reaped children's
            total += sum(int(value) for value in fields[11:15])
        elif fields[1] == str(pid):  # a live child (work processes start no children)
            total += int(fields[11]) + int(fields[12])
    return total / os.sysconf("SC_CLK_TCK")


def wait_in_database(database_url: str, job_id: str, timeout: float) -> str:
    """The job's final status, read from its row until it is done or failed (a bounded
    wait that sends the API nothing)."""
    store = JobStore(database_url)
    deadline = time.monotonic() + timeout
    while True:
        job = store.get(job_id)
        assert job is not None
        if job.status in ("done", "failed"):
            return job.status
        if time.monotonic() > deadline:
            raise AssertionError(f"job {job_id} still {job.status} after {timeout} s")
        time.sleep(0.2)


def running(job: dict[str, Any]) -> bool:
    return job["status"] == "running" and job["progress"]["processed_records"] > 0


def test_a_worker_process_runs_the_jobs_while_the_api_answers(
    migrated_db_url: str, tmp_path: Path
) -> None:
    settings = {"job_threshold_records": 100, "job_poll_seconds": 0.05}
    server = Server(migrated_db_url, tmp_path / "api.log", job_runners=0, **settings)
    worker = Worker(migrated_db_url, tmp_path / "worker.log", **settings)
    try:
        server.wait_ready()
        base = server.base_url
        accepted = httpx.post(f"{base}/v1/estimates", json=big_job_body(), timeout=60)
        assert accepted.status_code == 202, accepted.text
        job_id = accepted.json()["job_id"]
        token = accepted.json()["owner_token"]
        poll_job(base, job_id, running, token, timeout=300)  # a loaded host starts slowly
        api_before = cpu_seconds(server.process.pid)
        worker_before = cpu_seconds(worker.process.pid)
        answers = []
        for _ in range(20):
            started = time.monotonic()
            health = httpx.get(f"{base}/healthz", timeout=30)
            answers.append((health.status_code, round(time.monotonic() - started, 3)))
        during = httpx.get(
            f"{base}/v1/jobs/{job_id}", headers={"X-Job-Token": token}, timeout=30
        ).json()
        # Waited for in the database, not through the API: polling the API would make its
        # CPU time grow with the job's wall-clock time (a loaded host stretches the job, not
        # its CPU time) and the comparison below would measure the host's load.
        finished = wait_in_database(migrated_db_url, job_id, timeout=600)
        api_spent = cpu_seconds(server.process.pid) - api_before
        worker_spent = cpu_seconds(worker.process.pid) - worker_before
        done = httpx.get(
            f"{base}/v1/jobs/{job_id}", headers={"X-Job-Token": token}, timeout=30
        ).json()
        assert done["status"] == finished
        print(f"health checks during the job (status, seconds): {answers}")
        print(f"CPU seconds over the job: API {api_spent:.2f}, worker {worker_spent:.2f}")

        assert [status for status, _ in answers] == [200] * 20
        assert during["status"] == "running"  # answered while the job ran
        assert done["status"] == "done", done
        assert len(done["result"]["targets"]) == 15
        assert all(target["requests"] == 25_000 for target in done["result"]["targets"])
        with db.get_engine(migrated_db_url).connect() as connection:
            claimed_by = connection.execute(
                sa.select(jobs_table.c.claimed_by).where(jobs_table.c.id == job_id)
            ).scalar_one()
        assert claimed_by.split(":")[1] == str(worker.process.pid)
        # The job's CPU went to the worker; the API only answered requests.
        assert api_spent * 5 < worker_spent

        # Cancelled while running: the worker stops it and goes on with the next job.
        accepted = httpx.post(f"{base}/v1/estimates", json=big_job_body(), timeout=60)
        cancelled_id = accepted.json()["job_id"]
        mine = {"X-Job-Token": accepted.json()["owner_token"]}
        poll_job(base, cancelled_id, running, mine["X-Job-Token"], timeout=300)
        cancelled = httpx.delete(f"{base}/v1/jobs/{cancelled_id}", headers=mine, timeout=30)
        assert cancelled.status_code == 200, cancelled.text
        assert cancelled.json()["status"] == "failed"
        assert cancelled.json()["error"]["type"] == CANCELLED
        again = httpx.delete(f"{base}/v1/jobs/{cancelled_id}", headers=mine, timeout=30)
        assert again.status_code == 409
        # 60 sessions = 120 records > 100: a job for the worker, after the cancelled one.
        body = estimate_body(shared_prefix_records(sessions=60), ["openai:gpt-4o"])
        following = httpx.post(f"{base}/v1/estimates", json=body, timeout=60).json()
        after = poll_job(
            base,
            following["job_id"],
            lambda job: job["status"] in ("done", "failed"),
            following["owner_token"],
            timeout=300,
        )
        assert after["status"] == "done", after
        (target,) = after["result"]["targets"]
        # Hand-derived in test_api: per session 2048 + 2148 input tokens, 2048 read.
        assert (target["input_tokens"], target["cache_read_tokens"]) == (60 * 4196, 60 * 2048)
        final = httpx.get(f"{base}/v1/jobs/{cancelled_id}", headers=mine, timeout=30).json()
        assert (final["status"], final["result"], final["error"]["type"]) == (
            "failed",
            None,
            CANCELLED,
        )
    finally:
        exit_status = worker.stop()
        server.stop()
    assert exit_status == 0, worker.output()
    assert "cancelled" in worker.output()


@pytest.mark.anyio
async def test_a_queued_job_is_cancelled_and_never_claimed(migrated_db_url: str) -> None:
    settings = make_settings(migrated_db_url, job_runners=0, job_threshold_records=10)
    async for http in open_client(settings):
        body = estimate_body(shared_prefix_records(sessions=6), ["openai:gpt-4o"])
        accepted = await http.post("/v1/estimates", json=body)
        assert accepted.status_code == 202, accepted.text
        job_id = accepted.json()["job_id"]
        mine = {"X-Job-Token": accepted.json()["owner_token"]}
        assert (await http.get(f"/v1/jobs/{job_id}", headers=mine)).json()["status"] == "queued"

        cancelled = await http.delete(f"/v1/jobs/{job_id}", headers=mine)
        assert cancelled.status_code == 200, cancelled.text
        job = cancelled.json()
        assert (job["status"], job["result"]) == ("failed", None)
        assert job["error"]["type"] == CANCELLED
        assert "while queued" in job["error"]["detail"]

        again = await http.delete(f"/v1/jobs/{job_id}", headers=mine)
        assert again.status_code == 409
        assert again.headers["content-type"].startswith("application/problem+json")
        unknown = await http.delete("/v1/jobs/no-such-job")
        assert unknown.status_code == 404
    assert JobStore(migrated_db_url).claim_next("a-worker") is None  # nothing left to run
