"""The whole ``cachecast`` app: every command group assembled, and the database commands.

Each command group is one module of this package exposing ``register(app)``; this module
assembles them all (``--help``, ``db``, the tests' ``cachecast.cli.app``). Running one
command does not come here: ``cachecast.cli.main`` imports only that command's module.
"""

from __future__ import annotations

from typing import Annotated, Protocol

import typer
from rich.console import Console

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
from cachecast.cli import usage as usage_cli
from cachecast.cli import worker as worker_cli
from cachecast.cli.common import DatabaseUrlOption, command
from cachecast.cli.launch import root_app


class CommandModule(Protocol):
    __name__: str

    def register(self, app: typer.Typer) -> None: ...


help_cli.install()
app = root_app()
db_app = typer.Typer(help="Migrate the cachecast database (Alembic).", no_args_is_help=True)
app.add_typer(db_app, name="db")
console = Console(stderr=True, markup=False)


@db_app.command("upgrade")
@command
def db_upgrade(
    revision: Annotated[str, typer.Argument(help="Target revision.")] = "head",
    database_url: DatabaseUrlOption = None,
) -> None:
    """Apply migrations up to REVISION (default: the newest)."""
    from cachecast.core import db

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
    from cachecast.core import db

    url = db.resolve_database_url(database_url)
    db.downgrade(url, revision)
    console.print(f"database at revision {db.current_revision(url)}")


@db_app.command("current")
@command
def db_current(database_url: DatabaseUrlOption = None) -> None:
    """Print the database's current revision and whether it is the newest."""
    from cachecast.core import db

    url = db.resolve_database_url(database_url)
    # A read: a SQLite file that is not there is reported as empty, not created.
    current = db.current_revision(url) if db.exists(url) else None
    head = db.head_revision()
    state = "current" if current == head else f"behind (head is {head})"
    typer.echo(f"{current or 'empty'} {state}")


COMMAND_MODULES: tuple[CommandModule, ...] = (
    contracts_cli,
    inspect_cli,
    tokenize_cli,
    simulate_cli,
    estimate_cli,
    price_cli,
    reconcile_cli,
    usage_cli,
    layouts_cli,
    serve_cli,
    worker_cli,
    economics_cli,
    measure_cli,
)
for _module in COMMAND_MODULES:
    _module.register(app)


def _names(typer_app: typer.Typer) -> set[str]:
    commands = {info.name for info in typer_app.registered_commands}
    return {name for name in commands | {g.name for g in typer_app.registered_groups} if name}


def command_modules() -> dict[str, str]:
    """Each command name with the module that registers it, read from the modules
    themselves (``cachecast.cli.COMMANDS`` must say the same: a test checks it)."""
    found: dict[str, str] = {}
    for module in COMMAND_MODULES:
        probe = typer.Typer()
        module.register(probe)
        for name in _names(probe):
            found[name] = module.__name__.rsplit(".", 1)[1]
    return found


__all__ = ["app", "command_modules", "db_app"]
