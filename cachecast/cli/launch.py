"""The root app :func:`cachecast.cli.main` runs: for a command, a root holding only its
module's commands; else the whole app (``cachecast.cli.root``).

Apart from ``cachecast.cli`` so that ``main`` can set the interpreter up before typer (and
pydantic, which typer imports) is imported: docs/usage-report.md "Speed".
"""

from __future__ import annotations

import importlib
from typing import Annotated

import typer

from cachecast.cli import COMMANDS

APP_HELP = "Predict prompt-cache hits and bills from prompt logs under dated provider contracts."


def _print_version(value: bool) -> None:
    # Eager: runs before typer asks for a command, so ``cachecast --version`` alone works.
    if value:
        from cachecast import __version__

        typer.echo(__version__)
        raise typer.Exit()


def root_callback(
    version: Annotated[
        bool,
        typer.Option(
            "--version", help="Print the version and exit.", is_eager=True, callback=_print_version
        ),
    ] = False,
) -> None:
    """Predict prompt-cache hits and bills from prompt logs under dated provider contracts."""


def app_for(arguments: list[str]) -> typer.Typer:
    """The app that runs ``arguments``: for a command, a root holding only its module's
    commands; else the whole app (``--help``, ``db``, an unknown name: the same answer as
    always)."""
    name = arguments[0] if arguments else ""
    module_name = COMMANDS.get(name)
    if module_name is None:
        from cachecast.cli.root import app as whole

        return whole
    from cachecast.cli import help as help_cli

    help_cli.install()
    module = importlib.import_module(f"cachecast.cli.{module_name}")
    small = root_app()
    module.register(small)
    return small


def root_app() -> typer.Typer:
    """An empty ``cachecast`` root: its help, ``--version``, and plain help text (no rich
    markup, so bracketed text prints as written)."""
    app = typer.Typer(
        name="cachecast",
        help=APP_HELP,
        no_args_is_help=True,
        pretty_exceptions_enable=False,
        rich_markup_mode=None,
    )
    app.callback()(root_callback)
    return app
