"""Commands of ``cachecast.gpu_backend``, registered on the root ``cachecast`` app."""

from __future__ import annotations

import typer


def register(app: typer.Typer) -> None:
    """Add this subpackage's commands to the root app."""
