"""Run as ``python -m tests.service.hostile_claim DATABASE_URL``: the real app in this process
(httpx's ASGI transport), warmed up with an ordinary approximate-tokenizer record, then one
80-byte record claiming ``usage.input_tokens: 1e40``. Prints one JSON line: the status, the
problem, the seconds it took and how much this process's resident memory grew.

A process of its own so that the test can bound it from outside (a server that pads tokens
one by one never answers and must not take the test session's memory with it)."""

from __future__ import annotations

import asyncio
import json
import os
import sys
import time
from typing import Any

import httpx

from cachecast.service.app import create_app
from tests.service.conftest import make_settings

# Anthropic's tokenizer is not public: its ids are approximate, the count comes from usage.
TARGET = "anthropic:claude-sonnet-4-5"


def resident_bytes() -> int:
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def body(claim: Any) -> dict[str, Any]:
    record = {"model": "claude-sonnet-4-5", "prompt": "hi", "usage": {"input_tokens": claim}}
    return {"records": [record], "targets": [TARGET], "at": "2026-11-01"}


async def main(database_url: str) -> dict[str, Any]:
    app = create_app(make_settings(database_url, job_runners=0))
    async with app.router.lifespan_context(app):
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://cachecast") as http:
            warm = await http.post("/v1/estimates", json=body(5000))
            assert warm.status_code == 200, warm.text
            raw = json.dumps(body(1e40)["records"][0]).encode()
            before = resident_bytes()
            start = time.monotonic()
            response = await http.post("/v1/estimates", json=body(1e40))
            seconds = time.monotonic() - start
            grown = resident_bytes() - before
    return {
        "record_bytes": len(raw),
        "status": response.status_code,
        "problem": response.json(),
        "seconds": seconds,
        "grown_bytes": grown,
    }


if __name__ == "__main__":
    print(json.dumps(asyncio.run(main(sys.argv[1]))))
