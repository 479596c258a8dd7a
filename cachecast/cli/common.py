"""What every command shares: ``--database-url``, a progress bar, and one way to fail.

A command is a thin adapter: parse its arguments into the use case's request, call the use
case (``cachecast.usecases``), render the report, exit. :func:`command` wraps it so that every
error ends the same way: a :class:`~cachecast.core.errors.CachecastError` prints one line on
stderr (``error: <where>: <what>``, plus close matches where there are some) and exits with
its family's code (2 for bad input or configuration); anything else is a bug and exits 3
with one line (``CACHECAST_DEBUG=1`` prints the traceback too). Output piped into a reader
that stops early (``| head``) ends quietly with 0. See docs/errors.md.
"""

from __future__ import annotations

import functools
import os
import sys
import traceback
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, ParamSpec, TypeVar, cast

import typer
from typer.exceptions import TyperException

from cachecast.core.errors import (
    EXIT_BAD_INPUT,
    EXIT_INTERNAL,
    BadInputError,
    CachecastError,
    Location,
)

if TYPE_CHECKING:
    from rich.console import Console
    from rich.progress import Progress as RichProgress
    from rich.progress import TaskID

    from cachecast.contracts import ContractStore
    from cachecast.passes.log_input import LogInput
    from cachecast.usecases.reports import InputIssue

DATABASE_URL_HELP = (
    "SQLAlchemy URL; default: $CACHECAST_DATABASE_URL, else a SQLite file in the user's data"
    " directory."
)
DEBUG_ENV = "CACHECAST_DEBUG"

P = ParamSpec("P")
R = TypeVar("R")


def database_url_option(help_text: str = DATABASE_URL_HELP) -> Any:
    """The ``--database-url`` option. ``CACHECAST_DATABASE_URL`` is read by
    ``db.resolve_database_url``, not by the option, so that an error names where the URL
    came from."""
    return typer.Option("--database-url", metavar="URL", help=help_text)


DatabaseUrlOption = Annotated[str | None, database_url_option()]
if TYPE_CHECKING:
    FormatOption = Annotated[str | None, typer.Option("--format")]


def __getattr__(name: str) -> Any:
    # ``FormatOption`` names every log format in its help, which imports every format's
    # reader: built when a command that takes ``--format`` is registered, not for the others.
    if name == "FormatOption":
        from cachecast.logs.formats import format_names

        option = Annotated[
            str | None,
            typer.Option(
                "--format",
                metavar="FORMAT",
                help="Read every log as this format (default: detected per file): "
                + ", ".join(format_names())
                + ".",
            ),
        ]
        globals()[name] = option
        return option
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


ResultsOption = Annotated[
    Path | None,
    typer.Option(
        "--results",
        help="The results file of a batch requests file (OpenAI, Anthropic or Bedrock).",
    ),
]
# The log's defaults for records that name no model or provider (LogInput's default_*).
DefaultModelOption = Annotated[
    str | None, typer.Option("--model", help="Model of the records that name none.")
]
DefaultProviderOption = Annotated[
    str | None, typer.Option("--provider", help="Provider of the records that name none.")
]
StrictOption = Annotated[bool, typer.Option(help="Stop at the first bad log line.")]
ClientOption = Annotated[
    str | None,
    typer.Option(
        "--client",
        help="The agent that wrote the sessions: claude-code, codex (default: from the format).",
    ),
]
JsonOption = Annotated[bool, typer.Option("--json", help="Print the report as JSON.")]


class _Stderr:
    """rich's console on stderr, made at its first use: a command that prints nothing there
    does not import rich (tens of milliseconds of every run's start-up)."""

    _console: Console | None = None

    def console(self) -> Console:
        if self._console is None:
            from rich.console import Console

            self._console = Console(stderr=True, highlight=False, soft_wrap=True, markup=False)
        return self._console

    def __getattr__(self, name: str) -> Any:
        return getattr(self.console(), name)


_STDERR = _Stderr()
stderr = cast("Console", _STDERR)


def escape(text: str) -> str:
    """``text`` with rich markup escaped (rich imported when first needed)."""
    from rich.markup import escape as rich_escape

    return rich_escape(text)


def print_error(error: CachecastError) -> None:
    """One line on stderr, and the close matches on a second where there are some."""
    # Escaped: a message may quote user text that reads as rich markup ("[/x]" would raise).
    stderr.print(f"[red]error:[/] {escape(error.one_line())}", markup=True)
    if error.close_matches and "close matches" not in error.message:
        stderr.print("close matches: " + ", ".join(error.close_matches), markup=False)


def command(function: Callable[P, R]) -> Callable[P, R]:
    """Wrap a command so that it fails the one way the module docstring describes."""

    @functools.wraps(function)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return function(*args, **kwargs)
        except (typer.Exit, typer.Abort, TyperException):
            raise  # usage errors and exits: typer reports them itself (exit 2 for usage)
        except CachecastError as error:
            print_error(error)
            raise typer.Exit(error.exit_code) from None
        except KeyboardInterrupt:
            stderr.print("interrupted")
            raise typer.Exit(130) from None
        except BrokenPipeError:
            # The reader went away (``cachecast estimate ... | head``): what it read is what
            # it wanted, so that is success, quietly (docs/errors.md).
            silence_stdout()
            raise typer.Exit(0) from None
        except Exception as error:
            if os.environ.get(DEBUG_ENV) == "1":
                traceback.print_exc()
            stderr.print(
                f"[red]internal error:[/] {type(error).__name__}:"
                f" {escape(' '.join(str(error).split()))}"
                f" (a bug in cachecast; set {DEBUG_ENV}=1 for the traceback)",
                markup=True,
            )
            raise typer.Exit(EXIT_INTERNAL) from None

    return wrapper


def silence_stdout() -> None:
    """Point stdout at /dev/null, so that the interpreter's last flush of a pipe whose reader
    has gone raises nothing more."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass  # stdout is not a real file (a test's capture): nothing will flush to the pipe
    finally:
        os.close(devnull)


def contract_store(database_url: str | None, *, must_exist: bool = True) -> ContractStore:
    """The contract store of ``--database-url`` (or the default), which must be migrated.

    A read command never creates anything: a SQLite file that does not exist is bad
    configuration, not a new empty database."""
    from cachecast.contracts import ContractStore
    from cachecast.core import db
    from cachecast.core.errors import NotMigratedError

    url = db.resolve_database_url(database_url)
    if must_exist:
        db.require_existing(url)
    if not db.is_current(url):
        raise NotMigratedError(
            f"the contract database at {db.display_url(url)} is not migrated:"
            " run `cachecast db upgrade`",
            location=Location(field="--database-url"),
        )
    return ContractStore(url)


def split_targets(values: list[str] | None) -> list[str] | None:
    """``--target a,b --target c`` as [a, b, c]: a list in one option, as the API takes it."""
    if values is None:
        return None
    return [part.strip() for value in values for part in value.split(",") if part.strip()]


def parse_day(text: str | None, option: str = "--at") -> Any:
    """``YYYY-MM-DD`` as a date (None stays None)."""
    import datetime as dt

    if text is None:
        return None
    try:
        return dt.date.fromisoformat(text)
    except ValueError:
        raise BadInputError(
            f"{text!r} is not a date (YYYY-MM-DD)", location=Location(field=option)
        ) from None


def expand_globs(paths: list[Path]) -> list[Path]:
    """Arguments with glob characters that name no file expand to their matches, sorted
    (for globs the shell did not expand, e.g. quoted ones)."""
    import glob

    expanded: list[Path] = []
    for path in paths:
        text = str(path)
        matches = sorted(glob.glob(text)) if any(char in text for char in "*?[") else []
        if matches and not path.exists():
            expanded.extend(Path(match) for match in matches)
        else:
            expanded.append(path)  # a literal name, or a glob matching nothing: "no such file"
    return expanded


def log_of(
    paths: list[Path],
    *,
    log_format: str | None = None,
    results: Path | None = None,
    model: str | None = None,
    provider: str | None = None,
    strict: bool = False,
) -> LogInput:
    """The log a command reads, from its options: bad lines are skipped (``--strict``:
    the first one stops the run)."""
    from cachecast.passes.log_input import LogInput

    return LogInput.of_paths(
        paths,
        format=log_format,
        results=results,
        default_model=model,
        default_provider=provider,
        on_bad_record="stop" if strict else "skip",
    )


def print_skipped(errors: list[InputIssue], skipped_lines: int) -> None:
    """Every skipped log line on stderr, naming file, line and field, then their count."""
    for issue in errors:
        stderr.print(issue.one_line(), markup=False)
    if skipped_lines:
        stderr.print(f"[yellow]skipped {skipped_lines} bad line(s)[/]", markup=True)


def exit_if_files_unreadable(errors: list[InputIssue]) -> None:
    """After the report: a run over many files in which some file could not be read at
    all (its issue has field "file" and no line) exits 2 (docs/errors.md, "Runs over many
    files"), the files read having been reported on."""
    unreadable = [i for i in errors if i.field == "file" and i.line is None and i.record is None]
    if unreadable:
        stderr.print(
            f"error: {len(unreadable)} file(s) could not be read (listed above); exit 2",
            markup=False,
        )
        raise typer.Exit(EXIT_BAD_INPUT)


class BarProgress:
    """The app's progress protocol on a rich bar (on a terminal) or on nothing."""

    def __init__(self, bar: RichProgress | None) -> None:
        self._bar = bar
        self._task: TaskID | None = None

    def start(self, label: str, total: int | None) -> None:
        if self._bar is not None:
            self._task = self._bar.add_task(label, total=total)

    def advance(self, count: int) -> None:
        if self._bar is not None and self._task is not None:
            self._bar.advance(self._task, count)


@contextmanager
def progress_bar(console: Console | None = None) -> Iterator[BarProgress]:
    """A transient rich bar (description, bar, done/total, elapsed) on ``console`` (stderr)
    when it is a terminal; nothing otherwise (pipes, tests)."""
    console = _STDERR.console() if console is None or console is stderr else console
    if not console.is_terminal:
        yield BarProgress(None)
        return
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    bar = Progress(
        TextColumn("{task.description}", style="progress.description", markup=False),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=console,
        transient=True,
    )
    with bar:
        yield BarProgress(bar)
