"""A best-effort miss in a rollout of a Codex CLI version before 0.88.0 names the per-turn
routing token those versions do not send (docs/clients.md, Codex CLI, "Lifetime" and
"Routing and overflow"), read from the rollout's ``session_meta`` ``cli_version``.

Every rollout here is built by hand in the documented format (``session_meta``,
``turn_context``, ``event_msg`` ``user_message`` and ``token_count`` events with running
``total_token_usage`` and ``last_token_usage``). Figures, by hand: request 1 sends 20,000
tokens (none cached) and writes 100 of output; request 2, 5 s later, may read request 1's
prompt plus output in OpenAI's steps: 1,024 + floor((20,100 - 1,024) / 128) x 128
= 1,024 + 149 x 128 = 20,096; it reads 1,024 (a best-effort miss of 19,072).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from cachecast.sessions.profiles import CODEX_CLI, older_version
from cachecast.sessions.reading import SessionRequest, session_requests
from cachecast.sessions.replay import PredictedRequest, predict_sessions

NAMED = "wrote this log: versions before 0.88.0 do not send back within a user turn"


def _usage(prompt: int, read: int, output: int) -> dict[str, int]:
    return {"input_tokens": prompt, "cached_input_tokens": read, "output_tokens": output}


def rollout(
    path: Path, version: str | None, *, second_opens_turn: bool = False, second_read: int = 1_024
) -> Path:
    """Two requests of one session (the figures of the module's docstring); the second opens
    a user turn of its own where ``second_opens_turn``."""
    meta: dict[str, Any] = {"id": "019a0000-0000-7000-8000-000000000001", "cwd": "/w"}
    if version is not None:
        meta["cli_version"] = version
    first, second = _usage(20_000, 0, 100), _usage(21_000, second_read, 50)
    total = {key: first[key] + second[key] for key in first}
    lines: list[dict[str, Any]] = [
        {"timestamp": "2025-11-17T21:30:00.000Z", "type": "session_meta", "payload": meta},
        {
            "timestamp": "2025-11-17T21:30:00.100Z",
            "type": "turn_context",
            "payload": {"cwd": "/w", "model": "gpt-5.1-codex"},
        },
        {
            "timestamp": "2025-11-17T21:30:00.200Z",
            "type": "event_msg",
            "payload": {"type": "user_message", "message": "fix the tests"},
        },
        {
            "timestamp": "2025-11-17T21:30:10.000Z",
            "type": "event_msg",
            "payload": {
                "type": "token_count",
                "info": {"total_token_usage": first, "last_token_usage": first},
            },
        },
    ]
    if second_opens_turn:
        lines.append(
            {
                "timestamp": "2025-11-17T21:30:12.000Z",
                "type": "event_msg",
                "payload": {"type": "user_message", "message": "and the docs"},
            }
        )
    lines.append(
        {
            "timestamp": "2025-11-17T21:30:15.000Z",
            "type": "event_msg",
            "payload": {
                "type": "token_count",
                "info": {"total_token_usage": total, "last_token_usage": second},
            },
        }
    )
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path


def second_request(path: Path) -> PredictedRequest:
    read = [r for r in session_requests(path, path.name) if isinstance(r, SessionRequest)]
    assert len(read) == 2
    return list(predict_sessions(read, CODEX_CLI))[1]


def test_a_miss_in_a_rollout_before_0_88_names_the_routing_token(tmp_path: Path) -> None:
    second = second_request(rollout(tmp_path / "r.jsonl", "0.58.0"))
    assert second.request.client_version == "0.58.0"
    assert second.predicted.read == 20_096
    assert not second.within_tolerance and second.cause == "provider_best_effort"
    assert "missed 19,072 of the 20,096 tokens" in second.why
    assert f"Codex CLI 0.58.0 {NAMED}" in second.why
    assert "(x-codex-turn-state)" in second.why
    assert "updating Codex CLI to 0.88.0 or later may avoid such misses" in second.why


@pytest.mark.parametrize("version", ["0.88.0", "0.104.0", "1.0.0", None, "dev"])
def test_newer_unknown_or_unnumbered_versions_are_not_named(
    tmp_path: Path, version: str | None
) -> None:
    second = second_request(rollout(tmp_path / "r.jsonl", version))
    assert second.cause == "provider_best_effort"  # the same miss
    assert "x-codex-turn-state" not in second.why


def test_the_request_that_opens_a_user_turn_is_not_named(tmp_path: Path) -> None:
    # The token is the turn's own: the first request of a turn has none to send back.
    second = second_request(rollout(tmp_path / "r.jsonl", "0.66.0", second_opens_turn=True))
    assert second.request.facts.user_turn
    assert second.cause == "provider_best_effort"
    assert "x-codex-turn-state" not in second.why


def test_a_request_that_read_its_prefix_is_not_named(tmp_path: Path) -> None:
    second = second_request(rollout(tmp_path / "r.jsonl", "0.58.0", second_read=20_096))
    assert second.within_tolerance and second.cause is None
    assert "x-codex-turn-state" not in second.why


@pytest.mark.parametrize(
    ("version", "than", "older"),
    [
        ("0.58.0", "0.88.0", True),
        ("0.66.0", "0.88.0", True),
        ("0.87.9", "0.88.0", True),
        ("0.88.0", "0.88.0", False),
        ("0.104.0", "0.88.0", False),  # by number, not as text ("0.104" < "0.88" as text)
        ("0.88.0-alpha.3", "0.88.0", False),  # its numbered part is 0.88.0
        ("0.9", "0.88.0", True),
        (None, "0.88.0", False),
        ("", "0.88.0", False),
        ("dev", "0.88.0", False),
    ],
)
def test_older_version(version: str | None, than: str, older: bool) -> None:
    assert older_version(version, than) is older
