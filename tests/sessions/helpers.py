"""Hand-built session files for the session tests."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any


def codex_rollout(path: Path, model: str = "m", user_text: str | None = None) -> Path:
    """A Codex rollout of one request (5,000 prompt tokens, none cached), with a user
    message of ``user_text`` before it where given (on line 3)."""
    usage = {"input_tokens": 5000, "cached_input_tokens": 0, "output_tokens": 10}
    lines: list[dict[str, Any]] = [
        {"timestamp": "2026-02-23T11:40:00Z", "type": "session_meta", "payload": {"id": "x"}},
        {"timestamp": "2026-02-23T11:40:01Z", "type": "turn_context", "payload": {"model": model}},
    ]
    if user_text is not None:
        content = [{"type": "input_text", "text": user_text}]
        lines.append(
            {
                "timestamp": "2026-02-23T11:40:02Z",
                "type": "response_item",
                "payload": {"type": "message", "role": "user", "content": content},
            }
        )
    lines.append(
        {
            "timestamp": "2026-02-23T11:40:03Z",
            "type": "event_msg",
            "payload": {
                "type": "token_count",
                "info": {"total_token_usage": usage, "last_token_usage": usage},
            },
        }
    )
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path
