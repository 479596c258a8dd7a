"""Command-line pieces shared by every subpackage's CLI: ``--database-url`` and a progress bar.

Top level on purpose: it imports only typer, rich and :mod:`cachecast.db`, never a
subpackage, so any subpackage's CLI may import it without an import cycle.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.console import Console
from rich.progress import TaskID

from cachecast import db

if TYPE_CHECKING:
    from rich.progress import Progress

DATABASE_URL_HELP = "SQLAlchemy URL; default: a SQLite file in the user's data directory."


def database_url_option(help_text: str = DATABASE_URL_HELP) -> Any:
    """The ``--database-url`` option (also read from ``CACHECAST_DATABASE_URL``)."""
    return typer.Option("--database-url", envvar=db.DATABASE_URL_ENV, help=help_text)


DatabaseUrlOption = Annotated[str | None, database_url_option()]


class NoProgress:
    """Stands in for a progress bar when the console is not a terminal."""

    def __enter__(self) -> NoProgress:
        return self

    def __exit__(self, *exc_info: object) -> None:
        return None

    def add_task(self, description: str, total: float | None = None) -> TaskID:
        return TaskID(0)

    def advance(self, task: TaskID, advance: float = 1) -> None:
        return None


def progress_bar(console: Console) -> Progress | NoProgress:
    """A transient rich bar (description, bar, done/total, elapsed) on ``console`` when it is
    a terminal; a :class:`NoProgress` otherwise (pipes, tests)."""
    if not console.is_terminal:
        return NoProgress()
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    return Progress(
        TextColumn("[progress.description]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=console,
        transient=True,
    )
