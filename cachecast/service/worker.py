"""Job workers apart from the API: the handlers a job runner uses, and ``cachecast worker``.

A job is claimed from the shared database (``service.jobs``) by any runner: the API's own
threads (the ``job_runners`` setting; 0 turns them off) or ``cachecast worker`` processes,
as many as wanted, on any machine that reaches the database. An API under load then only
answers requests: the estimates' CPU time is spent in the workers.

With the ``ray_address`` setting (``CACHECAST_RAY_ADDRESS``) a runner hands each job to
that Ray cluster instead and only waits for it (``service.ray_jobs``): the runner's process
keeps its CPU, the job's progress and cancellation still go through the job's row.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Mapping
from typing import Any

from cachecast.contracts import ContractStore
from cachecast.core.limits import Limits, limits_in_force
from cachecast.core.limits import current as current_limits
from cachecast.service.estimating import estimate_job, run_estimate_job
from cachecast.service.isolation import run_job_isolated
from cachecast.service.jobs import JobHandler, JobRunner, JobStore, ProgressCallback
from cachecast.service.routers.estimates import ESTIMATE_JOB_KIND
from cachecast.service.settings import ServiceSettings

logger = logging.getLogger(__name__)


def job_handlers(
    contracts: ContractStore,
    ray_address: str | None,
    limits: Limits | None = None,
    memory_mb: int | None = None,
) -> dict[str, JobHandler]:
    """What runs each kind of job: here, or on the Ray cluster at ``ray_address``, under
    the service's ``limits`` (docs/limits.md). Here means in a work process whose address
    space is capped at ``memory_mb`` (``service.isolation``), or, without it, in the
    runner's own thread."""
    if ray_address:
        return {ESTIMATE_JOB_KIND: _on_ray(ray_address, contracts.url, limits)}

    def estimate_here(payload: Mapping[str, Any], progress: ProgressCallback) -> dict[str, Any]:
        if memory_mb is None:
            return run_estimate_job(contracts, payload, progress, limits=limits)
        with limits_in_force(limits or current_limits()):
            return run_job_isolated(
                estimate_job, payload, progress, database_url=contracts.url, memory_mb=memory_mb
            )

    return {ESTIMATE_JOB_KIND: estimate_here}


def _on_ray(address: str, database_url: str, limits: Limits | None) -> JobHandler:
    def estimate_on_ray(payload: Mapping[str, Any], progress: ProgressCallback) -> dict[str, Any]:
        from cachecast.service.ray_jobs import run_on_ray  # the optional Ray extra

        return run_on_ray(address, database_url, ESTIMATE_JOB_KIND, payload, progress, limits)

    return estimate_on_ray


def run_worker(
    settings: ServiceSettings,
    threads: int,
    stop: threading.Event,
    on_started: Callable[[JobRunner], None] | None = None,
) -> list[str]:
    """Claim and run jobs with ``threads`` runner threads until ``stop`` is set, then stop
    as the API does (running jobs get the grace period, then fail). Returns the ids of the
    jobs failed that way."""
    store = JobStore(settings.resolved_database_url, lease_seconds=settings.job_lease_seconds)
    runner = JobRunner(
        store,
        job_handlers(
            ContractStore(settings.resolved_database_url),
            settings.ray_address,
            settings.limits,
            settings.request_memory_mb,
        ),
        threads=threads,
        poll_seconds=settings.job_poll_seconds,
        on_finished=lambda kind, outcome: logger.info("%s job finished: %s", kind, outcome),
    )
    runner.start()
    if on_started is not None:
        on_started(runner)
    stop.wait()
    return runner.stop(settings.job_shutdown_grace_seconds)
