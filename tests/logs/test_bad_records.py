"""A pass's bad records: the first 1,000 kept whole, every one counted (docs/limits.md)."""

from __future__ import annotations

import pickle

from cachecast.logs.errors import KEPT_BAD_RECORDS, BadRecords, LogRecordError, bad_line_count


def test_counted_past_those_kept_and_a_file_error_always_kept() -> None:
    found = BadRecords()
    for line in range(1, 1_501):  # 1,500 bad lines, two errors on each
        found.append(LogRecordError("a.jsonl", line, "model", "expected a string"))
        found.append(LogRecordError("a.jsonl", line, "usage", "expected an object"))
    found.append(LogRecordError("b.jsonl", None, "file", "no readable record"))
    assert KEPT_BAD_RECORDS == 1_000
    assert len(found) == 1_001  # 1,000 kept, plus the error about file b
    assert found[-1].location.source == "b.jsonl"
    assert (found.total, found.lines) == (3_001, 1_501)  # 1,500 x 2 + 1; 1,500 lines + 1
    assert bad_line_count(found) == 1_501
    assert found.by_source == {"a.jsonl": 3_000, "b.jsonl": 1}
    merged = BadRecords()
    merged.merge(found)
    assert (len(merged), merged.total, merged.lines) == (1_001, 3_001, 1_501)


def test_a_plain_list_is_counted_by_its_distinct_lines() -> None:
    errors = [LogRecordError("a", 1, "x", "r"), LogRecordError("a", 1, "y", "r")]
    assert bad_line_count(errors) == 1


def test_pickled_with_its_counts() -> None:
    """Ray ships a pass's errors to the driver: the counts travel with the kept errors."""
    found = BadRecords()
    for line in range(1, 1_201):
        found.append(LogRecordError("a.jsonl", line, "model", "expected a string"))
    again = pickle.loads(pickle.dumps(found))
    assert (len(again), again.total, again.lines) == (1_000, 1_200, 1_200)
    assert again.by_source == {"a.jsonl": 1_200}
    assert again[0].location.line == 1 and again[-1].location.line == 1_000
