"""What every command's human output shares: one stdout console, money and counts for
people, and tables that fit the terminal.

- :func:`stdout_console`: a terminal's own width (or ``COLUMNS``); a pipe or file gets lines
  as long as their content (no wrapping, no "…"), so that piped output stays machine-friendly.
  A reader that stops early (``| head``) ends the command quietly with exit 0 (the
  ``command`` wrapper in :mod:`cachecast.cli.common`).
- :func:`money`, :func:`count`, :func:`tokens`, :func:`percent`: display forms only. Full
  precision stays in ``--json``/``--csv`` (docs/cli.md, "Numbers").
- :func:`fit`: a table whose columns do not fit drops its optional columns, last first, and
  never splits an identifier or a number (their columns do not wrap).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from decimal import ROUND_HALF_EVEN, Decimal

from rich.console import Console, Group, RenderableType
from rich.measure import Measurement
from rich.table import Table
from rich.text import Text

# Wide enough for any table row: piped output is never wrapped by the console.
PIPE_WIDTH = 4096


class _Stdout(Console):
    def on_broken_pipe(self) -> None:
        # rich exits 1 here; the command wrapper turns this into a quiet exit 0.
        self.quiet = True
        raise BrokenPipeError


def stdout_console() -> Console:
    """The console a command prints its report on (see the module docstring)."""
    probe = Console(file=sys.stdout)
    width = None if probe.is_terminal or os.environ.get("COLUMNS") else PIPE_WIDTH
    return _Stdout(file=sys.stdout, width=width, highlight=False, markup=False)


def money(amount: Decimal | None) -> str:
    """Dollars for people: ``-$20.00``, ``$1,234.57``, ``$0.25``, ``$0.0038``, ``$0.000012``.

    At least 1: cents. Under 1: four decimal places at most, trailing zeros dropped down to
    cents. Under $0.0001: two significant digits. Half-even rounding; empty for None."""
    if amount is None:
        return ""
    sign = "-" if amount < 0 else ""
    size = abs(amount)
    if size >= 1 or size == 0:
        text = f"{size.quantize(Decimal('0.01'), rounding=ROUND_HALF_EVEN):,}"
    elif size >= Decimal("0.0001"):
        text = f"{size.quantize(Decimal('0.0001'), rounding=ROUND_HALF_EVEN):f}".rstrip("0")
        whole, _, cents = text.partition(".")
        text = f"{whole}.{cents.ljust(2, '0')}"
    else:
        places = -size.adjusted() + 1  # two significant digits
        text = f"{size.quantize(Decimal(1).scaleb(-places), rounding=ROUND_HALF_EVEN):f}"
    if text.strip("0.,") == "":
        sign = ""  # rounded to zero: no "-$0.00"
    return f"{sign}${text}"


def count(value: int | None) -> str:
    """A count with thousands separators (``21,776``); empty for None."""
    return "" if value is None else f"{value:,}"


def tokens(value: int) -> str:
    """A token count in a narrow column: 987, 9,999, 12.3k, 4.56M."""
    if value < 10_000:
        return f"{value:,}"
    if value < 1_000_000:
        return f"{value / 1000:.1f}k"
    return f"{value / 1_000_000:.2f}M"


def percent(share: Decimal | float | None, places: int = 1) -> str:
    """A share (0..1) as a percentage, ``65.8%``; empty for None."""
    return "" if share is None else f"{float(share):.{places}%}"


def fit(table: Table, console: Console, *, optional: Sequence[str] = ()) -> RenderableType:
    """``table`` with the columns named in ``optional`` dropped, last first, until its
    natural width (every cell on one line) fits ``console``; a caption says which were left
    out. Where even the narrowest table does not fit, the rows are stacked instead: the
    first cell (the row's name) on a line of its own, then one ``header: value`` line per
    cell, so that no name is ever cut or split."""
    dropped: list[str] = []
    droppable = list(reversed(optional))
    while droppable and _natural_width(table, console) > console.width:
        name = droppable.pop(0)
        index = next(
            (i for i, column in enumerate(table.columns) if str(column.header) == name), None
        )
        if index is not None:
            table.columns.pop(index)
            for position, column in enumerate(table.columns):
                column._index = position  # rich pads edge columns by their index
            dropped.append(name)
    if dropped:
        note = f"left out to fit {console.width} columns: {', '.join(reversed(dropped))}"
        table.caption = f"{table.caption}; {note}" if table.caption else note
    if _natural_width(table, console) > console.width and table.columns:
        return _stacked(table)
    return table


def _stacked(table: Table) -> RenderableType:
    columns = table.columns
    lines: list[RenderableType] = []
    if table.title:
        lines.append(Text(str(table.title), style="bold"))
    for row in range(table.row_count):
        cells = [column._cells[row] for column in columns]
        # Cells are recorded text (file names, model ids): never read as markup.
        lines.append(Text(cells[0]) if isinstance(cells[0], str) else cells[0])
        for column, cell in zip(columns[1:], cells[1:], strict=True):
            text = Text(f"  {column.header}: ")
            text.append(Text(cell) if isinstance(cell, str) else str(cell))
            lines.append(text)
    if table.caption:
        lines.append(Text(str(table.caption), style="dim"))
    return Group(*lines)


# A prose column (one that wraps) counts this wide when a table is fitted: it wraps the rest.
PROSE_WIDTH = 24


def _natural_width(table: Table, console: Console) -> int:
    """The table's width with every name and number on one line and its prose columns
    wrapped to ``PROSE_WIDTH``."""
    prose = [column for column in table.columns if not column.no_wrap]
    saved = [column.max_width for column in prose]
    for column in prose:
        column.max_width = min(column.max_width or PROSE_WIDTH, PROSE_WIDTH)
    try:
        return Measurement.get(console, console.options.update_width(PIPE_WIDTH), table).maximum
    finally:
        for column, width in zip(prose, saved, strict=True):
            column.max_width = width


def identifier_column(table: Table, header: str, **options: object) -> None:
    """A column of names (targets, models, files): never wrapped inside a name."""
    table.add_column(header, no_wrap=True, overflow="ellipsis", **options)  # type: ignore[arg-type]


def number_column(table: Table, header: str) -> None:
    """A right-aligned column of figures: never broken inside a number."""
    table.add_column(header, justify="right", no_wrap=True)
