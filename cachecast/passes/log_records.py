"""A log file of any format cachecast reads, as the records of a prompt set (``check`` and
``suggest`` read Claude Code, OTel, HAR, VCR, Codex, Langfuse... as ``estimate`` does).

The file is opened through the one format layer (``cachecast.logs.open_log``: detected, or
forced with ``format``; a batch file with its ``results``) and yields the canonical records
every reader produces, afresh on every iteration (a stream is read once, so each pass opens
the file again): no pass holds the log. Entries the format's reader cannot read as a request
(a recorded call with no body, say) are skipped, as ``estimate`` skips them, and counted in
``skipped`` (the first is kept in ``first_skipped``); a file with no request left is refused.
The first reading keeps only each record's line. ``spooled``: the file is
a temporary copy (a git revision's), removed when these records go.
"""

from __future__ import annotations

import weakref
from array import array
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from cachecast.core.errors import BadInputError, Location, LogRecordError
from cachecast.logs import open_log
from cachecast.logs.formats import detect_format


class ConvertedLogRecords:
    """The canonical records of the log at ``path`` (see the module docstring)."""

    def __init__(
        self,
        path: Path,
        name: str,
        *,
        format: str | None = None,
        results: Path | None = None,
        spooled: bool = False,
    ) -> None:
        self.path = path
        if spooled:  # a git revision's copy: removed with these records
            weakref.finalize(self, path.unlink, missing_ok=True)
        self.name = name
        self.format = format
        self.results = results
        self.lines = array("q")
        self.skipped = 0
        self.first_skipped: LogRecordError | None = None
        for line, _ in self._read(first=True):
            self.lines.append(line)
        if not self.lines:
            if self.first_skipped is not None:
                raise self.first_skipped
            raise BadInputError("no request found in the log", location=Location(source=name))

    def _read(self, *, first: bool = False) -> Iterator[tuple[int, dict[str, Any]]]:
        stream = open_log(self.path, format=self.format, results=self.results, name=self.name)
        for line, item in stream:
            if isinstance(item, LogRecordError):
                if first:
                    self.skipped += 1
                    self.first_skipped = self.first_skipped or item
                continue
            yield line, item

    def __len__(self) -> int:
        return len(self.lines)

    def __iter__(self) -> Iterator[dict[str, Any]]:
        for _, record in self._read():
            yield record

    def line_of(self, position: int) -> int | None:
        return self.lines[position] if 0 <= position < len(self.lines) else None


def is_own_format(path: Path) -> bool:
    """Whether the log at ``path`` is cachecast's own JSON lines (read as they are)."""
    try:
        fmt, _ = detect_format(path)
    except BadInputError:
        return True  # not recognised: the JSON-lines reader names what is wrong
    return fmt.name == "cachecast"


def is_recognised_log(path: Path) -> bool:
    """Whether some log format recognises the file (a YAML VCR cassette, say)."""
    try:
        detect_format(path)
    except BadInputError:
        return False
    return True
