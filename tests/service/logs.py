"""Small logs whose token counts are known by construction (pre-tokenized records)."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx

# OpenAI gpt-4o's 2025 terms: automatic caching from 1,024 tokens in 128-token steps, free
# writes, reads at 0.5x (the seeded 2024-10-01 version).
GPT4O_DAY = "2025-06-01"
PREFIX_TOKENS = 2048
SUFFIX_TOKENS = 100


def shared_prefix_records(sessions: int = 1) -> list[dict[str, Any]]:
    """Per session: a 2048-token prompt, then 1 s later the same 2048 tokens plus 100 more.

    Sessions differ in their first token and their scope, so no session hits another's
    cache; each request reports 10 output tokens.
    """
    records = []
    for session in range(sessions):
        prefix = [session, *range(1000, 1000 + PREFIX_TOKENS - 1)]
        suffix = list(range(5000, 5000 + SUFFIX_TOKENS))
        base = {"scope": f"session-{session}", "output_tokens": 10}
        records.append({**base, "timestamp": 10.0 * session, "tokens": prefix})
        records.append({**base, "timestamp": 10.0 * session + 1, "tokens": prefix + suffix})
    return records


def estimate_body(
    records: list[dict[str, Any]], targets: list[str], at: str = GPT4O_DAY
) -> dict[str, Any]:
    return {"records": records, "targets": targets, "at": at}


def owner(accepted: dict[str, Any]) -> dict[str, str]:
    """The header that reads or cancels the job a 202 answer ``accepted`` describes."""
    return {"X-Job-Token": accepted["owner_token"]}


async def wait_for_job(
    client: httpx.AsyncClient, job_id: str, token: str, timeout: float = 60.0
) -> dict[str, Any]:
    """Poll (as the job's owner, ``token``) until the job is done or failed; a bounded wait,
    never a hang."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while True:
        response = await client.get(f"/v1/jobs/{job_id}", headers={"X-Job-Token": token})
        assert response.status_code == 200, response.text
        job: dict[str, Any] = response.json()
        if job["status"] in ("done", "failed"):
            return job
        if loop.time() > deadline:
            raise AssertionError(f"job {job_id} still {job['status']} after {timeout} s: {job}")
        await asyncio.sleep(0.05)


def slow_job_body(count: int = 5000) -> dict[str, Any]:
    """Enough work (5,000 requests priced under 15 contracts) to be caught mid-run."""
    targets = [
        "anthropic:claude-haiku-4-5",
        "anthropic:claude-opus-4-5",
        "anthropic:claude-sonnet-4-5",
        "anthropic:claude-sonnet-4-6",
        "azure:gpt-4.1",
        "azure:gpt-4o",
        "deepseek:deepseek-chat",
        "google:gemini-2.5-flash",
        "google:gemini-2.5-pro",
        "moonshot:kimi-k3",
        "openai:gpt-4.1",
        "openai:gpt-4o",
        "openai:gpt-5",
        "openai:gpt-5.1",
        "openai:gpt-5.6",
    ]
    records = [
        {"timestamp": i, "scope": f"s{i % 20}", "tokens": [i % 20, *range(1000, 1063)]}
        for i in range(count)
    ]
    return {"records": records, "targets": targets, "at": "2026-11-01"}


def big_job_body() -> dict[str, Any]:
    """slow_job_body over five times its records (25,000): seconds of work even on an idle
    host, so that a test can act while the job runs."""
    return slow_job_body(count=25_000)
