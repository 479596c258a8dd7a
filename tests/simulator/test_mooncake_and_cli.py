"""The vllm policy on the real Mooncake trace, checked against an independent count, and
the ``cachecast simulate`` command end to end."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from cachecast.cli import app
from cachecast.simulator import build_policy, usages_in_order
from cachecast.tokenizers.types import TokenizedRequest

from .helpers import make_trace_request

BLOCK = 512


def load_trace(path: Path) -> list[dict[str, object]]:
    """A minimal reader of our own, independent of cachecast.tokenizers."""
    with path.open(encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


def independent_hit_tokens(records: list[dict[str, object]]) -> tuple[int, int]:
    """(hit tokens, input tokens), cold start, unbounded cache, vLLM's rule.

    A hash id stands for its block and every block before it, so a set of the ids of
    every *full* block seen so far is the cache. A request may hit at most
    floor((len - 1) / 512) blocks, counted from its first block up to the first unseen id.
    """
    seen: set[int] = set()
    hits = total = 0
    ordered = sorted(records, key=lambda record: record["timestamp"])  # type: ignore[arg-type,return-value]
    for record in ordered:
        length = int(record["input_length"])  # type: ignore[call-overload]
        ids = list(record["hash_ids"])  # type: ignore[call-overload]
        reusable = 0
        for block_id in ids[: (length - 1) // BLOCK]:
            if block_id not in seen:
                break
            reusable += 1
        hits += reusable * BLOCK
        total += length
        seen.update(ids[: length // BLOCK])
    return hits, total


def as_requests(records: list[dict[str, object]]) -> list[TokenizedRequest]:
    return [
        make_trace_request(
            list(record["hash_ids"]),  # type: ignore[call-overload]
            int(record["input_length"]),  # type: ignore[call-overload]
            at=float(record["timestamp"]) / 1000,  # type: ignore[arg-type]
            line=number,
        )
        for number, record in enumerate(records, 1)
    ]


def test_vllm_policy_on_mooncake_matches_an_independent_count(mooncake_trace: Path) -> None:
    records = load_trace(mooncake_trace)
    expected_hits, expected_input = independent_hit_tokens(records)
    usages = list(usages_in_order(as_requests(records), build_policy("vllm", block_size=BLOCK)))
    assert len(usages) == 3993  # the README's count
    assert sum(usage.input_tokens for usage in usages) == expected_input
    assert sum(usage.cache_read_tokens for usage in usages) == expected_hits
    assert expected_hits > 0


def test_simulate_command_json_on_mooncake(mooncake_trace: Path) -> None:
    expected_hits, expected_input = independent_hit_tokens(load_trace(mooncake_trace))
    result = CliRunner().invoke(
        app,
        ["simulate", str(mooncake_trace), "--policy", "vllm", "--block-size", "512", "--json"],
    )
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert report["requests"] == 3993
    assert report["input_tokens"] == expected_input
    assert report["hit_tokens"] == expected_hits
    assert report["hit_rate"] == expected_hits / expected_input
    assert "cold start" in report["hit_rate_definition"]


def test_simulate_command_rejects_a_block_size_the_trace_was_not_cut_in(
    mooncake_trace: Path,
) -> None:
    result = CliRunner().invoke(
        app, ["simulate", str(mooncake_trace), "--policy", "vllm", "--block-size", "16"]
    )
    assert result.exit_code == 2
    assert (
        "synthetic_trace.jsonl:1: trace blocks are 512 tokens, the policy uses 16" in result.output
    )


def test_simulate_command_automatic_options(tmp_path: Path) -> None:
    # Three trace-style records: a 2,048-token prompt twice, then 1,024 tokens of it.
    log = tmp_path / "trace.jsonl"
    records = [
        {"timestamp": 0, "input_length": 2048, "output_length": 1, "hash_ids": [1, 2, 3, 4]},
        {"timestamp": 1000, "input_length": 2048, "output_length": 1, "hash_ids": [1, 2, 3, 4]},
        {"timestamp": 2000, "input_length": 1024, "output_length": 1, "hash_ids": [1, 2]},
    ]
    log.write_text("".join(json.dumps(record) + "\n" for record in records))
    arguments = ["simulate", str(log), "--policy", "automatic", "--block-size", "512"]
    result = CliRunner().invoke(app, [*arguments, "--min-tokens", "1024", "--json"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    # First: cold. Second: all 2,048 cached. Third: its 1,024 tokens are cached.
    assert (report["requests"], report["input_tokens"], report["hit_tokens"]) == (3, 5120, 3072)
    # With a 1 s TTL the entries written at t=0 are gone at t=1 (boundary: alive t < 1).
    result = CliRunner().invoke(app, [*arguments, "--ttl", "1", "--json"])
    assert json.loads(result.stdout)["hit_tokens"] == 0
