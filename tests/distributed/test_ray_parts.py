"""Files cut into byte ranges and tokenized on several workers: the same report and rows.

The expected values are the single-process run's own output (the claim is exact
partitioning, as in test_ray_estimate). The logs are cut small (many parts per file) so
that cuts land between requests of one session, after bad and blank lines, and before
records that have no timestamp of their own (which take the previous record's, across the
cut).
"""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path
from typing import Any

import pytest

from cachecast.contracts import ContractStore
from cachecast.core.errors import LogRecordError
from cachecast.passes.log_input import LogInput
from cachecast.simulator.pricing import PerRequestRow
from cachecast.usecases.estimate import EstimateRequest, estimate
from tests.distributed.conftest import write_multi_tenant_logs

pytestmark = pytest.mark.ray

AT = dt.date(2026, 11, 1)
TARGETS = ["openai:gpt-4o", "anthropic:claude-sonnet-4-5", "google:gemini-2.5-flash"]


def run_both(
    request: EstimateRequest, url: str, part_bytes: int
) -> tuple[dict[str, Any], list[dict[str, Any]], dict[str, Any], list[dict[str, Any]], Any]:
    from cachecast.passes.ray.executor import RayExecutor

    store = ContractStore(url)
    single_rows: list[PerRequestRow] = []
    single = estimate(request, store, on_row=single_rows.append)
    executor = RayExecutor(buckets=5, chunk_requests=50, part_bytes=part_bytes)
    ray_rows: list[PerRequestRow] = []
    partitioned = estimate(request, store, executor=executor, on_row=ray_rows.append)
    return (
        single.model_dump(mode="json"),
        [row.as_record() for row in single_rows],
        partitioned.model_dump(mode="json"),
        [row.as_record() for row in ray_rows],
        executor,
    )


def test_one_file_cut_into_many_parts_equals_single_process(
    ray_cluster: str, migrated_db_url: str, tmp_path: Path
) -> None:
    (path,) = write_multi_tenant_logs(tmp_path, files=1, requests=240)
    request = EstimateRequest(
        log=LogInput.of_paths([path]), targets=TARGETS, at=AT, auto_cache_control=True
    )
    part_bytes = path.stat().st_size // 23
    single, single_rows, partitioned, ray_rows, executor = run_both(
        request, migrated_db_url, part_bytes
    )
    assert partitioned == single
    assert ray_rows == single_rows
    # One file, many workers, for the exact tokenizer (gpt-4o's o200k pass); the passes of
    # approximate tokenizer (one pass for Anthropic and Gemini) is calibrated as the file is
    # read, so it reads the file whole, as one process does.
    assert [stats.parts >= 20 for stats in executor.stats] == [True, False]
    assert executor.stats[1].parts == 1
    # Hits to lose under automatic and explicit caching (these prompts are below Gemini's
    # 2,048-token minimum; its replay of compact requests is checked in test_compact).
    assert all(target["cache_read_tokens"] > 0 for target in single["targets"][:2])


def log_with_gaps(directory: Path) -> Path:
    """The multi-tenant log with two of every three records' timestamps removed (they take
    the previous one's), a bad line every 17 lines and blank lines every 11."""
    (source,) = write_multi_tenant_logs(directory, files=1, requests=180)
    lines = []
    for number, text in enumerate(source.read_text(encoding="utf-8").splitlines()):
        record = json.loads(text)
        if number % 3:
            del record["timestamp"]
        lines.append(json.dumps(record))
        if number % 17 == 5:
            lines.append('{"timestamp": 1767600000, "request": ')  # cut short: invalid JSON
        if number % 11 == 3:
            lines.append("")
    path = directory / "gaps.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_records_without_timestamps_and_bad_lines_across_cuts(
    ray_cluster: str, migrated_db_url: str, tmp_path: Path
) -> None:
    from cachecast.passes.ray.planning import plan_parts

    path = log_with_gaps(tmp_path)
    log = LogInput.of_paths([path])
    part_bytes = path.stat().st_size // 31
    # The situation under test: parts after the first that open on a record without a
    # timestamp of its own (read from the file here, independently of the reader).
    data = path.read_bytes()
    openings = [
        data[part.lines.start :].split(b"\n", 1)[0]
        for part in plan_parts(log, part_bytes)
        if part.lines is not None and part.lines.start > 0
    ]
    assert sum(b'"timestamp"' not in line for line in openings) >= 5
    request = EstimateRequest(log=log, targets=TARGETS[:2], at=AT, auto_cache_control=True)
    single, single_rows, partitioned, ray_rows, _ = run_both(request, migrated_db_url, part_bytes)
    assert partitioned == single
    assert ray_rows == single_rows
    assert single["skipped_lines"] == len([n for n in range(180) if n % 17 == 5])
    assert single["targets"][0]["cache_read_tokens"] > 0


def test_strict_reading_stops_at_the_same_first_bad_line(
    ray_cluster: str, migrated_db_url: str, tmp_path: Path
) -> None:
    from cachecast.passes.ray.executor import RayExecutor

    path = log_with_gaps(tmp_path)
    request = EstimateRequest(
        log=LogInput.of_paths([path], on_bad_record="stop"), targets=TARGETS[:1], at=AT
    )
    store = ContractStore(migrated_db_url)
    with pytest.raises(LogRecordError) as single:
        estimate(request, store)
    executor = RayExecutor(buckets=3, part_bytes=path.stat().st_size // 9)
    with pytest.raises(LogRecordError) as partitioned:
        estimate(request, store, executor=executor)
    assert partitioned.value.one_line() == single.value.one_line()
    assert single.value.location.line == 8  # records 0-3, a blank line, records 4-5, the bad one


def test_a_block_trace_cut_into_parts_equals_single_process(
    ray_cluster: str, migrated_db_url: str, mooncake_trace: Path
) -> None:
    request = EstimateRequest(
        log=LogInput.of_paths([mooncake_trace]), targets=["openai:gpt-4o"], at=AT
    )
    single, single_rows, partitioned, ray_rows, executor = run_both(
        request, migrated_db_url, -(-mooncake_trace.stat().st_size // 6)
    )
    assert partitioned == single
    assert ray_rows == single_rows
    assert executor.stats[0].parts == 6
    assert single["targets"][0]["cache_read_tokens"] > 0


def restamped(path: Path, name: str, stamp: Any) -> Path:
    """``path``'s records with ``stamp(number)`` as the timestamp of record ``number``."""
    lines = path.read_text(encoding="utf-8").splitlines()
    out = []
    for number, text in enumerate(lines):
        record = json.loads(text)
        record["timestamp"] = stamp(number)
        out.append(json.dumps(record))
    written = path.parent / name
    written.write_text("\n".join(out) + "\n", encoding="utf-8")
    return written


def test_chunks_replayed_as_they_come_and_again_when_a_cut_goes_back_in_time(
    ray_cluster: str, migrated_db_url: str, tmp_path: Path
) -> None:
    from cachecast.passes.ray.replayers import SPECULATION_HOLD_SECONDS

    (path,) = write_multi_tenant_logs(tmp_path, files=1, requests=240)
    start = 1_767_600_000
    # Records 5 s apart, every seventh stamped 3 s before the one above it (a writer a little
    # out of order): every bucket with requests is replayed as its chunks come, and kept.
    assert 2 * SPECULATION_HOLD_SECONDS < 5 * 240 / 2  # the first half outlasts the hold
    nearly = restamped(path, "nearly.jsonl", lambda n: start + 5 * n - 8 * (n % 7 == 6))
    request = EstimateRequest(log=LogInput.of_paths([nearly]), targets=TARGETS[:1], at=AT)
    part_bytes = path.stat().st_size // 7
    single, single_rows, partitioned, ray_rows, executor = run_both(
        request, migrated_db_url, part_bytes
    )
    assert (partitioned, ray_rows) == (single, single_rows)
    (stats,) = executor.stats
    assert stats.streamed >= 1 and stats.replayed_again == 0
    # The second half stamped an hour earlier than the first (within the single process's
    # reorder window): the chunks after the middle sort before what was replayed, so every
    # bucket they reach is replayed again, sorted.
    late = restamped(path, "late.jsonl", lambda n: start + 5 * n - 3600 * (n >= 120))
    request = EstimateRequest(log=LogInput.of_paths([late]), targets=TARGETS[:1], at=AT)
    single, single_rows, partitioned, ray_rows, executor = run_both(
        request, migrated_db_url, part_bytes
    )
    assert (partitioned, ray_rows) == (single, single_rows)
    assert executor.stats[0].replayed_again >= 1
    assert single["targets"][0]["cache_read_tokens"] > 0


def test_tapered_cuts_shrink_towards_the_end() -> None:
    from cachecast.passes.ray.planning import tapered_cuts

    # By hand, 2 CPUs: each part a quarter of what is left from its start (floored), until
    # that is under 10; the last 33 bytes then in 33 // 10 = 3 parts of 11.
    assert tapered_cuts(100, 2, 10) == [25, 43, 57, 67, 78, 89]
    assert tapered_cuts(15, 2, 10) == []  # under two smallest parts: one part


def test_one_file_in_tapered_parts_equals_single_process(
    ray_cluster: str, migrated_db_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import cachecast.passes.ray.planning as planning
    from cachecast.passes.ray.executor import RayExecutor

    (path,) = write_multi_tenant_logs(tmp_path, files=1, requests=240)
    # The default plan (no part_bytes) on a small file: parts from a small smallest part.
    monkeypatch.setattr(planning, "MIN_PART_BYTES", path.stat().st_size // 30)
    request = EstimateRequest(log=LogInput.of_paths([path]), targets=TARGETS[:1], at=AT)
    store = ContractStore(migrated_db_url)
    single_rows: list[PerRequestRow] = []
    single = estimate(request, store, on_row=single_rows.append)
    executor = RayExecutor(buckets=5, chunk_requests=20)
    ray_rows: list[PerRequestRow] = []
    partitioned = estimate(request, store, executor=executor, on_row=ray_rows.append)
    assert partitioned.model_dump(mode="json") == single.model_dump(mode="json")
    assert [row.as_record() for row in ray_rows] == [row.as_record() for row in single_rows]
    assert executor.stats[0].parts >= 10


def test_files_sharing_a_cache_are_calibrated_together_on_a_worker(
    ray_cluster: str, migrated_db_url: str, tmp_path: Path
) -> None:
    """Files with timestamps share the run's cache and its calibration (the first file given
    sizes the shared system prompt); a file without timestamps keeps both its own. A worker
    reads them in one part, in the order one process does: the same report and rows."""
    from tests.predictions.test_calibration import FROM_READ, write_pair

    writing, reading = write_pair(tmp_path)
    own_folder = tmp_path / "own"
    own_folder.mkdir()
    _, untimed = write_pair(own_folder, timestamps=False)
    request = EstimateRequest(
        log=LogInput.of_paths([reading, writing, untimed]),
        targets=["anthropic:claude-sonnet-4-5"],
        at=AT,
    )
    single, single_rows, partitioned, ray_rows, executor = run_both(
        request, migrated_db_url, 1 << 20
    )
    assert partitioned == single
    assert ray_rows == single_rows
    assert [stats.parts for stats in executor.stats] == [1]
    # The write's prefix is read once, by the timed read (the untimed file reads only its own
    # cache, in which nothing was written before it).
    assert single["targets"][0]["cache_read_tokens"] == FROM_READ
