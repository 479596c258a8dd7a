"""How every command's ``--help`` names what an option takes.

typer prints a Python type beside each option (``<bool>``, ``<list[Path]>``, ``<str>``),
which says nothing to a user. :func:`install` makes it name the value instead: nothing for a
flag, the option's metavar where it has one (``DATE``, ``PROVIDER:MODEL``, ``FORMAT``), else
``PATH``, ``N``, ``NUMBER`` or ``TEXT``; the choices of a choice. Help is printed plainly
(``rich_markup_mode=None`` on the app), so text in brackets such as ``[tool.cachecast]`` is
printed as written, and it wraps at the terminal's width (``COLUMNS``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, get_args, get_origin

from typer.core import TyperArgument, TyperOption

_LABELS: dict[type, str] = {Path: "PATH", int: "N", float: "NUMBER", str: "TEXT"}


def _label(param: TyperOption | TyperArgument, ctx: Any) -> str | None:
    if isinstance(param, TyperArgument):
        return None  # the argument's own name says it
    if param.is_flag:
        return None
    if param.metavar:
        return param.metavar
    descriptor = param.type_descriptor
    if descriptor.is_choice and descriptor.choices is not None:
        return "|".join(str(getattr(choice, "value", choice)) for choice in descriptor.choices)
    annotation: Any = descriptor.annotation
    if get_origin(annotation) is list:
        (annotation,) = get_args(annotation)
    return _LABELS.get(annotation, "TEXT")


def install() -> None:
    """Name option values as the module docstring says (idempotent; typer's classes are
    used by cachecast's commands only in this process)."""
    TyperOption.display_type_rich = _label  # type: ignore[method-assign,assignment]
    TyperArgument.display_type_rich = _label  # type: ignore[method-assign,assignment]
