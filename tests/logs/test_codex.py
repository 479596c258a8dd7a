"""Codex CLI rollouts: the real (redacted) sessions in ../shared/data/recordings/codex_cli.

Expected values are computed here from each file with plain json by the documented rule:
a token_count event is a new request only where the running total_token_usage moved (the
same event is written twice); its last_token_usage is that request's usage."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from cachecast.logs import open_log
from cachecast.logs.codex import filler, unredact
from tests.conftest import shared_data
from tests.logs.helpers import codex_events, read, totals, write_jsonl

ROLLOUTS = [
    "rollout-2026-02-23T12-40-23-019c8a4c-ed82-79a1-aa28-7738fc5ab61a.jsonl",
    "rollout-2026-02-23T12-41-04-019c8a4d-8f45-7010-8b5d-7fad920aa6f9.jsonl",
    "rollout-2026-02-23T12-47-42-019c8a53-a0dd-7130-bcd7-95445d84846a.jsonl",
    "rollout-2026-02-23T12-54-34-019c8a59-e9dd-71f0-9ae3-4079fe9726a9.jsonl",
    "rollout-2026-02-23T13-19-38-019c8a70-dda7-7f33-98ea-f30553347322.jsonl",
    "rollout-2026-02-23T20-34-25-019c8bfe-ec25-79e0-97d7-bda6a9c575ff.jsonl",
]
# PROVENANCE.md: total input and cached input of each rollout.
STATED = {
    ROLLOUTS[0]: (7_204_025, 6_836_352),
    ROLLOUTS[1]: (1_751_428, 1_651_968),
    ROLLOUTS[2]: (6_740_973, 6_337_024),
    ROLLOUTS[3]: (33_810_485, 31_621_504),
    ROLLOUTS[4]: (34_469, 3_456),
    ROLLOUTS[5]: (298_373, 238_848),
}


def rollout(name: str) -> Path:
    return shared_data(f"recordings/codex_cli/localpush/raw/sessions/{name}")


def expected(path: Path) -> tuple[list[int], dict[str, int], list[str]]:
    """(line of each request, usage totals, model of each request)."""
    lines: list[int] = []
    sums = {"input": 0, "read": 0, "write": 0, "output": 0}
    models: list[str] = []
    model = None
    for number, event, info in codex_events(path):
        if event["type"] == "turn_context":
            model = event["payload"]["model"]
        if info is None:
            continue
        last = info["last_token_usage"]
        lines.append(number)
        sums["input"] += last["input_tokens"]  # cached_input_tokens is part of it
        sums["read"] += last["cached_input_tokens"]
        sums["output"] += last["output_tokens"]  # reasoning_output_tokens is part of it
        models.append(info.get("model") or model)
    return lines, sums, models


@pytest.mark.parametrize("name", ROLLOUTS)
def test_requests_counted_from_the_running_total(name: str) -> None:
    path = rollout(name)
    lines, sums, models = expected(path)
    result = read(path)
    assert result.format == "codex"
    assert result.errors == []
    assert [r.line for r in result.requests] == lines
    assert totals(result.requests) == sums
    assert [r.model for r in result.requests] == models
    assert (sums["input"], sums["read"]) == STATED[name]
    final = [json.loads(t) for t in path.read_text(encoding="utf-8").splitlines()]
    last_total = [
        e["payload"]["info"]["total_token_usage"]
        for e in final
        if e["payload"].get("type") == "token_count" and e["payload"]["info"]
    ][-1]
    assert sums["input"] == last_total["input_tokens"]  # the sum of requests is the total
    for request in result.requests:
        assert request.provider == "openai"
        assert not request.prompt_complete
        assert request.observed is not None
        assert request.input_tokens == request.observed.input_tokens


def test_repeated_events_are_counted_once() -> None:
    path = rollout(ROLLOUTS[3])
    events = [json.loads(t) for t in path.read_text(encoding="utf-8").splitlines()]
    counts = [e for e in events if e["payload"].get("type") == "token_count"]
    with_info = [e for e in counts if e["payload"]["info"] is not None]
    result = read(path)
    assert len(counts) == 573  # PROVENANCE.md
    repeated = result.skipped["Codex token_count repeating the previous one (counted once)"]
    assert len(result.requests) + repeated == len(with_info)
    assert len(result.requests) == 286


def test_model_switch_inside_token_count_events() -> None:
    # ccusage's hand-written fixture: info.model names a model other than turn_context's.
    path = shared_data("recordings/codex_cli/ccusage_fixture_session-alpha.jsonl")
    result = read(path)
    assert [r.model for r in result.requests] == ["gpt-5.2-codex", "gpt-5.3-codex"]
    assert totals(result.requests) == {"input": 3_500, "read": 750, "write": 0, "output": 425}


def test_redacted_text_is_rebuilt_at_its_recorded_length() -> None:
    text = "[REDACTED_TEXT len=3017 sha=f3ffd0ed]"
    rebuilt = unredact(text)
    assert len(rebuilt) == 3017
    assert unredact(text) == rebuilt  # equal seeds, equal text (a shared prefix stays shared)
    assert filler(3017, "00000000") != rebuilt
    assert unredact("a [REDACTED_OUTPUT len=5 sha=ab] b") == "a " + filler(5, "ab") + " b"
    # The first request's prompt: the base instructions and the input items before its
    # first output, each placeholder at its recorded length.
    path = rollout(ROLLOUTS[4])
    records = [r for _, r in open_log(path) if isinstance(r, dict)]
    body = records[0]["request"]
    assert len(body["instructions"]) == 13_131
    texts = [part["text"] for item in body["input"] for part in item.get("content", [])]
    assert [len(t) for t in texts] == [3663, 6684, 3017, 108, 3696, 806, 86, 3490]


def _event(kind: str, payload: dict[str, Any]) -> dict[str, Any]:
    return {"timestamp": "2026-02-23T12:00:00Z", "type": kind, "payload": payload}


def test_malformed_events_name_file_line_and_field(tmp_path: Path) -> None:
    good = {"input_tokens": 10, "cached_input_tokens": 0, "output_tokens": 2, "total_tokens": 12}
    path = write_jsonl(
        tmp_path / "rollout.jsonl",
        [
            _event("session_meta", {"id": "s", "model_provider": "openai"}),
            _event("event_msg", {"type": "token_count", "info": {"total_token_usage": good}}),
            _event("turn_context", {"model": "gpt-5.3-codex"}),
            _event(
                "event_msg",
                {
                    "type": "token_count",
                    "info": {
                        "total_token_usage": {**good, "input_tokens": 20},
                        "last_token_usage": {**good, "cached_input_tokens": "ten"},
                    },
                },
            ),
            _event(
                "event_msg",
                {
                    "type": "token_count",
                    "info": {
                        "total_token_usage": {**good, "input_tokens": 30},
                        "last_token_usage": good,
                    },
                },
            ),
        ],
    )
    result = read(path)
    # Line 2 states the running total alone: a request of what the total grew by (all of
    # it), but before any turn_context names the model, so it is refused for want of one.
    assert [str(e) for e in result.errors] == [
        f"{path}:2: model: no model in the record and none given (--model)",
        f"{path}:4: payload.info.last_token_usage.cached_input_tokens: expected a non-negative "
        "integer, got 'ten'",
    ]
    assert [r.line for r in result.requests] == [5]
