"""``cachecast serve``: the REST service under uvicorn."""

from __future__ import annotations

import os
import shutil
import tempfile
from typing import Annotated

import typer

from cachecast import db
from cachecast.cli.common import DatabaseUrlOption, command
from cachecast.service.metrics import MULTIPROC_ENV
from cachecast.service.settings import ServiceSettings


def register(app: typer.Typer) -> None:
    """Add this subpackage's commands to the root app."""
    app.command("serve")(command(serve))


def serve(
    host: Annotated[str, typer.Option(help="Address to listen on.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="TCP port.")] = 8000,
    workers: Annotated[
        int | None,
        typer.Option(help="Worker processes (default: the 'workers' setting, 1)."),
    ] = None,
    database_url: DatabaseUrlOption = None,
    log_level: Annotated[str, typer.Option(help="uvicorn log level.")] = "info",
) -> None:
    """Serve the REST API (settings: CACHECAST_* variables or CACHECAST_SETTINGS_FILE)."""
    import uvicorn

    if database_url:
        # Workers are fresh processes that build their own settings from the environment.
        os.environ[db.DATABASE_URL_ENV] = database_url
    settings = ServiceSettings()  # fail here, once, on bad settings rather than in each worker
    worker_count = workers if workers is not None else settings.workers
    if worker_count < 1:
        raise typer.BadParameter("--workers must be at least 1")
    url = settings.resolved_database_url
    if not db.is_current(url):
        typer.echo(
            f"warning: the database is at {db.current_revision(url) or 'no revision'}, "
            f"not {db.head_revision()}; run 'cachecast db upgrade' (/readyz reports not ready)",
            err=True,
        )
    metrics_dir: str | None = None
    if worker_count > 1 and not os.environ.get(MULTIPROC_ENV):
        # Let /metrics in any worker sum every worker's counters.
        metrics_dir = tempfile.mkdtemp(prefix="cachecast-metrics-")
        os.environ[MULTIPROC_ENV] = metrics_dir
    try:
        uvicorn.run(
            "cachecast.service.app:create_app",
            factory=True,
            host=host,
            port=port,
            workers=worker_count,
            log_level=log_level,
        )
    finally:
        if metrics_dir is not None:
            shutil.rmtree(metrics_dir, ignore_errors=True)
