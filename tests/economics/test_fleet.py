"""``cachecast fleet`` on a hand-made stream whose routing answers are worked out below.

Two replicas of Llama-3.1-8B on one L40S each. The log is a Mooncake-format trace (512-token
blocks, read by the real log reader): two sessions, each resending its own 4-block prefix
(2,048 tokens) plus one new token, so every prompt is 2,049 tokens in 5 blocks and vLLM can
read at most floor((2049 - 1) / 512) = 4 blocks = 2,048 tokens when the prefix is on the
replica. No output tokens, so a request's service time is its prefill alone. Order, one
request a second: a1 a2 b1 b2 a3 b3 (span 5 s). One replica holds 404 blocks, far more
than the 10 this log ever needs, so nothing is evicted.

Placements (ties go to replica 0):
- round-robin: 0 1 0 1 0 1. a2 and b1, b2 miss; a3 finds a1, b3 finds b2: 2 hits.
- least-loaded (computed tokens, 60 s window): a1->0 [2049,0]; a2->1 miss [2049,2049];
  b1->0 tie, miss [4098,2049]; b2->1 miss [4098,4098]; a3->0 tie, hit; b3->1 hit: 2 hits.
- session-sticky: a pinned to 0 (both idle), b to 1 (load 0 < 2049): 4 hits.
- cache-aware (w1 = 1, w2 = 0.5): a2 scores 2048/2049 - 0.5 on 0 against 0 on 1 -> 0;
  b1 scores -0.5 on 0 against 0 on 1 -> 1; b2 ~0.75 on 1 against -0.25 on 0 -> 1: 4 hits.
- prefix-hash: each session's prefix hashes to one replica (which one is a hash), so each
  session stays together: 4 hits.
"""

from __future__ import annotations

import json
from decimal import Decimal
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest
import typer
from typer.testing import CliRunner

from cachecast.economics.capacity import Deployment
from cachecast.economics.fleet import PolicyResult
from cachecast.economics.geometry import load_model
from cachecast.economics.hardware import get_accelerator
from cachecast.economics.timing import pollaczek_khinchine_wait, prefill_time
from cachecast.passes.log_input import LogInput
from cachecast.simulator.routing import Routing
from cachecast.usecases.compare import CompareRequest, compare
from cachecast.usecases.fleet import FleetRequest, fleet
from tests.economics.conftest import deployment as deployment_fields

ORDER = "aabbab"
PREFIX_IDS = {"a": [1, 2, 3, 4], "b": [5, 6, 7, 8]}
PROMPT = 2049  # 4 * 512 + 1
HIT = 2048
INPUT_TOTAL = 6 * PROMPT


def write_log(path: Path, spacing_ms: int) -> Path:
    lines = [
        {
            "timestamp": spacing_ms * number,
            "input_length": PROMPT,
            "output_length": 0,
            "hash_ids": PREFIX_IDS[session] + [100 + number],
            "session": session,
        }
        for number, session in enumerate(ORDER)
    ]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path


def deployment() -> Deployment:
    return Deployment(
        model=load_model("llama-3.1-8b"), accelerator=get_accelerator("l40s"), block_size=512
    )


def run(log: Path) -> list[PolicyResult]:
    request = FleetRequest(
        **deployment_fields(gpu="l40s"),
        log=LogInput.of_paths([log]),
        replicas=2,
        gpu_price=Decimal(2),
    )
    return fleet(request).policies


@pytest.fixture(scope="module")
def spaced(tmp_path_factory: pytest.TempPathFactory) -> dict[Routing, PolicyResult]:
    log = write_log(tmp_path_factory.mktemp("fleet") / "log.jsonl", spacing_ms=1000)
    return {result.routing: result for result in run(log)}


def computed(result: PolicyResult) -> list[int]:
    return [replica.input_tokens - replica.hit_tokens for replica in result.replicas]


def test_hits_per_policy_match_the_hand_placements(spaced: dict[Routing, PolicyResult]) -> None:
    assert list(spaced) == list(Routing)
    expected_hits = {
        Routing.round_robin: 2 * HIT,
        Routing.least_loaded: 2 * HIT,
        Routing.session_sticky: 4 * HIT,
        Routing.cache_aware: 4 * HIT,
        Routing.prefix_hash: 4 * HIT,
    }
    for routing, hits in expected_hits.items():
        assert spaced[routing].hit_tokens == hits, routing
        assert spaced[routing].input_tokens == INPUT_TOTAL
    # Round-robin: each replica computes two whole prompts and one new token.
    assert computed(spaced[Routing.round_robin]) == [2 * PROMPT + 1] * 2
    # Sticky: each replica computes one whole prompt and two new tokens.
    assert computed(spaced[Routing.session_sticky]) == [PROMPT + 2] * 2
    assert spaced[Routing.session_sticky].imbalance == 1.0
    # Prefix-hash: the sessions share a replica or not, as the hash falls.
    assert sorted(computed(spaced[Routing.prefix_hash])) in (
        [PROMPT + 2, PROMPT + 2],
        [0, 2 * (PROMPT + 2)],
    )


def _expected_ttft(services: list[Fraction]) -> tuple[float, float]:
    """Both replicas get the same three service times over the 5 s span: M/G/1 wait
    W = (3/5) * mean(s^2) / (2 * (1 - sum(s)/5)); TTFT_i = W + s_i (no decode).
    Mean TTFT = W + mean(s). Of the six TTFTs the two largest are equal to W + max(s)
    in both cases below (round-robin has four, sticky two), and numpy's p90 of six sorted
    values lies between the 5th and 6th: W + max(s)."""
    rate = Fraction(3, 5)
    utilization = sum(services) / 5
    wait = rate * sum(s * s for s in services) / 3 / (2 * (1 - utilization))
    return float(wait + sum(services) / 3), float(wait + max(services))


def test_ttft_follows_the_computed_tokens(spaced: dict[Routing, PolicyResult]) -> None:
    whole = prefill_time(deployment(), 0, PROMPT).seconds
    after_hit = prefill_time(deployment(), HIT, 1).seconds
    assert after_hit < whole
    round_robin = spaced[Routing.round_robin]
    sticky = spaced[Routing.session_sticky]
    mean, p90 = _expected_ttft([whole, whole, after_hit])
    assert round_robin.ttft_ms.mean == pytest.approx(mean * 1000, rel=1e-9)
    assert round_robin.ttft_ms.p90 == pytest.approx(p90 * 1000, rel=1e-9)
    mean, p90 = _expected_ttft([whole, after_hit, after_hit])
    assert sticky.ttft_ms.mean == pytest.approx(mean * 1000, rel=1e-9)
    assert sticky.ttft_ms.p90 == pytest.approx(p90 * 1000, rel=1e-9)
    assert sticky.ttft_ms.mean is not None and round_robin.ttft_ms.mean is not None
    assert sticky.ttft_ms.mean < round_robin.ttft_ms.mean


def test_unsaturated_fleet_is_held_for_the_log_span(spaced: dict[Routing, PolicyResult]) -> None:
    # Every replica is busy well under 5 s, so the fleet is held for the span:
    # 2 replicas * 1 GPU * 5 s = 10/3600 h = 0.0027777... -> 0.002778 h; at $2: 0.005556.
    for result in spaced.values():
        assert result.makespan_s == 5.0
        assert result.gpu_hours == Decimal("0.002778")
        assert result.cost == Decimal("0.005556")
        assert result.saturated_replicas == []
    # Busy GPU time is what routing changes: sticky computes half the prompts of round-robin.
    assert (
        spaced[Routing.session_sticky].busy_gpu_hours < spaced[Routing.round_robin].busy_gpu_hours
    )


def test_saturated_replica_bounds_the_makespan(tmp_path: Path) -> None:
    # 10 ms apart: the 0.05 s span is far shorter than two 2,049-token prefills on an L40S
    # (each over 80 ms of compute at peak), so every replica is past 100% busy.
    log = write_log(tmp_path / "log.jsonl", spacing_ms=10)
    result = next(r for r in run(log) if r.routing is Routing.round_robin)
    assert result.saturated_replicas == [0, 1]
    assert result.ttft_ms.mean is None and result.ttft_ms.p90 is None
    busiest = float(
        2 * prefill_time(deployment(), 0, PROMPT).seconds
        + prefill_time(deployment(), HIT, 1).seconds
    )
    assert result.makespan_s == pytest.approx(busiest, rel=1e-9)
    assert float(result.gpu_hours) == pytest.approx(2 * busiest / 3600, abs=1e-6)


def test_pollaczek_khinchine_wait() -> None:
    # One request a second of a constant 0.5 s: W = 1 * 0.25 / (2 * 0.5) = 0.25 s.
    assert pollaczek_khinchine_wait(1.0, np.array([0.5, 0.5]), 0.5) == pytest.approx(0.25)
    assert pollaczek_khinchine_wait(2.0, np.array([0.5]), 1.0) is None


def test_fleet_cli_json(economics_app: typer.Typer, tmp_path: Path) -> None:
    log = write_log(tmp_path / "log.jsonl", spacing_ms=1000)
    command = ["fleet", str(log), "--model", "llama-3.1-8b", "--gpu", "l40s", "--replicas", "2"]
    result = CliRunner().invoke(
        economics_app,
        [
            *command,
            "--routing",
            "round-robin",
            "--routing",
            "session-sticky",
            "--gpu-price",
            "2",
            "--json",
        ],
    )
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["inputs"]["replicas"] == 2
    assert data["inputs"]["routing"] == ["round-robin", "session-sticky"]
    assert data["inputs"]["gpu_price_per_hour"] == "2"
    assert data["inputs"]["block_size"] == 512
    assert data["log"]["requests"] == 6
    policies = {policy["routing"]: policy for policy in data["policies"]}
    assert set(policies) == {"round-robin", "session-sticky"}
    for policy in policies.values():
        assert {
            "hit_rate",
            "imbalance",
            "ttft_ms",
            "gpu_hours",
            "busy_gpu_hours",
            "cost",
            "makespan_s",
            "replicas",
        } <= set(policy)
        assert set(policy["ttft_ms"]) == {"mean", "p90"}
        assert len(policy["replicas"]) == 2
        assert policy["cost"] == "0.005556"
    assert policies["round-robin"]["hit_rate"] == 2 * HIT / INPUT_TOTAL
    assert policies["session-sticky"]["hit_rate"] == 4 * HIT / INPUT_TOTAL
    assert [r["computed_tokens"] for r in policies["session-sticky"]["replicas"]] == [
        PROMPT + 2
    ] * 2

    everything = CliRunner().invoke(economics_app, [*command, "--json"])
    assert everything.exit_code == 0, everything.output
    routings = [policy["routing"] for policy in json.loads(everything.stdout)["policies"]]
    assert routings == [str(routing) for routing in Routing]
    assert json.loads(everything.stdout)["policies"][0]["cost"] is None  # no --gpu-price

    bad = CliRunner().invoke(economics_app, [*command, "--routing", "random"])
    assert bad.exit_code == 2
    assert bad.stderr.startswith("error: --routing: 'random' is not one of round-robin,")


def test_one_replica_agrees_with_compare(tmp_path: Path) -> None:
    # K = 1: every policy sends everything to the single replica, which is exactly the one
    # replica compare replays; its hits are a1-a2-a3 and b1-b2-b3 chains (4 hits), and its
    # busy GPU time is compare's full-utilization GPU time.
    log = LogInput.of_paths([write_log(tmp_path / "log.jsonl", spacing_ms=1000)])
    (one,) = fleet(
        FleetRequest(**deployment_fields(gpu="l40s"), log=log, replicas=1, routings=["round-robin"])
    ).policies
    reference = compare(CompareRequest(**deployment_fields(gpu="l40s"), log=log))
    assert one.hit_tokens == reference.self_hosted.hit_tokens == 4 * HIT
    assert str(one.busy_gpu_hours) == str(reference.self_hosted.full_utilization.gpu_hours)
