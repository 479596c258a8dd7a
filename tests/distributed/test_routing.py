"""Routing policies on a hand-made stream whose answers are worked out below.

Two vLLM replicas, 4-token blocks, unbounded pools. Two sessions, each resending an
8-token prefix (two full blocks) plus one new token: a prompt of 9 tokens, of which vLLM
can read at most floor((9 - 1) / 4) = 2 blocks = 8 tokens when the prefix is on the
replica. Order (one request a second): a1 a2 b1 b2 a3 b3.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from cachecast.simulator.policies import VllmPrefixCache
from cachecast.simulator.routing import Fleet, Routing, cached_prefix_tokens
from cachecast.tokenizers.types import TokenizedRequest
from tests.simulator.helpers import make_request

PREFIX = {"a": [1, 2, 3, 4, 5, 6, 7, 8], "b": [9, 10, 11, 12, 13, 14, 15, 16]}
ORDER = ["a", "a", "b", "b", "a", "b"]


def stream() -> list[TokenizedRequest]:
    return [
        make_request(
            PREFIX[session] + [100 + number],
            at=float(number),
            request_id=f"{session}{number}",
            line=number + 1,
            session=session,
        )
        for number, session in enumerate(ORDER)
    ]


def run(routing: Routing, **options: float) -> tuple[list[int], list[int], Fleet]:
    fleet = Fleet([VllmPrefixCache(4), VllmPrefixCache(4)], routing, **options)  # type: ignore[arg-type]
    placed, hits = [], []
    for request in stream():
        replica, usage = fleet.process(request)
        placed.append(replica)
        hits.append(usage.cache_read_tokens)
    return placed, hits, fleet


def test_round_robin_splits_sessions() -> None:
    placed, hits, fleet = run(Routing.round_robin)
    # 0,1,0,1,0,1: a2 and b2 land where their prefix is not; a3 finds a1, b3 finds b2.
    assert placed == [0, 1, 0, 1, 0, 1]
    assert hits == [0, 0, 0, 0, 8, 8]
    assert fleet.report().hit_rate == 16 / 54


def test_session_sticky_keeps_each_session_on_one_replica() -> None:
    placed, hits, fleet = run(Routing.session_sticky)
    # a pinned to replica 0 (both idle, lowest index); b pinned to replica 1 (load 0 < 9).
    assert placed == [0, 0, 1, 1, 0, 1]
    assert hits == [0, 8, 0, 8, 8, 8]
    report = fleet.report()
    # Each replica computes 9 + 1 + 1 = 11 tokens: perfectly even.
    assert [r.computed_tokens for r in report.replicas] == [11, 11]
    assert report.imbalance == 1.0


def test_least_loaded_follows_recent_prefill_work() -> None:
    placed, hits, _ = run(Routing.least_loaded, window_seconds=100.0)
    # Loads (computed tokens): a1->0 [9,0]; a2->1 miss [9,9]; b1->0 tie [18,9];
    # b2->1 miss [18,18]; a3->0 tie, hits a1 [19,18]; b3->1, hits b2.
    assert placed == [0, 1, 0, 1, 0, 1]
    assert hits == [0, 0, 0, 0, 8, 8]


def test_least_loaded_forgets_work_outside_the_window() -> None:
    placed, hits, fleet = run(Routing.least_loaded, window_seconds=1.0)
    # A 1-second window has dropped the previous request (sent 1 s earlier) every time:
    # both replicas always look idle, replica 0 takes everything and hits every resend.
    assert placed == [0] * 6
    assert hits == [0, 8, 0, 8, 8, 8]
    # Replica 1 computed nothing: max / mean = 22 / 11 = 2.
    assert fleet.report().imbalance == 2.0


def test_prefix_hash_keeps_equal_prefixes_together() -> None:
    placed, hits, _ = run(Routing.prefix_hash)
    a_replicas = {placed[i] for i, s in enumerate(ORDER) if s == "a"}
    b_replicas = {placed[i] for i, s in enumerate(ORDER) if s == "b"}
    assert len(a_replicas) == 1 and len(b_replicas) == 1
    assert hits == [0, 8, 0, 8, 8, 8]


def test_cache_aware_prefers_overlap_until_load_outweighs_it() -> None:
    placed, hits, _ = run(Routing.cache_aware, overlap_weight=1.0, load_weight=0.5)
    # a2: r0 = 8/9 - 0.5 * 9/9 = 0.39 > r1 = 0. b1: r0 = -0.5 * 10/10 < r1 = 0.
    # b2: r1 = 8/9 - 0.5 * 9/19 > r0 < 0. a3, b3 likewise follow their prefix.
    assert placed == [0, 0, 1, 1, 0, 1]
    assert hits == [0, 8, 0, 8, 8, 8]
    placed, hits, _ = run(Routing.cache_aware, overlap_weight=1.0, load_weight=10.0)
    # a2: r0 = 8/9 - 10 * 1 < r1 = 0: the load term wins and a2 misses.
    assert placed[1] == 1 and hits[1] == 0


def test_cache_lookup_for_routing_changes_nothing() -> None:
    replica = VllmPrefixCache(4, 8)
    first, second = stream()[0], stream()[1]
    replica.process(first)
    before = replica.free_block_order()
    assert cached_prefix_tokens(replica, second) == 8
    assert replica.free_block_order() == before


def test_bad_fleet_is_refused() -> None:
    with pytest.raises(ValueError, match="at least one replica"):
        Fleet([], Routing.round_robin)


def test_simulate_cli_with_replicas(tmp_path: Path) -> None:
    import json

    from typer.testing import CliRunner

    from cachecast.cli import app

    log = tmp_path / "hand.jsonl"
    log.write_text(
        "".join(
            json.dumps(
                {
                    "timestamp": r.timestamp,
                    "scope": r.scope,
                    "session": r.session,
                    "model": "gpt-4o",
                    "request": {"tokens": list(r.tokens or [])},
                }
            )
            + "\n"
            for r in stream()
        )
    )
    args = ["simulate", str(log), "--policy", "vllm", "--block-size", "4", "--replicas", "2"]
    result = CliRunner().invoke(app, [*args, "--routing", "session-sticky", "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    # As in test_session_sticky_keeps_each_session_on_one_replica: 4 resends x 8 tokens.
    assert (data["hit_tokens"], data["input_tokens"]) == (32, 54)
    assert [replica["requests"] for replica in data["replicas"]] == [3, 3]
    radix = ["simulate", str(log), "--policy", "radix", "--replicas", "2"]
    refused = CliRunner().invoke(app, [*radix, "--routing", "round-robin"])
    assert refused.exit_code == 2
    assert "with --policy vllm" in refused.output
