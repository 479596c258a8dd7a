"""Agent sessions whose lines name no model (``--model`` / ``--provider`` stand in), and
session files that record no request (the refusal says why): hand-built Claude Code
transcripts and Codex rollouts in the documented shapes (docs/clients.md)."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from cachecast.cli import app
from cachecast.core import db
from cachecast.core.errors import LogRecordError
from cachecast.sessions.reading import ModelDefaults, SessionRequest, session_requests

SESSION = "0b7e6c1a-0000-4000-8000-000000000001"


@pytest.fixture(scope="module")
def store_url(tmp_path_factory: pytest.TempPathFactory) -> str:
    url = f"sqlite:///{tmp_path_factory.mktemp('store') / 'cachecast.db'}"
    db.upgrade(url)
    return url


def write(path: Path, lines: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path


def claude_transcript(path: Path, model: str | None) -> Path:
    """One prompt and one response of 4,000 uncached prompt tokens and 20 output tokens;
    the response's ``message.model`` is left out where ``model`` is None (as trimmed or
    hand-written transcripts do)."""
    message: dict[str, Any] = {
        "id": "msg_1",
        "role": "assistant",
        "content": [{"type": "text", "text": "ok"}],
        "usage": {
            "input_tokens": 4000,
            "cache_creation_input_tokens": 0,
            "cache_read_input_tokens": 0,
            "output_tokens": 20,
        },
    }
    if model is not None:
        message["model"] = model
    return write(
        path,
        [
            {
                "type": "user",
                "uuid": "u1",
                "parentUuid": None,
                "sessionId": SESSION,
                "timestamp": "2026-02-23T10:00:00Z",
                "message": {"role": "user", "content": "hello"},
            },
            {
                "type": "assistant",
                "uuid": "a1",
                "parentUuid": "u1",
                "sessionId": SESSION,
                "timestamp": "2026-02-23T10:00:05Z",
                "message": message,
            },
        ],
    )


def codex_without_model(path: Path, provider: str | None) -> Path:
    """A rollout with no turn_context (so nothing names the model) and one request of 5,000
    prompt tokens, 1,024 of them cached; ``session_meta`` names ``provider`` where given."""
    meta: dict[str, Any] = {"id": "r1"}
    if provider is not None:
        meta["model_provider"] = provider
    usage = {"input_tokens": 5000, "cached_input_tokens": 1024, "output_tokens": 10}
    return write(
        path,
        [
            {"timestamp": "2026-02-23T11:40:00Z", "type": "session_meta", "payload": meta},
            {
                "timestamp": "2026-02-23T11:40:03Z",
                "type": "event_msg",
                "payload": {
                    "type": "token_count",
                    "info": {"total_token_usage": usage, "last_token_usage": usage},
                },
            },
        ],
    )


def read(path: Path, defaults: ModelDefaults) -> list[SessionRequest | LogRecordError]:
    return list(session_requests(path, "s", defaults=defaults))


def test_claude_code_line_without_model_takes_the_given_model(tmp_path: Path) -> None:
    path = claude_transcript(tmp_path / "s.jsonl", None)
    (error,) = read(path, ModelDefaults())
    assert isinstance(error, LogRecordError)
    assert (error.location.line, error.location.field) == (2, "message.model")
    assert "give --model" in error.reason
    (request,) = read(path, ModelDefaults("claude-sonnet-4-20250514", "vertex"))
    assert isinstance(request, SessionRequest)
    assert (request.facts.model, request.provider) == ("claude-sonnet-4-20250514", "vertex")
    assert request.facts.prompt_tokens == 4000  # 4,000 uncached + 0 read + 0 written
    # Without --provider: Anthropic's API, as for a line naming a plain model id.
    (request,) = read(path, ModelDefaults("claude-sonnet-4-20250514"))
    assert isinstance(request, SessionRequest) and request.provider == "anthropic"


def test_claude_code_line_naming_its_model_keeps_it(tmp_path: Path) -> None:
    path = claude_transcript(tmp_path / "s.jsonl", "claude-opus-4-1-20250805")
    (request,) = read(path, ModelDefaults("claude-sonnet-4-20250514", "vertex"))
    assert isinstance(request, SessionRequest)
    assert (request.facts.model, request.provider) == ("claude-opus-4-1-20250805", "anthropic")


def test_codex_request_no_turn_context_names(tmp_path: Path) -> None:
    bare = codex_without_model(tmp_path / "bare.jsonl", None)
    (error,) = read(bare, ModelDefaults())
    assert isinstance(error, LogRecordError)
    assert (error.location.line, error.location.field) == (2, "model")
    assert "give --model" in error.reason
    (request,) = read(bare, ModelDefaults("gpt-5.1-codex", "azure"))
    assert isinstance(request, SessionRequest)
    assert (request.facts.model, request.provider) == ("gpt-5.1-codex", "azure")
    assert (request.observed.read, request.observed.uncached) == (1024, 5000 - 1024)
    # The rollout's own session_meta names its provider: --provider does not replace it.
    named = codex_without_model(tmp_path / "named.jsonl", "openai")
    (request,) = read(named, ModelDefaults("gpt-5.1-codex", "azure"))
    assert isinstance(request, SessionRequest) and request.provider == "openai"
    (request,) = read(bare, ModelDefaults("gpt-5.1-codex"))
    assert isinstance(request, SessionRequest) and request.provider == "openai"


def test_reconcile_cli_applies_model_to_claude_code(store_url: str, tmp_path: Path) -> None:
    path = claude_transcript(tmp_path / "s.jsonl", None)
    base = ["reconcile", str(path), "--json", "--database-url", store_url]
    refused = CliRunner().invoke(app, base)
    assert refused.exit_code == 2
    assert f"{path}:2: message.model: no model on this line; give --model" in refused.stderr
    result = CliRunner().invoke(app, [*base, "--model", "claude-sonnet-4-20250514"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    (target,) = report["targets"]
    assert (target["provider"], target["model"], target["requests"]) == (
        "anthropic",
        "claude-sonnet-4",
        1,
    )
    # Sonnet 4 at $3 / $15 per million (contracts history): 4,000 x 3 + 20 x 15 = 12,300
    # millionths of a dollar.
    assert report["requests"][0]["observed_cost"] == "0.0123"


def test_reconcile_cli_applies_model_to_codex(store_url: str, tmp_path: Path) -> None:
    path = codex_without_model(tmp_path / "r.jsonl", None)
    base = ["reconcile", str(path), "--json", "--database-url", store_url]
    refused = CliRunner().invoke(app, base)
    assert refused.exit_code == 2 and f"{path}:2: model: no model on this line" in refused.stderr
    result = CliRunner().invoke(app, [*base, "--model", "gpt-5.1-codex", "--provider", "openai"])
    assert result.exit_code == 0, result.output
    (target,) = json.loads(result.stdout)["targets"]
    assert (target["provider"], target["model"], target["requests"]) == (
        "openai",
        "gpt-5.1-codex",
        1,
    )


def test_tokenize_applies_model_to_claude_code(tmp_path: Path) -> None:
    path = claude_transcript(tmp_path / "s.jsonl", None)
    refused = CliRunner().invoke(app, ["tokenize", str(path)])
    assert refused.exit_code == 2
    assert f"{path}:2: model: no model in the record and none given (--model)" in refused.stderr
    result = CliRunner().invoke(app, ["tokenize", str(path), "--model", "claude-sonnet-4-5"])
    assert result.exit_code == 0, result.output
    # Its one response, calibrated to the usage's 4,000 prompt tokens.
    assert result.stdout.startswith("msg_1\t4000 tokens\t")


def test_rollout_without_token_count_says_why(store_url: str, tmp_path: Path) -> None:
    # A session cut before its first response: metadata, a user message, no token_count.
    path = write(
        tmp_path / "cut.jsonl",
        [
            {"timestamp": "2026-02-23T11:40:00Z", "type": "session_meta", "payload": {"id": "c"}},
            {
                "timestamp": "2026-02-23T11:40:01Z",
                "type": "turn_context",
                "payload": {"model": "gpt-5.1-codex"},
            },
            {
                "timestamp": "2026-02-23T11:40:02Z",
                "type": "event_msg",
                "payload": {"type": "user_message", "message": "hi"},
            },
        ],
    )
    result = CliRunner().invoke(app, ["reconcile", str(path), "--database-url", store_url])
    assert result.exit_code == 2 and "Traceback" not in result.output
    assert f"{path}: no readable record: a Codex rollout with no token_count event" in (
        result.stderr
    )
    assert "stops before its first response" in result.stderr


def test_turn_completed_usage_is_named_not_read(store_url: str, tmp_path: Path) -> None:
    # codex exec --json's shape of a turn's usage, as an event_msg: two turns, not read.
    usage = {"input_tokens": 1420, "cached_input_tokens": 380, "output_tokens": 910}
    turn = {"type": "turn.completed", "usage": usage}
    path = write(
        tmp_path / "turns.jsonl",
        [
            {"timestamp": "2026-02-23T11:40:00Z", "type": "session_meta", "payload": {"id": "t"}},
            {"timestamp": "2026-02-23T11:40:05Z", "type": "event_msg", "payload": turn},
            {"timestamp": "2026-02-23T11:40:09Z", "type": "event_msg", "payload": turn},
        ],
    )
    skipped: Counter[str] = Counter()
    assert list(session_requests(path, "t", skipped=skipped)) == []
    assert sum(count for why, count in skipped.items() if "turn.completed" in why) == 2
    result = CliRunner().invoke(app, ["reconcile", str(path), "--database-url", store_url])
    assert result.exit_code == 2 and "Traceback" not in result.output
    assert "usage is in turn.completed events" in result.stderr
    assert "which are not read" in result.stderr and "2 Codex turn.completed" in result.stderr


def test_inspect_applies_model_to_claude_code(tmp_path: Path) -> None:
    path = claude_transcript(tmp_path / "s.jsonl", None)
    refused = CliRunner().invoke(app, ["inspect", str(path)])
    assert f"{path}:2: message.model: no model on this line; give --model" in refused.stderr
    result = CliRunner().invoke(app, ["inspect", str(path), "--model", "claude-sonnet-4-5"])
    assert result.exit_code == 0, result.output
    # The one response, named by --model, its usage as written: 4,000 prompt tokens.
    assert "claude-sonnet-4-5 (1)" in result.stdout
    assert "input 4,000 (incl. cached)" in result.stdout
