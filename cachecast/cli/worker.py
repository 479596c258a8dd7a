"""``cachecast worker``: run the service's background jobs in a process of its own."""

from __future__ import annotations

import logging
import os
import signal
import threading
from types import FrameType
from typing import Annotated

import typer

from cachecast.cli.common import DatabaseUrlOption, command, stderr
from cachecast.core.errors import BadInputError, Location, NotMigratedError


def register(app: typer.Typer) -> None:
    """Add ``worker`` to the root app."""
    app.command("worker")(command(worker))


def worker(
    threads: Annotated[
        int | None,
        typer.Option(help="Jobs run at once (default: the job_runners setting, at least 1)."),
    ] = None,
    database_url: DatabaseUrlOption = None,
    ray_address: Annotated[
        str | None,
        typer.Option(
            "--ray-address",
            envvar="CACHECAST_RAY_ADDRESS",
            help="Run each job on the Ray cluster at this address, only waiting here.",
        ),
    ] = None,
) -> None:
    """Claim and run the service's jobs from its database until stopped (SIGTERM, Ctrl-C).

    Start one or more beside 'cachecast serve' (set CACHECAST_JOB_RUNNERS=0 there), on any
    machine that reaches the database: the API then only answers requests. Settings: the
    CACHECAST_* variables or CACHECAST_SETTINGS_FILE, as for serve.
    """
    from cachecast.core import db
    from cachecast.service.settings import ServiceSettings
    from cachecast.service.worker import run_worker

    if database_url:
        os.environ[db.DATABASE_URL_ENV] = database_url
    settings = ServiceSettings()
    if ray_address is not None:
        settings = settings.model_copy(update={"ray_address": ray_address})
    count = threads if threads is not None else max(settings.job_runners, 1)
    if count < 1:
        raise BadInputError("must be at least 1", location=Location(field="--threads"))
    url = settings.resolved_database_url
    if not db.is_current(url):
        raise NotMigratedError(
            f"the database is at {db.current_revision(url) or 'no revision'}, not"
            f" {db.head_revision()}; run 'cachecast db upgrade'",
            location=Location(source=db.display_url(url)),
        )
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s")
    stop = threading.Event()

    def on_signal(number: int, frame: FrameType | None) -> None:
        stop.set()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    where = f"the Ray cluster at {settings.ray_address}" if settings.ray_address else "here"
    stderr.print(
        f"worker {os.getpid()}: {count} runner(s) claiming jobs from {db.display_url(url)},"
        f" running them {where}"
    )
    failed = run_worker(settings, count, stop)
    if failed:
        stderr.print(f"stopped before {len(failed)} job(s) finished; they were failed")
