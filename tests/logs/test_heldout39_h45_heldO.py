"""Held-out set 45o (recordings of 2025-2026 traffic with prompt caching in use, from
application repositories): a test harness that records a Claude Code run as
``{prompt, model, events: [the Agent SDK's messages], recordedAt}`` (one JSON document,
the messages under one key) was taken for cachecast's own records (it has ``prompt`` and
``model``), which read no usage. It is the headless stream (``claude -p --output-format
stream-json``, docs/clients.md) kept under a key: read as ``claude-stream-json``.

The document is hand-built from the documented message types (docs/clients.md, "Headless
output"); the totals are the usage written here, added by hand.
"""

from __future__ import annotations

import json
from pathlib import Path

from tests.logs.helpers import read, totals
from tests.sessions.test_headless import INIT, SESSION, assistant, result, usage


def test_a_run_recorded_with_its_messages_under_a_key_is_the_headless_stream(
    tmp_path: Path,
) -> None:
    counts = usage(3, 1_500, 2_000, 12)
    document = {
        "prompt": "Reply with exactly: hello.",
        "model": "claude-sonnet-4-5-20250929",
        "events": [
            INIT,
            assistant("msg_01", {"type": "text", "text": "hello."}, counts),
            result(counts),
        ],
        "key": "runSession-1",
        "recordedAt": "2026-03-15T03:41:08.394Z",
    }
    path = tmp_path / "runSession-1.json"
    path.write_text(json.dumps(document, indent=2) + "\n", encoding="utf-8")
    found = read(path)
    assert found.format == "claude-stream-json"
    assert not found.errors
    (request,) = found.requests
    assert request.session == SESSION
    # input 3 + 1,500 + 2,000; read 2,000; write 1,500; output 12 (the result line is the
    # run's total, cross-checked, not a request)
    assert totals(found.requests) == {"input": 3_503, "read": 2_000, "write": 1_500, "output": 12}


def _stream_event(raw: dict[str, object]) -> dict[str, object]:
    return {"type": "stream_event", "event": raw, "session_id": SESSION, "parent_tool_use_id": None}


def test_partial_messages_give_a_response_its_final_output_count(tmp_path: Path) -> None:
    # --include-partial-messages: the assistant line repeats message_start's usage (output
    # 1 so far); the stream's message_delta carries the final, cumulative count (30)
    started = usage(3, 1_500, 2_000, 1)
    events = [
        INIT,
        _stream_event({"type": "message_start", "message": {"id": "msg_01", "usage": started}}),
        assistant("msg_01", {"type": "text", "text": "hello."}, started),
        _stream_event(
            {
                "type": "message_delta",
                "delta": {"stop_reason": "end_turn"},
                "usage": {
                    "input_tokens": 3,
                    "cache_creation_input_tokens": 1_500,
                    "cache_read_input_tokens": 2_000,
                    "output_tokens": 30,
                },
            }
        ),
        _stream_event({"type": "message_stop"}),
        # a response without partial messages keeps its own line's count
        assistant("msg_02", {"type": "text", "text": "bye."}, usage(4, 0, 3_500, 6)),
    ]
    path = tmp_path / "run.jsonl"
    path.write_text("".join(json.dumps(event) + "\n" for event in events), encoding="utf-8")
    found = read(path)
    assert found.format == "claude-stream-json"
    assert [r.observed.output_tokens for r in found.requests if r.observed] == [30, 6]
    # input (3 + 1,500 + 2,000) + (4 + 0 + 3,500); read 2,000 + 3,500; write 1,500
    assert totals(found.requests) == {"input": 7_007, "read": 5_500, "write": 1_500, "output": 36}
