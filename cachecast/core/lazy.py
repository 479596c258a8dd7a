"""A package's exports imported on first use (PEP 562 ``__getattr__``).

Importing one submodule of a package runs the package's ``__init__`` first; when that
imports every export, a command that needs one small module loads them all (start-up time,
docs/usage-report.md "Speed"). A package lists its exports by module and installs
:func:`lazy_exports`'s function as its ``__getattr__``; type checkers read the same imports
under ``TYPE_CHECKING``.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any


def lazy_exports(
    package: str, exports: Mapping[str, str], namespace: dict[str, Any]
) -> Callable[[str], object]:
    """The ``__getattr__`` of ``package``: an export is imported from its module (and kept in
    ``namespace``), any other public name as a submodule not imported yet."""

    def get(name: str) -> object:
        module = exports.get(name)
        if module is None:
            if not name.startswith("_"):
                try:
                    return importlib.import_module(f"{package}.{name}")
                except ModuleNotFoundError as error:
                    if error.name != f"{package}.{name}":
                        raise
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module), name)
        namespace[name] = value
        return value

    return get
