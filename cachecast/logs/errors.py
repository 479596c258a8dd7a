"""Errors of the log readers, on the one error tree (``cachecast.core.errors``): one bad record
(file, line, field, reason), and a file that cannot be read as a whole (empty, over the size
bound, of no format cachecast reads).

The file-level errors are LogRecordErrors too (at line 1, field ``<file>`` or ``<format>``), so
that every caller that reports bad log lines reports them the same way, with the file named.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any

from cachecast.core.errors import LogRecordError

# LogRecordError is a malformed log line: file, 1-based line number, the field at fault and
# why. For whole-document formats (one JSON or YAML document) ``line`` is the record's line in
# the file where the reader knows it, else its 1-based position, and ``field`` spells the path
# inside the document (``observations[3].usageDetails.input``).
__all__ = [
    "BadRecords",
    "LogFileError",
    "LogRecordError",
    "UnknownLogFormatError",
    "bad_line_count",
    "bad_records_of",
]


class LogFileError(LogRecordError):
    """The file as a whole cannot be read (empty, over the size bound, not text, a format
    name that does not exist, a results file that does not match its requests)."""

    FIELD = "<file>"

    def __init__(self, file: str, reason: str) -> None:
        super().__init__(file, 1, self.FIELD, reason)

    def one_line(self) -> str:
        return f"{self.file}: {self.reason}"


class UnknownLogFormatError(LogFileError):
    """No reader fits the file: the message lists each format tried and why it did not fit."""

    FIELD = "<format>"

    def __init__(self, file: str, tried: list[tuple[str, str]]) -> None:
        self.tried = tried
        # Formats that failed for the same reason are named together, in order.
        grouped: dict[str, list[str]] = {}
        for name, why in tried:
            grouped.setdefault(why, []).append(name)
        reasons = "; ".join(f"{', '.join(names)}: {why}" for why, names in grouped.items())
        super().__init__(
            file,
            f"not a log format cachecast reads (give --format to force one). "
            f"Tried {len(tried)} formats: {reasons}",
        )


# How many bad records a pass keeps whole (what a report lists); the others are counted.
KEPT_BAD_RECORDS = 1_000


class BadRecords(list[LogRecordError]):
    """The bad records of one pass over a log: the first ``KEPT_BAD_RECORDS`` kept whole
    (those a report lists) and errors about a whole file (no line) always, every one
    counted: ``total``, ``lines`` (distinct lines or records: a reader reports one line's
    errors together) and ``by_source``. A log of 400,000 bad lines kept an error of about a
    kilobyte for each (docs/limits.md, "Bad lines")."""

    def __init__(self) -> None:
        super().__init__()
        self.total = 0
        self.lines = 0
        self.by_source: dict[str, int] = {}
        self._last: tuple[str | None, int | None, int | None] | None = None

    def append(self, error: LogRecordError) -> None:
        where = error.location
        key = (where.source, where.line, where.record)
        self.total += 1
        if key != self._last:
            self.lines += 1
            self._last = key
        source = where.source or ""
        self.by_source[source] = self.by_source.get(source, 0) + 1
        if self._keeps(error):
            super().append(error)

    def _keeps(self, error: LogRecordError) -> bool:
        return len(self) < KEPT_BAD_RECORDS or error.location.line is None

    def extend(self, errors: Iterable[LogRecordError]) -> None:
        for error in errors:
            self.append(error)

    def __reduce__(self) -> tuple[Any, ...]:
        # Pickle (Ray ships a pass's errors between processes) re-appends a list's items
        # before it restores the counts: rebuilt from both at once instead.
        return (_rebuilt, (list(self), self.total, self.lines, dict(self.by_source)))

    def merge(
        self,
        other: BadRecords,
        relocate: Callable[[LogRecordError], LogRecordError] | None = None,
    ) -> None:
        """Add ``other``'s counts and the errors it kept (each through ``relocate``)."""
        self.total += other.total
        self.lines += other.lines
        for source, count in other.by_source.items():
            self.by_source[source] = self.by_source.get(source, 0) + count
        for error in other:
            if self._keeps(error):
                super().append(relocate(error) if relocate is not None else error)


def _rebuilt(
    kept: list[LogRecordError], total: int, lines: int, by_source: dict[str, int]
) -> BadRecords:
    found = BadRecords()
    list.extend(found, kept)
    found.total, found.lines, found.by_source = total, lines, by_source
    return found


def bad_line_count(errors: Sequence[LogRecordError]) -> int:
    """Distinct lines or records among ``errors`` (counted past those kept)."""
    if isinstance(errors, BadRecords):
        return errors.lines
    return len({(e.location.source, e.location.line, e.location.record) for e in errors})


def bad_records_of(errors: Sequence[LogRecordError], source: str) -> int:
    """How many of ``errors`` are about ``source`` (counted past those kept)."""
    if isinstance(errors, BadRecords):
        return errors.by_source.get(source, 0)
    return sum(error.location.source == source for error in errors)
