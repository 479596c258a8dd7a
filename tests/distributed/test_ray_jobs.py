"""Service jobs run on a Ray cluster (``CACHECAST_RAY_ADDRESS``): a runner claims each job from
the database, the job runs as a task on the cluster, and its progress, result and
cancellation go through the job's row as for a job run in the runner's own process.

The expected result is the same job run in-process (the claim is that the place a job runs
changes nothing); the in-process estimate is tested by hand in tests/service.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest

from cachecast.contracts import ContractStore
from cachecast.service.estimating import (
    EstimateBody,
    estimate_request,
    run_estimate_job,
)
from cachecast.service.jobs import JobRunner, JobStore, JobView
from cachecast.service.worker import job_handlers
from tests.service.logs import big_job_body, estimate_body, shared_prefix_records

pytestmark = pytest.mark.ray


def payload(body: dict[str, Any]) -> dict[str, Any]:
    """The stored job request for an API body, as POST /v1/estimates stores it."""
    return estimate_request(EstimateBody.model_validate(body), None).model_dump(mode="json")


def wait(store: JobStore, job_id: str, until: Any, timeout: float = 300.0) -> JobView:
    deadline = time.monotonic() + timeout
    while True:
        job = store.get(job_id)
        assert job is not None
        if until(job):
            return job
        if time.monotonic() > deadline:
            raise AssertionError(f"job {job_id} never reached the state wanted: {job}")
        time.sleep(0.05)


@pytest.fixture
def runner(ray_cluster: str, migrated_db_url: str) -> Iterator[JobRunner]:
    store = JobStore(migrated_db_url)
    handlers = job_handlers(ContractStore(migrated_db_url), ray_cluster)
    started = JobRunner(store, handlers, threads=1, poll_seconds=0.05)
    started.start()
    try:
        yield started
    finally:
        started.stop(grace_seconds=5)


def test_a_job_on_the_cluster_gives_the_in_process_result(
    runner: JobRunner, migrated_db_url: str
) -> None:
    body = estimate_body(shared_prefix_records(sessions=6), ["openai:gpt-4o"])
    job_id = runner.store.submit("estimate", payload(body), 12)
    runner.notify()
    job = wait(runner.store, job_id, lambda job: job.status in ("done", "failed"))
    assert job.status == "done", job.error
    expected = run_estimate_job(ContractStore(migrated_db_url), payload(body), lambda _: None)
    assert job.result == expected
    assert job.processed_records == 12  # the task's progress reached the row


def test_bad_input_fails_the_job_with_the_problem_a_request_would_get(
    runner: JobRunner,
) -> None:
    body = estimate_body([{"timestamp": 1, "model": "gpt-4o", "messages": 7}], ["openai:gpt-4o"])
    job_id = runner.store.submit("estimate", payload(body), 1)
    job = wait(runner.store, job_id, lambda job: job.status in ("done", "failed"))
    assert job.status == "failed"
    assert job.error is not None and job.error["status"] == 422
    assert "records[0]" in str(job.error)


def test_cancelling_a_job_running_on_the_cluster_stops_it(runner: JobRunner) -> None:
    store = runner.store
    job_id = store.submit("estimate", payload(big_job_body()), 25_000 * 15)
    wait(store, job_id, lambda job: job.status == "running" and job.processed_records > 0)
    cancelled = store.cancel(job_id)
    assert cancelled is not None and cancelled.status == "failed"
    assert cancelled.error is not None and cancelled.error["type"].endswith("/job-cancelled")
    # The runner drops the task and takes the next job.
    body = estimate_body(shared_prefix_records(sessions=2), ["openai:gpt-4o"])
    next_id = store.submit("estimate", payload(body), 4)
    after = wait(store, next_id, lambda job: job.status in ("done", "failed"))
    assert after.status == "done", after.error
    final = store.get(job_id)
    assert final is not None and final.result is None and final.status == "failed"
