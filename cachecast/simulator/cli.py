"""Commands of ``cachecast.simulator``: ``simulate`` (hit statistics), ``estimate`` (bills),
``check`` and ``suggest`` (prompt layouts)."""

from __future__ import annotations

import typer

from cachecast.simulator import estimate_cli, simulate_cli
from cachecast.simulator.layouts import cli as layouts_cli


def register(app: typer.Typer) -> None:
    """Add this subpackage's commands to the root app."""
    simulate_cli.register(app)
    estimate_cli.register(app)
    layouts_cli.register(app)
