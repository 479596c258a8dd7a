"""The ``cachecast`` command: a thin typer front over one module per command group.

Each command group is one module of this package exposing ``register(app)``.
:func:`main` runs a command with only its own module imported: a root app holding that
module's commands alone (typer reads every command's signature when it builds an app, and
the 13 modules import their use cases, formats and tables: most of a command's start-up,
docs/usage-report.md "Speed"); ``cachecast.cli.launch`` builds it. ``--help``, ``db``,
``--version`` and an unknown name get the whole app (``cachecast.cli.root``), which
``cachecast.cli.app`` also names. This module imports neither typer nor pydantic: ``main``
sets the interpreter up before they are imported.
"""

from __future__ import annotations

import gc
import os
import sys
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from cachecast.cli.root import app as app
    from cachecast.cli.root import db_app as db_app

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

# Commands that read their input once, print a report and exit, measured with the cyclic
# garbage collector run less often (GC_THRESHOLD): docs/usage-report.md "Speed". The others
# (a server, a worker, vLLM or Ray in the process) keep Python's defaults.
ONE_SHOT_COMMANDS = frozenset({"usage"})
# A first-generation collection every 100,000 net allocations instead of 700: start-up
# (typer, pydantic, the command's modules) allocates objects that live as long as the
# process, and a collection finds no garbage among them; cycles made later are still
# collected (the older generations after 10 collections of the younger, as by default).
GC_THRESHOLD = (100_000, 10, 10)


def main() -> None:
    arguments = sys.argv[1:]
    if arguments and arguments[0] in ONE_SHOT_COMMANDS:
        gc.set_threshold(*GC_THRESHOLD)
    # pydantic looks for plugins by reading the metadata of every installed distribution
    # the first time it builds a validator (about 50 ms in a large environment); cachecast
    # uses none. Set PYDANTIC_DISABLE_PLUGINS (even empty) to choose otherwise.
    os.environ.setdefault("PYDANTIC_DISABLE_PLUGINS", "__all__")
    from cachecast.cli.launch import app_for

    try:
        app_for(arguments)()
    finally:
        # The process ends here (typer exits): every object left is moved out of the
        # collector's reach, so the interpreter's exit does not walk them all once more in
        # its last collections. Memory is the process's to give back; files are closed and
        # the standard streams flushed as on any exit.
        gc.freeze()


def __getattr__(name: str) -> Any:
    # ``cachecast.cli.app`` (the whole app) is built on first use only.
    if name in ("app", "db_app"):
        from cachecast.cli import root

        return getattr(root, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
