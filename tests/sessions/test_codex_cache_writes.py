"""Codex's ``cache_write_input_tokens`` (recent rollouts' token counts: a subset of
``input_tokens``, as ``cached_input_tokens`` is; docs/clients.md, "Format variants") is read as
the request's cache writes, billed at the contract's write price, and refused where it and the
reads exceed the prompt. Older rollouts, without the field, report no writes. Rollouts are
hand-written; bills are worked by hand in the comments."""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path

from tests.logs.helpers import read, totals
from tests.sessions.test_variants import context, count, meta, rollout, usage
from tests.usecases.test_usage import report_of

DAY = "2026-12-04"  # gpt-5.6-sol's stored version from 2026-12-03: $4 in, $20 out per MTok,
# reads at 0.1x, writes at 1.25x under its default 30-minute option (docs/contracts.md)


def written(uncached: int, cached: int, writes: int, output: int) -> dict[str, int]:
    found = usage(uncached + writes, cached, output)  # input = uncached + cached + writes
    found["cache_write_input_tokens"] = writes
    return found


def one_request(path: Path, counts: dict[str, int]) -> Path:
    return rollout(
        path,
        [
            meta("w", f"{DAY}T10:00:00Z", cli_version="0.153.4"),
            context(f"{DAY}T10:00:00Z", model="gpt-5.6-sol"),
            count(f"{DAY}T10:00:05Z", counts, counts),
        ],
    )


def test_writes_a_rollout_reports_are_billed_as_writes(
    migrated_db_url: str, tmp_path: Path
) -> None:
    path = one_request(
        tmp_path / f"rollout-{DAY}T10-00-00-w.jsonl", written(1_000, 2_000, 3_000, 100)
    )
    report = report_of(migrated_db_url, path)
    totals = report.totals
    assert (totals.requests, totals.prompt_tokens, totals.cache_read_tokens) == (1, 6_000, 2_000)
    assert totals.cache_write_5m_tokens + totals.cache_write_1h_tokens == 3_000
    # 1,000 uncached x $4/M = 0.004; 2,000 read x $0.40/M = 0.0008; 3,000 written x $5/M
    # (1.25 x $4) = 0.015; 100 out x $20/M = 0.002: $0.0218 (writes billed as input: $0.0188)
    assert Decimal(totals.cost) == Decimal("0.0218")


def test_the_record_reader_reads_the_same_writes(tmp_path: Path) -> None:
    counts = written(1_000, 2_000, 3_000, 100)
    found = read(one_request(tmp_path / f"rollout-{DAY}T10-00-00-w.jsonl", counts))
    assert found.format == "codex"
    assert totals(found.requests) == {"input": 6_000, "read": 2_000, "write": 3_000, "output": 100}


def test_writes_and_reads_past_the_prompt_are_refused(tmp_path: Path) -> None:
    counts = written(0, 2_000, 3_000, 100)
    counts["input_tokens"] = 4_000  # 2,000 read + 3,000 written > 4,000
    found = read(one_request(tmp_path / f"rollout-{DAY}T10-00-00-w.jsonl", counts))
    assert found.requests == []
    (error,) = found.errors
    assert "cache_write_input_tokens" in str(error)


def test_an_older_rollout_reports_no_writes(tmp_path: Path) -> None:
    found = read(
        one_request(tmp_path / f"rollout-{DAY}T10-00-00-w.jsonl", usage(1_000, 2_000, 100))
    )
    (request,) = found.requests
    assert request.observed is not None and request.observed.cache_write_tokens is None
