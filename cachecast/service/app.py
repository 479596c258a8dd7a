"""The FastAPI application: ``create_app(settings)`` builds one, ``cachecast serve`` runs it."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse

from cachecast import __version__
from cachecast.core.errors import NotMigratedError
from cachecast.service import docs_pages, openapi
from cachecast.service.isolation import shared_pool
from cachecast.service.jobs import JobRunner, JobStore
from cachecast.service.limits import (
    BodyLimitMiddleware,
    HeavyRequestsMiddleware,
    LimitsMiddleware,
    NoLocalTokenizersMiddleware,
)
from cachecast.service.metrics import MetricsMiddleware, ServiceMetrics
from cachecast.service.problems import (
    ProblemError,
    UnexpectedErrorMiddleware,
    install_problem_handlers,
    problem_response,
)
from cachecast.service.retention import RetentionSweeper
from cachecast.service.routers import (
    comparisons,
    contracts,
    estimates,
    health,
    inspections,
    jobs,
    layout_checks,
    prices,
    reconciliations,
    simulations,
    usage_reports,
)
from cachecast.service.settings import ServiceSettings, load_settings
from cachecast.service.state import ServiceState
from cachecast.service.worker import job_handlers

logger = logging.getLogger(__name__)

DESCRIPTION = """\
Bill estimates for prompt logs under dated provider caching contracts.

Every estimate names the contract version (provider, model, effective date, source) it used.
Errors are `application/problem+json` (RFC 9457). Contract changes need an admin bearer key.
"""


def create_app(settings: ServiceSettings | None = None) -> FastAPI:
    settings = settings or load_settings()
    database_url = settings.resolved_database_url
    job_store = JobStore(database_url, lease_seconds=settings.job_lease_seconds)
    metrics = ServiceMetrics(job_store.counts)
    state = ServiceState(
        settings=settings, database_url=database_url, jobs=job_store, metrics=metrics
    )

    @asynccontextmanager
    async def lifespan(_app: FastAPI) -> AsyncIterator[None]:
        sweeper = RetentionSweeper(
            job_store.engine,
            every_seconds=settings.job_sweep_seconds,
            max_age_seconds=settings.job_retention_seconds,
            max_bytes=settings.job_retention_bytes,
        )
        sweeper.start()
        # The request work processes start now, in the background, and do their imports
        # before any request reaches them (docs/limits.md, "Isolation").
        shared_pool(settings.request_workers, settings.request_memory_mb).warm()
        if settings.job_runners > 0:
            state.runner = JobRunner(
                job_store,
                job_handlers(
                    state.contracts,
                    settings.ray_address,
                    settings.limits,
                    settings.request_memory_mb,
                ),
                threads=settings.job_runners,
                poll_seconds=settings.job_poll_seconds,
                on_finished=lambda kind, outcome: metrics.jobs_finished.labels(kind, outcome).inc(),
            )
            state.runner.start()
        try:
            yield
        finally:
            sweeper.stop()
            if state.runner is not None:
                state.runner.stop(settings.job_shutdown_grace_seconds)
                state.runner = None

    app = FastAPI(
        title="cachecast",
        version=__version__,
        description=DESCRIPTION,
        lifespan=lifespan,
        docs_url=None,  # served with local assets: docs_pages
        redoc_url=None,
    )
    app.state.settings = settings
    app.state.service = state
    install_problem_handlers(app)

    async def on_not_migrated(request: Request, exc: Exception) -> JSONResponse:
        error = ProblemError(503, "Database not migrated", str(exc), slug="not-migrated")
        return problem_response(error.to_problem(request.url.path))

    app.add_exception_handler(NotMigratedError, on_not_migrated)
    openapi.install(app)
    docs_pages.install(app)
    for module in (
        health,
        contracts,
        estimates,
        prices,
        inspections,
        reconciliations,
        simulations,
        jobs,
        layout_checks,
        comparisons,
        usage_reports,
    ):
        app.include_router(module.router)
    # Outermost first: count every request (413s included), then enforce the body limit.
    app.add_middleware(UnexpectedErrorMiddleware)
    app.add_middleware(LimitsMiddleware, limits=settings.limits)
    app.add_middleware(NoLocalTokenizersMiddleware)
    app.add_middleware(BodyLimitMiddleware, max_body_bytes=settings.max_body_bytes)
    app.add_middleware(
        HeavyRequestsMiddleware,
        slots=settings.max_concurrent_requests,
        retry_after_seconds=settings.busy_retry_after_seconds,
    )
    app.add_middleware(MetricsMiddleware, metrics=metrics)
    return app
