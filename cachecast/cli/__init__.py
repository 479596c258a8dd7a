"""The ``cachecast`` command: a thin typer front over the subpackages' own CLI modules.

Each subpackage exposes ``register(app)`` in its ``cli`` module and owns its commands; this
module only assembles them and holds the database commands shared by all.
"""

from __future__ import annotations

from typing import Annotated

import typer
from rich.console import Console

from cachecast import __version__
from cachecast.cli import contracts as contracts_cli
from cachecast.cli import economics as economics_cli
from cachecast.cli import estimate as estimate_cli
from cachecast.cli import help as help_cli
from cachecast.cli import inspect as inspect_cli
from cachecast.cli import layouts as layouts_cli
from cachecast.cli import measure as measure_cli
from cachecast.cli import price as price_cli
from cachecast.cli import reconcile as reconcile_cli
from cachecast.cli import serve as serve_cli
from cachecast.cli import simulate as simulate_cli
from cachecast.cli import tokenize as tokenize_cli
from cachecast.cli import worker as worker_cli
from cachecast.cli.common import DatabaseUrlOption, command
from cachecast.core import db

help_cli.install()
app = typer.Typer(
    name="cachecast",
    help="Predict prompt-cache hits and bills from prompt logs under dated provider contracts.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
)
db_app = typer.Typer(help="Migrate the cachecast database (Alembic).", no_args_is_help=True)
app.add_typer(db_app, name="db")
console = Console(stderr=True)


def _print_version(value: bool) -> None:
    # Eager: runs before typer asks for a command, so ``cachecast --version`` alone works.
    if value:
        typer.echo(__version__)
        raise typer.Exit()


@app.callback()
def _root(
    version: Annotated[
        bool,
        typer.Option(
            "--version", help="Print the version and exit.", is_eager=True, callback=_print_version
        ),
    ] = False,
) -> None:
    """Predict prompt-cache hits and bills from prompt logs under dated provider contracts."""


@db_app.command("upgrade")
@command
def db_upgrade(
    revision: Annotated[str, typer.Argument(help="Target revision.")] = "head",
    database_url: DatabaseUrlOption = None,
) -> None:
    """Apply migrations up to REVISION (default: the newest)."""
    url = db.resolve_database_url(database_url)
    db.upgrade(url, revision)
    console.print(f"database at revision {db.current_revision(url)}")


@db_app.command("downgrade")
@command
def db_downgrade(
    revision: Annotated[str, typer.Argument(help="Target revision, e.g. 'base' or '-1'.")],
    database_url: DatabaseUrlOption = None,
) -> None:
    """Revert migrations down to REVISION."""
    url = db.resolve_database_url(database_url)
    db.downgrade(url, revision)
    console.print(f"database at revision {db.current_revision(url)}")


@db_app.command("current")
@command
def db_current(database_url: DatabaseUrlOption = None) -> None:
    """Print the database's current revision and whether it is the newest."""
    url = db.resolve_database_url(database_url)
    # A read: a SQLite file that is not there is reported as empty, not created.
    current = db.current_revision(url) if db.exists(url) else None
    head = db.head_revision()
    state = "current" if current == head else f"behind (head is {head})"
    typer.echo(f"{current or 'empty'} {state}")


for _module in (
    contracts_cli,
    inspect_cli,
    tokenize_cli,
    simulate_cli,
    estimate_cli,
    price_cli,
    reconcile_cli,
    layouts_cli,
    serve_cli,
    worker_cli,
    economics_cli,
    measure_cli,
):
    _module.register(app)


def main() -> None:
    app()
