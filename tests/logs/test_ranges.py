"""A JSON-lines file cut into byte ranges reads, range by range, exactly as the whole file.

Expected values come from the file's bytes themselves: a range must start at offset 0 or
just after a newline, the ranges must tile the file, and a range's first line number is one
plus the newlines before it (counted here with ``bytes.count``).
"""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import pytest

from cachecast.logs import open_log
from cachecast.logs.ranges import LineRange, open_range, split_at, split_lines
from cachecast.logs.stream import Item


def lines_file(tmp_path: Path, lines: list[bytes], name: str = "log.jsonl") -> Path:
    path = tmp_path / name
    path.write_bytes(b"".join(lines))
    return path


def record(number: int, padding: int = 0) -> bytes:
    body = {"prompt": "x" * padding, "request_id": f"r{number}"}
    return json.dumps({"timestamp": number, "request": body}).encode() + b"\n"


def check_tiling(path: Path, ranges: list[LineRange]) -> None:
    data = path.read_bytes()
    assert ranges[0].start == 0 and ranges[-1].end is None
    for before, after in itertools.pairwise(ranges):
        assert before.end == after.start  # no gap, no overlap
    for part in ranges:
        assert part.start == 0 or data[part.start - 1 : part.start] == b"\n"
        assert part.first_line == data[: part.start].count(b"\n") + 1
        assert part.end is None or part.start < part.end


def read_items(stream_items: object) -> list[tuple[int, object]]:
    items: list[Item] = list(stream_items)  # type: ignore[call-overload]
    return [(line, value if isinstance(value, dict) else str(value)) for line, value in items]


def whole_and_ranges(path: Path, parts: int) -> tuple[list[tuple[int, object]], list[LineRange]]:
    ranges = split_lines(path, parts)
    check_tiling(path, ranges)
    pieces: list[tuple[int, object]] = []
    for part in ranges:
        pieces += read_items(open_range(path, part))
    return pieces, ranges


@pytest.mark.parametrize("parts", [2, 3, 7, 50])
def test_ranges_of_a_plain_log_read_as_the_whole(tmp_path: Path, parts: int) -> None:
    path = lines_file(tmp_path, [record(n, padding=(n * 37) % 300) for n in range(40)])
    pieces, ranges = whole_and_ranges(path, parts)
    assert read_items(open_log(path)) == pieces
    # Parts of several lines each get one cut apiece; 50 parts of 40 unequal lines cannot.
    assert len(ranges) == parts if parts <= 7 else 1 < len(ranges) <= 40


def test_awkward_places_blank_lines_bad_lines_crlf_and_no_final_newline(tmp_path: Path) -> None:
    lines = [
        record(0),
        b"\n",
        b"   \n",
        b"{not json\n",
        record(1, padding=5000),  # a line much longer than a part
        b"[1, 2]\n",  # JSON, but not an object
        record(2).replace(b"\n", b"\r\n"),
        b"\n",
        record(3).rstrip(b"\n"),  # the file ends without a newline
    ]
    path = lines_file(tmp_path, lines)
    for parts in (2, 4, 9, 200):
        pieces, ranges = whole_and_ranges(path, parts)
        assert read_items(open_log(path)) == pieces
        # The long line (most of the file) holds several targets: fewer ranges than asked.
        assert len(ranges) == 2 if parts == 2 else len(ranges) < parts
    lines_of = [line for line, _ in pieces]
    assert lines_of == [1, 4, 5, 6, 7, 9]  # blank lines 2, 3 and 8 carry nothing


def test_a_target_on_a_line_start_cuts_there(tmp_path: Path) -> None:
    # Two lines of exactly 10 bytes: the middle target (10) is the second line's start.
    path = lines_file(tmp_path, [b'{"a": 11}\n', b'{"a": 22}\n'])
    assert split_lines(path, 2) == [LineRange(0, 10, 1), LineRange(10, None, 2)]


def test_one_part_or_a_single_line_is_the_whole_file(tmp_path: Path) -> None:
    path = lines_file(tmp_path, [record(0, padding=100)])
    assert split_lines(path, 1) == [LineRange(0, None, 1)]
    assert split_lines(path, 5) == [LineRange(0, None, 1)]


def test_a_file_larger_than_the_read_buffer(tmp_path: Path) -> None:
    # 3 MB over the 1 MiB read buffer: cuts and line numbers across buffer boundaries.
    path = lines_file(tmp_path, [record(n, padding=(n * 7919) % 6000) for n in range(1000)])
    pieces, ranges = whole_and_ranges(path, 13)
    assert len(ranges) == 13
    assert read_items(open_log(path)) == pieces


def test_split_at_cuts_at_the_first_line_start_at_or_after_each_offset(tmp_path: Path) -> None:
    lines = [record(number, padding=number * 7) for number in range(30)]
    path = lines_file(tmp_path, lines)
    starts = list(itertools.accumulate(len(line) for line in lines))  # line starts after 0
    # One offset on a line start, one inside a line, two inside the same line (one cut).
    wanted = [starts[3], starts[9] + 2, starts[17] + 1, starts[17] + 3]
    ranges = split_at(path, wanted)
    check_tiling(path, ranges)
    assert [part.start for part in ranges] == [0, starts[3], starts[10], starts[18]]
    assert [part.first_line for part in ranges] == [1, 5, 12, 20]
    # Offsets outside the file make no cut.
    assert split_at(path, [0, path.stat().st_size + 5]) == [LineRange(0, None, 1)]
