"""The ``cachecast`` command: a thin typer front over one module per command group.

Each command group is one module of this package exposing ``register(app)``.
:func:`main` runs a command with only its own module imported: a root app holding that
module's commands alone (typer reads every command's signature when it builds an app, and
the 13 modules import their use cases, formats and tables: most of a command's start-up,
docs/usage-report.md "Speed"). ``--help``, ``db``, ``--version`` and an unknown name get the
whole app (``cachecast.cli.root``), which ``cachecast.cli.app`` also names.
"""

from __future__ import annotations

import importlib
import os
import sys
from typing import TYPE_CHECKING, Annotated, Any

import typer

if TYPE_CHECKING:
    from cachecast.cli.root import app as app
    from cachecast.cli.root import db_app as db_app

APP_HELP = "Predict prompt-cache hits and bills from prompt logs under dated provider contracts."

# Command name -> the module of this package that registers it (checked against the modules
# by tests/usecases/test_command_imports.py).
COMMANDS: dict[str, str] = {
    "contracts": "contracts",
    "inspect": "inspect",
    "tokenize": "tokenize",
    "simulate": "simulate",
    "estimate": "estimate",
    "price": "price",
    "reconcile": "reconcile",
    "usage": "usage",
    "check": "layouts",
    "suggest": "layouts",
    "serve": "serve",
    "worker": "worker",
    "capacity": "economics",
    "compare": "economics",
    "fleet": "economics",
    "measure": "measure",
}


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


def main() -> None:
    # pydantic looks for plugins by reading the metadata of every installed distribution
    # the first time it builds a validator (about 50 ms in a large environment); cachecast
    # uses none. Set PYDANTIC_DISABLE_PLUGINS (even empty) to choose otherwise.
    os.environ.setdefault("PYDANTIC_DISABLE_PLUGINS", "__all__")
    app_for(sys.argv[1:])()


def __getattr__(name: str) -> Any:
    # ``cachecast.cli.app`` (the whole app) is built on first use only.
    if name in ("app", "db_app"):
        from cachecast.cli import root

        return getattr(root, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
