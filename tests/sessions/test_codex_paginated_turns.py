"""A user's message in a Codex rollout of the paginated history mode: an ``item_completed``
event of a ``UserMessage`` item instead of the ``user_message`` event (openai/codex
``codex-rs/protocol/src/items.rs``: ``TurnItem::UserMessage``, whose ``as_legacy_event`` is the
``user_message`` event; docs/clients.md, "Format variants"). Both readers must mark the next
request a new user turn, and the predictor then keeps the prefix 10 minutes, not the hour a
turn's own requests get (docs/clients.md, Codex CLI, "Lifetime"). The rollout is hand-written;
the expected reads are worked out by hand in the comments."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from cachecast.logs import codex, open_log
from cachecast.sessions.profiles import CODEX_CLI
from cachecast.sessions.reading import SessionRequest, session_requests
from cachecast.sessions.replay import predict_sessions


def envelope(when: str, kind: str, payload: dict[str, Any]) -> dict[str, Any]:
    return {"timestamp": f"2026-07-24T{when}Z", "type": kind, "payload": payload}


def item(when: str, turn: str, kind: str, text: str) -> dict[str, Any]:
    content = [{"type": "text", "text": text, "text_elements": []}]
    return envelope(
        when,
        "event_msg",
        {
            "type": "item_completed",
            "thread_id": "0199-pag",
            "turn_id": turn,
            "item": {"type": kind, "id": f"{turn}-{kind}", "content": content},
            "completed_at_ms": 0,
        },
    )


def counted(when: str, prompt: int, cached: int, output: int, reasoning: int) -> dict[str, Any]:
    last = {
        "input_tokens": prompt,
        "cached_input_tokens": cached,
        "output_tokens": output,
        "reasoning_output_tokens": reasoning,
        "total_tokens": prompt + output,
    }
    # One request per event: the running total is not used by either reader when
    # last_token_usage is there, so it repeats the request's own usage here.
    info = {"total_token_usage": last, "last_token_usage": last, "model_context_window": 258_400}
    return envelope(when, "event_msg", {"type": "token_count", "info": info})


def rollout(path: Path, second_turn_kind: str) -> Path:
    """Three requests: two in the first turn, a third 30 minutes after the second, after an
    item of ``second_turn_kind`` (``UserMessage``: a new turn; ``AgentMessage``: none)."""
    lines = [
        envelope(
            "10:00:00.000",
            "session_meta",
            {
                "id": "0199-pag",
                "cli_version": "0.146.0",
                "originator": "codex_vscode",
                "source": "vscode",
                "model_provider": "openai",
                "history_mode": "paginated",
            },
        ),
        envelope("10:00:01.000", "turn_context", {"turn_id": "t1", "model": "gpt-5.6-sol"}),
        item("10:00:01.100", "t1", "UserMessage", "Fix the parser"),
        counted("10:00:05.000", 20_000, 0, 400, 100),
        item("10:00:10.000", "t1", "AgentMessage", "Looking at it"),
        counted("10:00:12.000", 20_600, 20_352, 300, 0),
        envelope("10:30:12.000", "turn_context", {"turn_id": "t2", "model": "gpt-5.6-sol"}),
        item("10:30:12.100", "t2", second_turn_kind, "Now the tests"),
        counted("10:30:15.000", 21_000, 0, 200, 0),
    ]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    return path


def read(path: Path) -> list[SessionRequest]:
    return [r for r in session_requests(path, path.name) if isinstance(r, SessionRequest)]


def test_both_readers_mark_a_user_message_item_a_new_turn(tmp_path: Path) -> None:
    path = rollout(tmp_path / "rollout-2026-07-24T10-00-00-0199-pag.jsonl", "UserMessage")
    assert [r.facts.user_turn for r in read(path)] == [True, False, True]
    records = [record for _, record in codex.read(open_log(path, format="codex"))]
    assert [isinstance(r, dict) and r.get("user_turn") is True for r in records] == [
        True,
        False,
        True,
    ]
    # An agent's message item opens no turn.
    other = rollout(tmp_path / "rollout-2026-07-24T10-00-00-0199-agt.jsonl", "AgentMessage")
    assert [r.facts.user_turn for r in read(other)] == [True, False, False]


def test_a_user_message_item_after_a_long_pause_predicts_the_prefix_gone(tmp_path: Path) -> None:
    # Request 3 comes 30m 03s after request 2. At a new user turn the profile keeps the prefix
    # 10 minutes: gone, so no read is predicted (and none was observed).
    path = rollout(tmp_path / "rollout-2026-07-24T10-00-00-0199-pag.jsonl", "UserMessage")
    third = list(predict_sessions(read(path), CODEX_CLI))[2]
    assert third.predicted.read == 0
    assert third.within_tolerance
    # Within a turn the prefix is kept up to the documented hour: request 2's prompt plus its
    # output, 20,600 + 300 = 20,900, in OpenAI's steps: 1,024 + (20,900 - 1,024) // 128 * 128
    # = 1,024 + 155 x 128 = 20,864. The rollout's observed 0 is then a miss.
    other = rollout(tmp_path / "rollout-2026-07-24T10-00-00-0199-agt.jsonl", "AgentMessage")
    third = list(predict_sessions(read(other), CODEX_CLI))[2]
    assert third.predicted.read == 20_864
    assert not third.within_tolerance
