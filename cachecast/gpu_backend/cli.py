"""Commands of ``cachecast.gpu_backend``: engine measurements and self-hosted economics."""

from __future__ import annotations

import typer

from cachecast.gpu_backend.economics import cli as economics_cli
from cachecast.gpu_backend.engine import cli as engine_cli


def register(app: typer.Typer) -> None:
    """Add this subpackage's commands to the root app."""
    economics_cli.register(app)
    engine_cli.register(app)
