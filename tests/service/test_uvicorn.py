"""A real ``cachecast serve`` (uvicorn) on 127.0.0.1: end to end, several workers, and a
job cut off by a crash."""

from __future__ import annotations

from pathlib import Path

import httpx
import sqlalchemy as sa

from cachecast.core import db
from cachecast.service.jobs import jobs_table
from tests.service.conftest import ADMIN_KEY
from tests.service.logs import estimate_body, shared_prefix_records, slow_job_body
from tests.service.server import Server, poll_job


def test_end_to_end_with_two_workers(migrated_db_url: str, tmp_path: Path) -> None:
    server = Server(
        migrated_db_url,
        tmp_path / "server.log",
        workers=2,
        admin_keys=ADMIN_KEY,
        job_threshold_records=10,
        job_poll_seconds=0.1,
    )
    try:
        server.wait_ready()
        base = server.base_url
        with httpx.Client(base_url=base, timeout=30) as http:
            small = http.post(
                "/v1/estimates", json=estimate_body(shared_prefix_records(), ["openai:gpt-4o"])
            )
            assert small.status_code == 200, small.text
            # Hand-derived in test_api: 2 requests, 2048 + 2148 input tokens, 2048 read.
            (target,) = small.json()["targets"]
            assert (target["input_tokens"], target["cache_read_tokens"]) == (4196, 2048)

            # 6 sessions = 12 records > threshold 10: a job, run by whichever worker claims it.
            accepted = http.post(
                "/v1/estimates",
                json=estimate_body(shared_prefix_records(sessions=6), ["openai:gpt-4o"]),
            )
            assert accepted.status_code == 202, accepted.text
            job = poll_job(
                base,
                accepted.json()["job_id"],
                lambda j: j["status"] == "done",
                accepted.json()["owner_token"],
            )
            (target,) = job["result"]["targets"]
            assert (target["input_tokens"], target["cache_read_tokens"]) == (6 * 4196, 6 * 2048)

            assert http.post("/v1/contracts", json={}).status_code == 401
            # Any worker's /metrics sums both workers' counters (multiprocess mode): the two
            # estimate POSTs above were counted, whichever worker served them.
            metrics = http.get("/metrics").text
            counted = [
                line
                for line in metrics.splitlines()
                if line.startswith("cachecast_http_requests_total{")
                and 'route="/v1/estimates"' in line
            ]
            assert sum(float(line.rsplit(" ", 1)[1]) for line in counted) == 2.0, metrics
            assert 'cachecast_jobs{status="done"} 1.0' in metrics
    finally:
        server.stop()


def test_a_job_cut_off_by_a_crash_is_failed_never_half_written(
    service_db_url: str, tmp_path: Path
) -> None:
    """On SQLite and on PostgreSQL (skipped with a reason when no server is configured)."""
    migrated_db_url = service_db_url
    settings = {"job_threshold_records": 100, "job_poll_seconds": 0.05}
    first = Server(migrated_db_url, tmp_path / "first.log", **settings)
    try:
        first.wait_ready()
        accepted = httpx.post(f"{first.base_url}/v1/estimates", json=slow_job_body(), timeout=60)
        assert accepted.status_code == 202, accepted.text
        job_id = accepted.json()["job_id"]
        token = accepted.json()["owner_token"]
        # Mid-job: a heartbeat has recorded progress, and the job is not finished.
        running = poll_job(
            first.base_url,
            job_id,
            lambda j: j["status"] != "queued" and j["progress"]["processed_records"] > 0,
            token,
        )
        assert running["status"] == "running", running
        first.kill()
    finally:
        first.stop()

    engine = db.get_engine(migrated_db_url)
    with engine.connect() as connection:
        row = connection.execute(
            sa.select(jobs_table.c.status, jobs_table.c.result_json).where(
                jobs_table.c.id == job_id
            )
        ).one()
    assert (row.status, row.result_json) == ("running", None)  # the crash left it mid-way

    second = Server(migrated_db_url, tmp_path / "second.log", **settings)
    try:
        second.wait_ready()
        job = httpx.get(
            f"{second.base_url}/v1/jobs/{job_id}", headers={"X-Job-Token": token}, timeout=10
        ).json()
        assert job["status"] == "failed", job
        assert job["result"] is None
        assert "interrupted" in job["error"]["detail"]
    finally:
        second.stop()
    with engine.connect() as connection:
        row = connection.execute(
            sa.select(jobs_table.c.status, jobs_table.c.result_json).where(
                jobs_table.c.id == job_id
            )
        ).one()
    assert (row.status, row.result_json) == ("failed", None)
