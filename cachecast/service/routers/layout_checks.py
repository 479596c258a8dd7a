"""``POST /v1/layout-checks``: ``cachecast check`` over HTTP, the same report.

Each side is a prompt layout (our YAML format, as text or as the equivalent JSON object, with
optional sample values) or a list of log records (``service.layout_checking`` turns the body
into ``usecases.check``'s request). A regression is an answer, not an error: 200 with
``passed: false``. Bad input is a 422 naming the field; an unknown target a 404 listing close
matches.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request

from cachecast.service.isolation import Subject, run_isolated
from cachecast.service.layout_checking import LayoutCheckBody, check_request
from cachecast.service.routers._body import post_reading_body, read_json_body
from cachecast.usecases.check import CheckReport, check

router = APIRouter(prefix="/v1", tags=["layout checks"])

_SYSTEM = "You are the support agent of Northwind. Answer in two sentences.\n"
_LAYOUT_EXAMPLE: dict[str, Any] = {
    "cachecast_layout": 1,
    "provider": "openai",
    "model": "gpt-4o",
    "system": _SYSTEM * 120,
    "turn": [
        {"role": "user", "content": "{{ question }}"},
        {"role": "assistant", "content": "{{ answer }}"},
    ],
    "arrival": {"sessions": 3, "turns_per_session": 2, "start": "2026-03-02T09:00:00Z"},
    "values": {"turns": [{"question": "Where is my order?", "answer": "It ships today."}]},
}


_EXAMPLE = {
    "baseline": {"layout": _LAYOUT_EXAMPLE},
    "candidate": {
        "layout": {**_LAYOUT_EXAMPLE, "system": "Now: {{ now }}\n" + _LAYOUT_EXAMPLE["system"]}
    },
    "targets": ["openai:gpt-4o", "vllm"],
    "thresholds": {"max_hit_rate_drop": "2pp"},
    "at": "2026-11-01",
}


@post_reading_body(
    router,
    "/layout-checks",
    LayoutCheckBody,
    summary="Check a prompt layout change against a baseline for cache regressions",
    response_model=CheckReport,
    problems=(404, 408, 413, 415, 422),
    examples={"timestamp moved to the top": _EXAMPLE},
)
async def create_layout_check(
    request: Request,
) -> CheckReport:
    """``passed`` says whether the candidate stays within the thresholds (a regression is
    200 with ``passed: false``); ``divergence`` names the first token where the prefixes
    differ. 422 names the wrong field; 404 an unknown target, with close matches."""
    body = await read_json_body(request, LayoutCheckBody)
    work = check_request(body)
    return await run_isolated(request, check, work, subject=Subject("body"))
