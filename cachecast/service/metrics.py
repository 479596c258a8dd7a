"""Prometheus metrics: requests, latencies and jobs.

Request counters and latency histograms live in the process that served the request. With
several uvicorn workers, ``cachecast serve`` points ``PROMETHEUS_MULTIPROC_DIR`` at a fresh
directory before the workers start, and ``/metrics`` then sums every worker's files (any
worker answers for all). Without it, each process reports only its own requests. Job counts
are read from the database at scrape time, so they are right across workers and instances.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable, Iterable

from prometheus_client import (
    CONTENT_TYPE_LATEST,
    CollectorRegistry,
    Counter,
    Histogram,
    generate_latest,
)
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.multiprocess import MultiProcessCollector
from prometheus_client.registry import Collector
from sqlalchemy.exc import SQLAlchemyError
from starlette.types import ASGIApp, Message, Receive, Scope, Send

MULTIPROC_ENV = "PROMETHEUS_MULTIPROC_DIR"

logger = logging.getLogger(__name__)


class JobCountCollector(Collector):
    """``cachecast_jobs{status=...}``: jobs in the shared database by status, read on scrape."""

    def __init__(self, count_jobs: Callable[[], dict[str, int]]) -> None:
        self.count_jobs = count_jobs

    def describe(self) -> Iterable[Metric]:
        # Registration asks for names only: no database query then.
        yield self._jobs_family()
        yield self._readable_family()

    def collect(self) -> Iterable[Metric]:
        jobs = self._jobs_family()
        readable = self._readable_family()
        try:
            counts = self.count_jobs()
        except SQLAlchemyError:
            # A scrape must still answer when the database is down or not migrated; the
            # failure is a metric of its own (and /readyz explains it).
            logger.warning("could not count jobs for /metrics", exc_info=True)
            readable.add_metric([], 0)
        else:
            readable.add_metric([], 1)
            for status, count in sorted(counts.items()):
                jobs.add_metric([status], count)
        yield jobs
        yield readable

    @staticmethod
    def _jobs_family() -> GaugeMetricFamily:
        return GaugeMetricFamily(
            "cachecast_jobs", "Background jobs in the database by status", labels=["status"]
        )

    @staticmethod
    def _readable_family() -> GaugeMetricFamily:
        return GaugeMetricFamily(
            "cachecast_jobs_table_readable", "1 when the job table could be read at this scrape"
        )


class ServiceMetrics:
    def __init__(self, count_jobs: Callable[[], dict[str, int]]) -> None:
        # Each app gets its own registry so several apps (tests) never clash on names.
        self.registry = CollectorRegistry(auto_describe=True)
        self.requests = Counter(
            "cachecast_http_requests",
            "HTTP requests answered, by route template and status",
            ["method", "route", "status"],
            registry=self.registry,
        )
        self.latency = Histogram(
            "cachecast_http_request_duration_seconds",
            "Time from request start to the end of the response body",
            ["method", "route"],
            registry=self.registry,
            buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60),
        )
        self.jobs_finished = Counter(
            "cachecast_jobs_finished",
            "Background jobs this service finished, by kind and outcome",
            ["kind", "outcome"],
            registry=self.registry,
        )
        self.scrape_registry = self.registry
        if os.environ.get(MULTIPROC_ENV):
            # Values are written to files by every process; a scrape reads all of them.
            self.scrape_registry = CollectorRegistry()
            MultiProcessCollector(self.scrape_registry)  # type: ignore[no-untyped-call]
        self.scrape_registry.register(JobCountCollector(count_jobs))

    def render(self) -> tuple[bytes, str]:
        return generate_latest(self.scrape_registry), CONTENT_TYPE_LATEST


class MetricsMiddleware:
    def __init__(self, app: ASGIApp, metrics: ServiceMetrics) -> None:
        self.app = app
        self.metrics = metrics

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        status = 500

        async def recording_send(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        try:
            await self.app(scope, receive, recording_send)
        finally:
            # The route template, not the raw path, keeps label cardinality bounded.
            route = getattr(scope.get("route"), "path", None) or "unmatched"
            method = scope["method"]
            self.metrics.requests.labels(method, route, str(status)).inc()
            self.metrics.latency.labels(method, route).observe(time.perf_counter() - started)
