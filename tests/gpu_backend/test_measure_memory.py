"""``cachecast measure`` on a real vLLM server keeps a bounded window of the log: its peak
memory on a log ten times longer (the same kind of traffic: one shared 2,900-token prefix,
each request its own 100 tokens) stays within 1.3 times the peak on the short one.

Measured as the child process's own high-water mark (``bench.peak``): the CLI exactly as a
user runs it, against the session's small-llama server (conftest.py), the simulator's
comparison on. Replaying the log held whole (every prompt's ids, about 36 bytes a token as
Python ints) took 1.7 times the memory on the longer log; the bound is the goal's.
"""

from __future__ import annotations

import json
import os
import random
from pathlib import Path
from typing import Any

import pytest

from bench.peak import Measured, run_measured
from tests.gpu_backend.conftest import BLOCK_SIZE, VOCAB_SIZE, VllmServer

pytestmark = pytest.mark.vllm

REPO = Path(__file__).resolve().parents[2]
SHORT_REQUESTS = 80
LONGER = 10
PREFIX_TOKENS = 2900
OWN_TOKENS = 100
MAX_PEAK_RATIO = 1.3


def write_log(path: Path, requests: int) -> None:
    """``requests`` token-id records: the shared prefix, then ids of the request's own."""
    prefix = [random.Random("prefix").randrange(3, VOCAB_SIZE) for _ in range(PREFIX_TOKENS)]
    with path.open("w") as out:
        for index in range(requests):
            own = random.Random(f"request-{index}")
            tokens = prefix + [own.randrange(3, VOCAB_SIZE) for _ in range(OWN_TOKENS)]
            out.write(json.dumps({"tokens": tokens, "timestamp": float(index)}) + "\n")


def measure(url: str, log: Path) -> tuple[Measured, dict[str, Any]]:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    arguments = ["measure", str(log), "--engine", "http", "--url", url, "--compare-simulator"]
    arguments += ["--json", "--warmup", "1", "--no-store"]
    measured = run_measured("cachecast", arguments, env=env, cwd=REPO)
    assert measured.returncode == 0, measured.stderr[-3000:]
    report: dict[str, Any] = json.loads(measured.stdout)
    return measured, report


def check_hits(report: dict[str, Any], requests: int) -> None:
    # After the reset the first request finds nothing; every later one the prefix's full
    # blocks: 2,900 // 32 = 90 blocks of 32, 2,880 tokens (its own ids start mid-block 91).
    expected = [0] + [PREFIX_TOKENS // BLOCK_SIZE * BLOCK_SIZE] * (requests - 1)
    assert report["requests"] == requests
    assert [row["measured_cached_tokens"] for row in report["per_request"]] == expected
    assert [row["predicted_cached_tokens"] for row in report["per_request"]] == expected


def test_peak_memory_follows_the_requests_in_flight_not_the_log(
    vllm_server: VllmServer, tmp_path: Path
) -> None:
    url = vllm_server.wait_healthy()
    short, longer = tmp_path / "short.jsonl", tmp_path / "longer.jsonl"
    write_log(short, SHORT_REQUESTS)
    write_log(longer, SHORT_REQUESTS * LONGER)
    short_run, short_report = measure(url, short)
    long_run, long_report = measure(url, longer)
    check_hits(short_report, SHORT_REQUESTS)
    check_hits(long_report, SHORT_REQUESTS * LONGER)
    ratio = long_run.peak_kib / short_run.peak_kib
    print(
        f"measure peak: {short_run.peak_kib / 1024:.1f} MB on {SHORT_REQUESTS} requests"
        f" ({short_run.seconds:.1f} s), {long_run.peak_kib / 1024:.1f} MB on"
        f" {SHORT_REQUESTS * LONGER} ({long_run.seconds:.1f} s): {ratio:.2f}x"
    )
    assert ratio <= MAX_PEAK_RATIO, (short_run.peak_kib, long_run.peak_kib)
