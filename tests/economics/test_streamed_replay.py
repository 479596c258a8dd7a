"""``compare`` and ``fleet`` read the log as every other command does, through the reorder
window, twice (a sizing pass, then one pass feeding every pool at once), and never hold the
whole log: checked on hand-built logs whose answers follow from vLLM's block rules
(docs/economics.md), and by the peak memory of a log and of the same traffic twice as long.

The hand-built log, pre-tokenized, 16-token blocks. A, B, C, D are four distinct blocks of
16 ids; every prompt ends with one more token, so each is 33 tokens in 3 blocks (2 full and
a partial one) and vLLM may read at most floor((33 - 1) / 16) = 2 blocks = 32 tokens:

    r1 t=0  A B +1     r2 t=1  C D +1     r3 t=2  A B +1

``one.jsonl`` holds r3 then r1 (out of order by two seconds, well within the window),
``two.jsonl`` holds r2; replay order is r1 r2 r3.

- A pool of 4 blocks (3 usable, block 0 is the null block): r1 takes all three and frees
  its unkeyed tail to the front, then B, A to the back; r2 needs three, takes them all
  (evicting A and B) and r3 misses: 0 hit tokens. (In file order r3 would have written A B
  and r1 read them: 32; the order matters.)
- Unbounded, or the deployment's own pool (tens of thousands of blocks): r3 reads A B: 32.
"""

from __future__ import annotations

import datetime as dt
import json
import os
from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest

from bench.agent_traffic import write_agent_log
from bench.peak import run_measured
from cachecast.economics.errors import ComparisonError
from cachecast.passes.log_input import LogInput, LogReading
from cachecast.simulator.distributed.partition import bucket_of, partition_key
from cachecast.simulator.ordering import DEFAULT_REORDER_WINDOW, OutOfOrderError
from cachecast.usecases.compare import CompareReport, CompareRequest, compare
from cachecast.usecases.fleet import FleetRequest, fleet
from tests.economics.conftest import deployment

REPO = Path(__file__).resolve().parents[2]
BLOCK = {name: [100 * (index + 1) + k for k in range(16)] for index, name in enumerate("ABCD")}


def record(request_id: str, timestamp: float, *blocks: str) -> dict[str, Any]:
    tokens = [token for name in blocks for token in BLOCK[name]] + [9]
    return {
        "timestamp": timestamp,
        "scope": "org",
        "request_id": request_id,
        "request": {"tokens": tokens},
        "output_tokens": 1,
    }


def write_jsonl(path: Path, records: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(item) + "\n" for item in records))
    return path


def hand_built_log(folder: Path) -> LogInput:
    one = write_jsonl(
        folder / "one.jsonl", [record("r3", 2.0, "A", "B"), record("r1", 0.0, "A", "B")]
    )
    two = write_jsonl(folder / "two.jsonl", [record("r2", 1.0, "C", "D")])
    return LogInput.of_paths([one, two])


class RecordedProgress:
    """Every stage a use case started, with the total it announced and what it advanced."""

    def __init__(self) -> None:
        self.stages: list[list[Any]] = []

    def start(self, label: str, total: int | None) -> None:
        self.stages.append([label, total, 0])

    def advance(self, count: int) -> None:
        self.stages[-1][2] += count


def test_the_streamed_replay_gives_the_hits_of_vllms_block_rules(tmp_path: Path) -> None:
    log = hand_built_log(tmp_path)
    first = compare(CompareRequest(**deployment(), log=log, capacity_factors=[]))
    blocks = first.self_hosted.num_blocks
    assert blocks > 1000  # the deployment's pool never evicts on this log
    progress = RecordedProgress()
    report: CompareReport = compare(
        CompareRequest(**deployment(), log=log, capacity_factors=[Fraction(4, blocks)]),
        progress=progress,
    )
    assert (report.log.requests, report.log.input_tokens, report.log.duration_s) == (3, 99, 2.0)
    assert report.self_hosted.hit_tokens == 32
    assert [(point.num_blocks, point.hit_tokens) for point in report.capacity_curve] == [
        (4, 0),
        (None, 32),
    ]
    # The host tier (unbounded by default) finds nothing HBM did not.
    assert report.host_tier.extra_hit_tokens_available == 0
    # Two passes: the sizing pass counts the requests as it reads them (no total: a log's
    # lines are not its requests), the replay announces the 3 requests the sizing pass read.
    assert progress.stages == [["reading", None, 3], ["simulating", 3, 3]]


def test_a_log_changed_between_its_two_readings_is_refused(tmp_path: Path) -> None:
    log = hand_built_log(tmp_path)

    class AppendingProgress(RecordedProgress):
        """Writes one more record to two.jsonl as the replay pass starts."""

        def start(self, label: str, total: int | None) -> None:
            super().start(label, total)
            if label == "simulating":
                with open(tmp_path / "two.jsonl", "a") as out:
                    out.write(json.dumps(record("r4", 3.0, "A")) + "\n")

    with pytest.raises(ComparisonError, match="changed between its two readings") as caught:
        compare(
            CompareRequest(**deployment(), log=log, capacity_factors=[]),
            progress=AppendingProgress(),
        )
    assert caught.value.location.source == str(tmp_path / "two.jsonl")
    assert caught.value.location.line == 2


def test_a_request_later_than_the_reorder_window_is_refused_naming_its_line(
    tmp_path: Path,
) -> None:
    # Replay order is every command's: timestamp order within the window. A request that
    # comes more than the window's requests after later ones cannot be placed.
    late_line = DEFAULT_REORDER_WINDOW + 2
    records = [record(f"r{i}", float(i + 1), "A") for i in range(late_line - 1)]
    path = write_jsonl(tmp_path / "late.jsonl", [*records, record("late", 0.0, "A")])
    with pytest.raises(OutOfOrderError) as caught:
        compare(CompareRequest(**deployment(), log=LogInput.of_paths([path])))
    assert (caught.value.location.source, caught.value.location.line) == (str(path), late_line)


def test_prefix_hash_routing_hashes_each_prompts_own_first_block(tmp_path: Path) -> None:
    # Four openings (A, B, C, D), three requests each: the replay holds block keys, plus the
    # first block's ids for the router. Where each request goes is the router's definition
    # on the full prompt: bucket_of(partition_key(first 16 ids)) over 4 replicas.
    openings = "ABCD"
    records = [record(f"r{i}", float(i), openings[i % 4], openings[(i + 1) % 4]) for i in range(12)]
    path = write_jsonl(tmp_path / "openings.jsonl", records)
    log = LogInput.of_paths([path])
    reading = LogReading(log, None)
    expected = [0, 0, 0, 0]
    for request in reading.requests():
        expected[bucket_of(partition_key(request, 16), 4)] += 1
    assert sum(1 for count in expected if count) > 1  # the openings do spread
    result = fleet(FleetRequest(**deployment(), log=log, replicas=4, routings=["prefix-hash"]))
    (policy,) = result.policies
    assert [replica.requests for replica in policy.replicas] == expected


def repeated_traffic(folder: Path, sessions: int, periods: int) -> Path:
    """``bench.agent_traffic``'s text agent sessions (one period), then the very same
    requests again every five hours (past every TTL and idle timeout): a log ``periods``
    times longer whose live cache state is that of one period."""
    once = folder / "once.jsonl"
    write_agent_log(once, sessions)
    records = [json.loads(line) for line in once.read_text().splitlines()]
    path = folder / f"x{periods}.jsonl"
    with open(path, "w", encoding="utf-8") as out:
        for period in range(periods):
            shift = dt.timedelta(hours=5 * period)
            for item in records:
                moment = dt.datetime.fromisoformat(item["timestamp"]) + shift
                out.write(
                    json.dumps(
                        {
                            **item,
                            "timestamp": moment.isoformat(),
                            "request_id": f"{item['request_id']}-{period}",
                        }
                    )
                    + "\n"
                )
    return path


COMMANDS = {
    "compare": ["compare", "{log}", "--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--json"],
    "fleet": ["fleet", "{log}", "--model", "llama-3.1-8b", "--gpu", "l40s", "--replicas", "4"],
}


@pytest.mark.slow
@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_peak_memory_follows_the_live_cache_state_not_the_log(command: str, tmp_path: Path) -> None:
    """20 agent sessions repeated 20 and 40 times (4,760 and 9,520 requests, both past the
    4,096-request reorder window): the second log is twice as long, its cache state the
    same. Before, both commands held every request's token ids: 58 MB more on the longer
    log (235 -> 292 MB). Now the peak is the pools' state and the window's: 5 MB more."""
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    peaks = []
    for periods in (20, 40):
        folder = tmp_path / str(periods)
        folder.mkdir()
        log = repeated_traffic(folder, sessions=20, periods=periods)
        arguments = [str(log) if part == "{log}" else part for part in COMMANDS[command]]
        measured = run_measured("cachecast", arguments, env=env, cwd=REPO)
        assert measured.returncode == 0, measured.stderr
        peaks.append(measured.peak_kib)
    shorter, longer = peaks
    assert longer - shorter < 20 * 1024, (shorter, longer)
