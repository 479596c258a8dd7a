"""``cachecast serve``: the REST service under uvicorn."""

from __future__ import annotations

import os
import shutil
import socket
import tempfile
from enum import StrEnum
from typing import Annotated

import typer

from cachecast.cli.common import DatabaseUrlOption, command, stderr
from cachecast.core.errors import BadInputError, ConfigurationError, Location, UnavailableError


class LogLevel(StrEnum):
    """uvicorn's log levels."""

    critical = "critical"
    error = "error"
    warning = "warning"
    info = "info"
    debug = "debug"
    trace = "trace"


def register(app: typer.Typer) -> None:
    """Add this subpackage's commands to the root app."""
    app.command("serve")(command(serve))


def serve(
    host: Annotated[str, typer.Option(help="Address to listen on.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="TCP port.", min=0, max=65535)] = 8000,
    workers: Annotated[
        int | None,
        typer.Option(help="Worker processes (default: the 'workers' setting, 1)."),
    ] = None,
    database_url: DatabaseUrlOption = None,
    log_level: Annotated[LogLevel, typer.Option(help="uvicorn log level.")] = LogLevel.info,
) -> None:
    """Serve the REST API (settings: CACHECAST_* variables or CACHECAST_SETTINGS_FILE)."""
    import uvicorn

    from cachecast.core import db
    from cachecast.service.metrics import MULTIPROC_ENV
    from cachecast.service.settings import load_settings

    if workers is not None and workers < 1:
        raise BadInputError("must be at least 1", location=Location(field="--workers"))
    if database_url:
        db.resolve_database_url(database_url)  # a bad URL is named as the option's
        # Workers are fresh processes that build their own settings from the environment.
        os.environ[db.DATABASE_URL_ENV] = database_url
    settings = load_settings()  # fail here, once, on bad settings rather than in each worker
    worker_count = workers if workers is not None else settings.workers
    url = settings.resolved_database_url
    check_can_listen(host, port)
    try:
        current = db.is_current(url)
    except UnavailableError as error:  # the service starts; /readyz says why it is not ready
        stderr.print(f"warning: {error.one_line()}; /readyz reports not ready", markup=False)
    else:
        if not current:
            stderr.print(
                f"warning: the database is at {db.current_revision(url) or 'no revision'},"
                f" not {db.head_revision()}; run 'cachecast db upgrade' (/readyz reports not"
                " ready)",
                markup=False,
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
            log_level=log_level.value,
        )
    finally:
        if metrics_dir is not None:
            shutil.rmtree(metrics_dir, ignore_errors=True)


def check_can_listen(host: str, port: int) -> None:
    """Refuse, before uvicorn starts, an address it could not listen on (it would log the
    error and exit 1, which means "regression" in cachecast)."""
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except socket.gaierror as error:
        raise ConfigurationError(
            f"cannot resolve {host!r}: {error.strerror}", location=Location(field="--host")
        ) from None
    family, kind, protocol, _, address = infos[0]
    with socket.socket(family, kind, protocol) as probe:
        # uvicorn sets SO_REUSEADDR too: a port in TIME_WAIT is free for it.
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind(address)
        except OSError as error:
            raise ConfigurationError(
                f"cannot listen on {host}:{port}: {error.strerror}",
                location=Location(field="--port"),
            ) from None
