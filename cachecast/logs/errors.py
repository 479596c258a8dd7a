"""Errors of the log readers, on the one error tree (``cachecast.core.errors``): one bad record
(file, line, field, reason), and a file that cannot be read as a whole (empty, over the size
bound, of no format cachecast reads).

The file-level errors are LogRecordErrors too (at line 1, field ``<file>`` or ``<format>``), so
that every caller that reports bad log lines reports them the same way, with the file named.
"""

from __future__ import annotations

from cachecast.core.errors import LogRecordError

# LogRecordError is a malformed log line: file, 1-based line number, the field at fault and
# why. For whole-document formats (one JSON or YAML document) ``line`` is the record's line in
# the file where the reader knows it, else its 1-based position, and ``field`` spells the path
# inside the document (``observations[3].usageDetails.input``).
__all__ = ["LogFileError", "LogRecordError", "UnknownLogFormatError"]


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
