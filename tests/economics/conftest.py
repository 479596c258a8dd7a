"""Shared setup of the economics tests."""

from __future__ import annotations

import pytest
import typer

from cachecast.gpu_backend.economics import cli as economics_cli


@pytest.fixture
def economics_app() -> typer.Typer:
    """An app with only the economics commands (capacity, compare, fleet) registered."""
    app = typer.Typer()
    economics_cli.register(app)
    return app
