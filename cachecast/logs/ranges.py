"""A JSON-lines log split into byte ranges at line starts, so that several workers read one
file: each range is read as the lines it holds, numbered as in the whole file.

Only formats with one independent record per line can be split this way (cachecast's own
JSON lines): other formats join lines (Claude Code responses over several lines, batch
results to their requests) or are one document. :func:`open_range` reads one range as a
:class:`LogStream` of the same records the whole file's stream has between those lines.

Splitting costs one sequential read of the file on the machine that splits it (to number
the lines; about as fast as the disk reads), not a parse.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from cachecast.logs import jsonl
from cachecast.logs.stream import READ_BUFFER_BYTES, LogStream

SPLITTABLE_FORMATS = frozenset({"cachecast"})


@dataclass(frozen=True, slots=True)
class LineRange:
    """Bytes ``start`` to ``end`` (None: to the end of the file), starting at line
    ``first_line`` (1-based)."""

    start: int
    end: int | None
    first_line: int


WHOLE_FILE = LineRange(0, None, 1)


def split_lines(path: Path, parts: int) -> list[LineRange]:
    """``path`` cut into at most ``parts`` ranges of about equal size, each ending at a line
    end (a line longer than a part makes fewer, longer parts); together they cover the file
    exactly once."""
    size = path.stat().st_size
    if parts <= 1 or size == 0:
        return [WHOLE_FILE]
    return split_at(path, [size * part // parts for part in range(1, parts)])


def split_at(path: Path, offsets: list[int]) -> list[LineRange]:
    """``path`` cut at the first line start at or after each of ``offsets`` (increasing
    byte offsets; cuts that fall on one line start make one), into ranges that together
    cover the file exactly once."""
    size = path.stat().st_size
    targets = sorted(offset for offset in offsets if 0 < offset < size)
    if not targets:
        return [WHOLE_FILE]
    cuts: list[tuple[int, int]] = []  # (offset of a line start, its line number)
    position, line = 0, 1
    with open(path, "rb", buffering=0) as handle:
        while targets:
            chunk = handle.read(READ_BUFFER_BYTES)
            if not chunk:
                break
            scanned = 0  # how much of the chunk is counted in ``line``
            while targets:
                # The first line start past the target: just after the next newline at or
                # after target - 1 (a target on a line start stays where it is).
                look_from = max(targets[0] - 1 - position, scanned)
                if look_from >= len(chunk):
                    break
                newline = chunk.find(b"\n", look_from)
                if newline < 0:
                    break
                line += chunk.count(b"\n", scanned, newline + 1)
                scanned = newline + 1
                cut = position + scanned
                if cut < size:
                    cuts.append((cut, line))
                while targets and targets[0] <= cut:
                    targets.pop(0)
            line += chunk.count(b"\n", scanned)
            position += len(chunk)
    ranges = []
    start, first = 0, 1
    for cut, cut_line in cuts:
        ranges.append(LineRange(start, cut, first))
        start, first = cut, cut_line
    ranges.append(LineRange(start, None, first))
    return ranges


def open_range(path: Path, part: LineRange, name: str | None = None) -> LogStream:
    """One range of a cachecast JSON-lines file as a stream of its records."""
    stream = LogStream(
        path,
        "cachecast",
        lambda opened: jsonl.read_range(opened, part.start, part.end, part.first_line),
        counts_itself=True,
    )
    if name is not None:
        stream.source = name
    return stream
