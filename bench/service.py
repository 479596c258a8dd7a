"""Service speed: requests/s and p50/p99 latency of a 100-request estimate over HTTP, against
calling the estimator in-process on the same log in the same run.

    .venv/bin/python bench/service.py [--requests 200] [--concurrency 8] [--workers 1]

Starts ``cachecast serve`` on 127.0.0.1 (random free port) over a fresh migrated SQLite file,
drives it with a bounded concurrent httpx loop, and prints both measurements and the ratio.
"""

from __future__ import annotations

import sys
from pathlib import Path

# Run as a script, Python puts bench/ first on sys.path, where bench/tokenize.py would shadow
# the standard library's tokenize module; put the repository root there instead.
sys.path[0] = str(Path(__file__).resolve().parent.parent)

import argparse  # noqa: E402
import asyncio  # noqa: E402
import datetime as dt  # noqa: E402
import shutil  # noqa: E402
import statistics  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from typing import Any  # noqa: E402

import httpx  # noqa: E402

from cachecast.contracts import ContractStore  # noqa: E402
from cachecast.core import db  # noqa: E402
from cachecast.passes.log_input import LogInput  # noqa: E402
from cachecast.usecases.estimate import EstimateRequest, estimate  # noqa: E402
from tests.service.server import Server  # noqa: E402

TARGETS = ["openai:gpt-4o", "anthropic:claude-sonnet-4-5", "openai:gpt-5.6"]
AT = "2026-11-01"


def agent_log(requests: int = 100) -> list[dict[str, Any]]:
    """10 sessions of growing chat histories under one shared system prompt and tool list."""
    system = "You are a coding agent. Follow the repository's conventions. " * 60
    records = []
    for index in range(requests):
        session, turn = index % 10, index // 10
        messages = [{"role": "system", "content": system}]
        for earlier in range(turn + 1):
            messages.append(
                {"role": "user", "content": f"session {session} step {earlier}: " + "fix it " * 40}
            )
            if earlier < turn:
                messages.append({"role": "assistant", "content": f"done step {earlier}. " * 20})
        records.append(
            {
                "timestamp": 1_762_000_000 + index * 3,
                "scope": f"team-{session % 3}",
                "model": "gpt-4o",
                "messages": messages,
                "output_tokens": 80,
            }
        )
    return records


def percentile(samples: list[float], fraction: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, round(fraction * (len(ordered) - 1)))]


def in_process_once(store: ContractStore, records: list[dict[str, Any]]) -> float:
    """The estimator called directly (tokenize + replay + bill), one pass per tokenizer."""
    request = EstimateRequest(
        log=LogInput(records=records, records_name="bench", on_bad_record="reject"),
        targets=list(TARGETS),
        at=dt.date.fromisoformat(AT),
    )
    started = time.perf_counter()
    estimate(request, store)
    return time.perf_counter() - started


async def interleaved(
    base_url: str, store: ContractStore, body: dict[str, Any], calls: int
) -> tuple[list[float], list[float]]:
    """In-process and HTTP calls alternated, one at a time, so both see the same machine load
    (the CPUs are shared with other work)."""
    direct: list[float] = []
    http: list[float] = []
    async with httpx.AsyncClient(base_url=base_url, timeout=300) as client:
        for _ in range(calls):
            direct.append(in_process_once(store, body["records"]))
            started = time.perf_counter()
            response = await client.post("/v1/estimates", json=body)
            http.append(time.perf_counter() - started)
            if response.status_code != 200:
                raise RuntimeError(f"{response.status_code}: {response.text[:500]}")
    return direct, http


async def over_http(
    base_url: str, body: dict[str, Any], total: int, concurrency: int
) -> tuple[list[float], float]:
    limit = asyncio.Semaphore(concurrency)
    latencies: list[float] = []

    async def one(client: httpx.AsyncClient) -> None:
        async with limit:
            started = time.perf_counter()
            response = await client.post("/v1/estimates", json=body)
            latencies.append(time.perf_counter() - started)
            if response.status_code != 200:
                raise RuntimeError(f"{response.status_code}: {response.text[:500]}")

    async with httpx.AsyncClient(base_url=base_url, timeout=300) as client:
        started = time.perf_counter()
        await asyncio.gather(*(one(client) for _ in range(total)))
        elapsed = time.perf_counter() - started
    return latencies, elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--requests", type=int, default=200, help="HTTP requests to send")
    parser.add_argument("--concurrency", type=int, default=8, help="requests in flight")
    parser.add_argument("--workers", type=int, default=1, help="uvicorn workers")
    parser.add_argument("--baseline-calls", type=int, default=30)
    args = parser.parse_args()

    workdir = Path(tempfile.mkdtemp(prefix="cachecast-bench-"))
    url = f"sqlite:///{workdir / 'cachecast.db'}"
    db.upgrade(url)
    records = agent_log(100)
    body = {"records": records, "targets": TARGETS, "at": AT}
    server = Server(url, workdir / "server.log", workers=args.workers, job_threshold_records=1000)
    try:
        server.wait_ready()
        store = ContractStore(url)
        asyncio.run(interleaved(server.base_url, store, body, 2))  # warm-up both paths
        baseline, sequential = asyncio.run(
            interleaved(server.base_url, store, body, args.baseline_calls)
        )
        loaded, elapsed = asyncio.run(
            over_http(server.base_url, body, args.requests, args.concurrency)
        )
    finally:
        server.stop()
        shutil.rmtree(workdir, ignore_errors=True)

    base_p50 = statistics.median(baseline)
    seq_p50 = statistics.median(sequential)
    print(f"log: 100 requests, targets {', '.join(TARGETS)}, contracts of {AT}")
    print(
        f"in-process estimator   : p50 {base_p50 * 1000:8.1f} ms  p99 "
        f"{percentile(baseline, 0.99) * 1000:8.1f} ms  ({1 / base_p50:6.1f} estimates/s, "
        f"{args.baseline_calls} calls)"
    )
    print(
        f"HTTP, 1 in flight      : p50 {seq_p50 * 1000:8.1f} ms  p99 "
        f"{percentile(sequential, 0.99) * 1000:8.1f} ms  ({1 / seq_p50:6.1f} requests/s)"
    )
    print(
        f"HTTP, {args.concurrency} in flight, {args.workers} worker(s): p50 "
        f"{statistics.median(loaded) * 1000:8.1f} ms  p99 {percentile(loaded, 0.99) * 1000:8.1f} ms"
        f"  {len(loaded) / elapsed:6.1f} requests/s over {len(loaded)} requests"
    )
    overhead = seq_p50 - base_p50
    print(
        f"service overhead (HTTP p50 at 1 in flight - in-process p50): {overhead * 1000:.1f} ms"
        f" per estimate = {seq_p50 / base_p50:.2f}x the in-process time"
    )


if __name__ == "__main__":
    main()
