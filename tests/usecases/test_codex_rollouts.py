"""Every command reads a Codex rollout's requests alike (docs/clients.md, "Format variants"):
``estimate`` and ``tokenize`` through the record reader (a compressed rollout, or rollouts
read as any log), ``usage`` through the session reader, on hand-written rollouts of the
variants the two readers once read differently: running totals alone, a fork with its
parent, Codex's estimate after a compaction. Expected counts are the events' usage summed by
hand in the comments."""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest

from cachecast.contracts import ContractStore
from cachecast.passes.log_input import LogInput
from cachecast.usecases.estimate import EstimateReport, EstimateRequest, estimate
from cachecast.usecases.tokenize import RequestTokens, TokenizeRequest, tokenize
from tests.logs.helpers import read
from tests.sessions.test_reading import requests
from tests.sessions.test_variants import added, context, count, fork_pair, meta, rollout, usage
from tests.usecases.test_usage import report_of

TARGET = "openai:gpt-5-codex"
AT = "2026-01-10"


def packed(path: Path) -> Path:
    """The rollout gzipped beside itself (read by the record reader in ``estimate``)."""
    target = path.with_name(path.name + ".gz")
    target.write_bytes(gzip.compress(path.read_bytes()))
    return target


def estimated(url: str, *paths: Path, strict: bool = False) -> EstimateReport:
    log = LogInput.of_paths(list(paths), on_bad_record="stop" if strict else "skip")
    return estimate(EstimateRequest(log=log, targets=[TARGET], at=AT), ContractStore(url))


def observed(report: EstimateReport) -> tuple[int, int, int, int]:
    """(requests, prompt tokens, observed cache reads, output tokens) of the one target."""
    (target,) = report.targets
    assert target.reconciliation is not None
    return (
        target.requests,
        target.input_tokens,
        target.reconciliation.observed_cache_read_tokens,
        target.output_tokens,
    )


def totals_alone(folder: Path) -> Path:
    first, second = usage(5_000, 0, 100), usage(300, 5_120, 60)
    return rollout(
        folder / "rollout-2026-01-10T10-00-00-t.jsonl",
        [
            meta("t", "2026-01-10T10:00:00Z"),
            context("2026-01-10T10:00:00Z"),
            count("2026-01-10T10:00:05Z", first, None),
            count("2026-01-10T10:00:09Z", added(first, second), None),
        ],
    )


def test_running_totals_alone_read_as_their_growth_by_every_command(
    migrated_db_url: str, tmp_path: Path
) -> None:
    path = totals_alone(tmp_path)
    # Request 1 is the first total (5,000 prompt, none cached, 100 out); request 2 what the
    # total grew by: 10,420 - 5,000 = 5,420 prompt, 5,120 - 0 cached, 160 - 100 = 60 out.
    expected = [(5_000, 0, 100), (5_420, 5_120, 60)]
    record = read(path)
    assert record.errors == []
    assert [
        (r.observed.input_tokens, r.observed.cache_read_tokens, r.observed.output_tokens)
        for r in record.requests
        if r.observed is not None
    ] == expected
    assert [
        (r.facts.prompt_tokens, r.observed.read, r.observed.output) for r in requests(path)
    ] == expected
    # In all: 2 requests, 10,420 prompt tokens, 5,120 read, 160 out; compressed (the record
    # reader) or not (the session reader), and in ``usage``.
    for log in (packed(path), path):
        assert observed(estimated(migrated_db_url, log)) == (2, 10_420, 5_120, 160)
    totals = report_of(migrated_db_url, packed(path)).totals
    assert (totals.requests, totals.prompt_tokens, totals.cache_read_tokens) == (2, 10_420, 5_120)
    assert totals.output_tokens == 160


@pytest.mark.parametrize("fork_first", [False, True])
def test_a_fork_read_with_its_parent_counts_each_request_once(
    migrated_db_url: str, tmp_path: Path, fork_first: bool
) -> None:
    parent, fork = fork_pair(tmp_path)
    # The parent's two requests and the fork's own: prompts 5,000 + 5,420 + 5,576 = 15,996;
    # reads 0 + 5,120 + 5,376 = 10,496; output 100 + 60 + 40 = 200. Before, the record
    # reader counted the fork's copies again (5 requests).
    pair = [packed(fork), packed(parent)] if fork_first else [packed(parent), packed(fork)]
    report = estimated(migrated_db_url, *pair)
    assert report.errors == []
    assert observed(report) == (3, 15_996, 10_496, 200)
    # The parent's requests all counted in the fork (read first): no unreadable file, even
    # where a bad or empty file stops the run.
    assert observed(estimated(migrated_db_url, *pair, strict=True)) == (3, 15_996, 10_496, 200)
    totals = report_of(migrated_db_url, *pair).totals
    assert (totals.requests, totals.prompt_tokens, totals.cache_read_tokens) == (3, 15_996, 10_496)
    # tokenize reads the plain files one after the other through the record reader.
    found: list[RequestTokens] = []
    plain = [fork, parent] if fork_first else [parent, fork]
    report_tokens = tokenize(TokenizeRequest(log=LogInput.of_paths(plain)), on_request=found.append)
    assert (report_tokens.requests, report_tokens.input_tokens) == (3, 15_996)
    assert report_tokens.errors == []
    # Read first, the fork's copies are the ones counted, under the fork's own session.
    owners = {each.request_id.split(":")[0] for each in found}
    assert owners == ({"f"} if fork_first else {"p", "f"})


def test_a_fork_read_alone_is_its_own_session_in_the_record_reader(tmp_path: Path) -> None:
    _, fork = fork_pair(tmp_path)
    # Its copied history is the only record of the parent's requests: counted, as the
    # fork's ("f"), not the copied session_meta's ("p").
    found = read(fork).requests
    assert [r.session for r in found] == ["f", "f", "f"]
    assert [r.observed.input_tokens for r in found if r.observed is not None] == [
        5_000,
        5_420,
        5_576,
    ]


def test_codex_estimate_after_a_compaction_is_no_request_in_either_reader(
    migrated_db_url: str, tmp_path: Path
) -> None:
    # A session compacted at its start: Codex states its estimate of the history left as
    # total_tokens alone (every billed counter 0), then the one billed request.
    estimate_only = {**usage(0, 0, 0), "total_tokens": 1_200}
    first = usage(5_000, 0, 100)
    path = rollout(
        tmp_path / "rollout-2026-01-10T10-00-00-c.jsonl",
        [
            meta("c", "2026-01-10T10:00:00Z"),
            context("2026-01-10T10:00:00Z"),
            {"timestamp": "2026-01-10T10:00:01Z", "type": "compacted", "payload": {}},
            count("2026-01-10T10:00:02Z", usage(0, 0, 0), estimate_only),
            count("2026-01-10T10:00:06Z", first, first),
        ],
    )
    assert len(read(path).requests) == len(requests(path)) == 1
    for log in (packed(path), path):
        assert observed(estimated(migrated_db_url, log)) == (1, 5_000, 0, 100)
