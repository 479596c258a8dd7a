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
    skip_plugin_loader()
    from cachecast.cli.launch import app_for

    try:
        app_for(arguments)()
    finally:
        # The process ends here (typer exits): every object left is moved out of the
        # collector's reach, so the interpreter's exit does not walk them all once more in
        # its last collections. Memory is the process's to give back; files are closed and
        # the standard streams flushed as on any exit.
        gc.freeze()


# The values of PYDANTIC_DISABLE_PLUGINS that pydantic's loader reads as "no plugin at all"
# (pydantic/plugin/_loader.py, ``get_plugins``).
PLUGINS_OFF = ("__all__", "1", "true")
PLUGIN_LOADER = "pydantic.plugin._loader"


def skip_plugin_loader() -> None:
    """Where plugins are off, pydantic's plugin loader is not imported: a stand-in answers
    its one question (which plugins) as the loader itself does, with none.

    pydantic imports the loader each time it builds a validator, and the loader imports
    ``importlib.metadata`` (email, zipfile, csv: about 3% of a ``usage`` run's instructions,
    docs/usage-report.md "Speed") at its top, before it reads PYDANTIC_DISABLE_PLUGINS. The
    stand-in reads the variable at each question, as the loader does: once plugins are on
    again in the process, or for any other name pydantic asks of the module, the real loader
    is imported and answers."""
    if os.environ.get("PYDANTIC_DISABLE_PLUGINS") not in PLUGINS_OFF:
        return
    if PLUGIN_LOADER in sys.modules:
        return
    import types

    def real() -> types.ModuleType:
        import importlib

        if sys.modules.get(PLUGIN_LOADER) is stand_in:
            del sys.modules[PLUGIN_LOADER]
        return importlib.import_module(PLUGIN_LOADER)

    def get_plugins() -> Any:
        if os.environ.get("PYDANTIC_DISABLE_PLUGINS") in PLUGINS_OFF:
            return ()
        return real().get_plugins()

    def other(name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        return getattr(real(), name)

    stand_in = types.ModuleType(PLUGIN_LOADER, skip_plugin_loader.__doc__)
    stand_in.get_plugins = get_plugins  # type: ignore[attr-defined]
    stand_in.__getattr__ = other  # type: ignore[method-assign]
    sys.modules[PLUGIN_LOADER] = stand_in


def __getattr__(name: str) -> Any:
    # ``cachecast.cli.app`` (the whole app) is built on first use only.
    if name in ("app", "db_app"):
        from cachecast.cli import root

        return getattr(root, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
