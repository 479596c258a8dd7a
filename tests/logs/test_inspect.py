"""inspect_logs: the per-file report (its JSON keys, totals, the error list and its cap)."""

from __future__ import annotations

import json
from decimal import Decimal
from pathlib import Path

from cachecast.usecases.inspect import MAX_REPORTED_ERRORS, inspect_logs
from tests.conftest import shared_data
from tests.logs.helpers import write_jsonl


def test_report_of_a_claude_code_session() -> None:
    path = shared_data("recordings/claude_code/spotter/tool_heavy.jsonl")
    lines = [json.loads(t) for t in path.read_text(encoding="utf-8").splitlines()]
    usage: dict[str, dict[str, int]] = {}
    stamps = []
    sent: str | None = None
    for event in lines:
        if event.get("type") == "user":
            sent = event["timestamp"]  # when the next request left (docs/clients.md)
        if event.get("type") == "assistant":
            if event["message"]["id"] not in usage:
                stamps.append(min(sent, event["timestamp"]) if sent else event["timestamp"])
                sent = None
            usage[event["message"]["id"]] = event["message"]["usage"]
    (report,) = inspect_logs([path]).files
    data = json.loads(report.model_dump_json())
    assert {
        "format",
        "requests",
        "models",
        "providers",
        "first_timestamp",
        "last_timestamp",
    } <= set(data)
    assert {"observed", "requests_with_usage", "prompt_complete", "errors", "error_count"} <= set(
        data
    )
    assert data["format"] == "claude-code"
    assert data["requests"] == len(usage) == 4
    assert data["models"] == {"claude-opus-4-6": 4} and data["providers"] == {"anthropic": 4}
    assert data["observed"] == {
        "input_tokens": sum(
            u["input_tokens"] + u["cache_creation_input_tokens"] + u["cache_read_input_tokens"]
            for u in usage.values()
        ),
        "cache_read_tokens": sum(u["cache_read_input_tokens"] for u in usage.values()),
        "cache_write_tokens": sum(u["cache_creation_input_tokens"] for u in usage.values()),
        "output_tokens": sum(u["output_tokens"] for u in usage.values()),
        "cost": None,
    }
    assert data["first_timestamp"].startswith(stamps[0][:19])
    assert data["last_timestamp"].startswith(stamps[-1][:19])
    assert data["requests_with_usage"] == 4
    assert data["prompt_complete"] is False and data["requests_prompt_incomplete"] == 4


def test_errors_are_listed_up_to_the_cap_and_all_counted(tmp_path: Path) -> None:
    good = {
        "model": "gpt-4o",
        "prompt": "hello",
        "usage": {"prompt_tokens": 3, "completion_tokens": 1},
    }
    bad = {"model": "gpt-4o", "prompt": 7}
    path = write_jsonl(tmp_path / "log.jsonl", [good] + [bad] * (MAX_REPORTED_ERRORS + 50))
    (report,) = inspect_logs([path]).files
    assert report.format == "cachecast"
    assert report.requests == 1 and report.requests_with_usage == 1
    assert report.error_count == MAX_REPORTED_ERRORS + 50
    assert len(report.errors) == MAX_REPORTED_ERRORS
    assert report.errors[0] == f"{path}:2: prompt: expected a string, got int"


def test_observed_cost_is_summed_exactly(tmp_path: Path) -> None:
    records = [
        {
            "model": "gpt-4o",
            "prompt": "a",
            "usage": {"prompt_tokens": 1, "completion_tokens": 1, "cost": 0.1},
        },
        {
            "model": "gpt-4o",
            "prompt": "b",
            "usage": {"prompt_tokens": 1, "completion_tokens": 1, "cost": 0.2},
        },
    ]
    (report,) = inspect_logs([write_jsonl(tmp_path / "router.jsonl", records)]).files
    assert report.observed.cost == Decimal("0.3")  # not 0.30000000000000004


def test_a_file_without_readable_records_reports_zero(tmp_path: Path) -> None:
    path = tmp_path / "broken.jsonl"
    path.write_text('{"prompt": "x"}\n')  # no model: the reader cannot tokenize it
    (report,) = inspect_logs([path]).files
    assert report.requests == 0
    assert report.errors == [f"{path}:1: model: no model in the record and none given (--model)"]
