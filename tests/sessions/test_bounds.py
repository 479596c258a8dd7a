"""What a session file may make the readers build: Codex's redacted spans are refused by
their claimed length before any filler is made, and a Claude Code file whose usage claims
millions of tokens per request is inspected and reconciled without token lists (peak memory
measured in a child process)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from cachecast.cli import app
from cachecast.core import db
from tests.sessions.helpers import codex_rollout

PEAK_MB = 500  # issue 28: a hostile file of a few MB keeps a command under 500 MB


@pytest.mark.parametrize("length", ["9" * 5000, "1000000000"])
def test_redacted_span_refused_by_its_length(tmp_path: Path, length: str) -> None:
    rollout = codex_rollout(
        tmp_path / "rollout.jsonl", user_text=f"[REDACTED_TEXT len={length} sha=ab12]"
    )
    # inspect and reconcile read sessions without their prompts: no filler is made at all.
    result = CliRunner().invoke(app, ["inspect", str(rollout), "--json"])
    assert result.exit_code == 0, result.output
    inspected = json.loads(result.stdout)["files"][0]
    assert inspected["errors"] == [] and inspected["requests"] == 1
    # So does estimate (a session is priced from its observed usage, docs/predictions.md).
    url = f"sqlite:///{tmp_path / 'cachecast.db'}"
    db.upgrade(url)
    target = ["--target", "openai:gpt-4o", "--at", "2025-06-01"]
    result = CliRunner().invoke(
        app, ["estimate", str(rollout), *target, "--strict", "--json", "--database-url", url]
    )
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["targets"][0]["input_tokens"] == 5000
    # tokenize builds prompts: the span (line 3, the message's text) is refused by its
    # claimed length before any filler is made.
    result = CliRunner().invoke(app, ["tokenize", str(rollout), "--model", "gpt-4o", "--strict"])
    assert result.exit_code == 2, result.output
    assert "rollout.jsonl:3" in result.output and "payload.content[0].text" in result.output
    assert "Traceback" not in result.output


def hostile_claude_code(path: Path) -> Path:
    """100 requests, each claiming 9,000,000 cached tokens (just under the per-request cap)."""
    lines = []
    for i in range(100):
        when = f"2026-02-11T21:{i // 60:02d}:{i % 60:02d}Z"
        lines.append(
            {
                "type": "user",
                "sessionId": "s1",
                "uuid": f"u{i}",
                "parentUuid": f"a{i - 1}" if i else None,
                "timestamp": when,
                "message": {"role": "user", "content": "x" * 10_000},
            }
        )
        usage = {
            "input_tokens": 3,
            "cache_read_input_tokens": 9_000_000,
            "cache_creation_input_tokens": 0,
            "output_tokens": 5,
        }
        lines.append(
            {
                "type": "assistant",
                "sessionId": "s1",
                "uuid": f"a{i}",
                "parentUuid": f"u{i}",
                "timestamp": when,
                "message": {
                    "id": f"msg_{i}",
                    "role": "assistant",
                    "model": "claude-opus-4-6",
                    "content": [{"type": "text", "text": "ok"}],
                    "usage": usage,
                },
            }
        )
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path


# The child's own high-water mark (VmHWM starts afresh at exec; ru_maxrss would carry the
# forking test process's size over).
PEAK_SCRIPT = """
import sys
from cachecast.cli import app
try:
    app(sys.argv[1:], standalone_mode=False)
except SystemExit:
    pass
with open("/proc/self/status") as status:
    peak = [line.split()[1] for line in status if line.startswith("VmHWM:")][0]
print("PEAK_KB", peak, file=sys.stderr)
"""


def peak_mb(*args: str) -> tuple[float, str]:
    done = subprocess.run(
        [sys.executable, "-c", PEAK_SCRIPT, *args], capture_output=True, text=True, timeout=300
    )
    line = [each for each in done.stderr.splitlines() if each.startswith("PEAK_KB")][-1]
    return int(line.split()[1]) / 1024, done.stdout


def test_usage_claims_near_the_cap_build_no_token_lists(tmp_path: Path) -> None:
    log = hostile_claude_code(tmp_path / "session.jsonl")
    assert log.stat().st_size > 1_000_000
    peak, out = peak_mb("inspect", str(log), "--json")
    assert peak < PEAK_MB, peak
    # 100 requests x 9,000,003 prompt tokens, counted from the claims themselves.
    assert json.loads(out)["files"][0]["observed"]["input_tokens"] == 900_000_300
    url = f"sqlite:///{tmp_path / 'cachecast.db'}"
    db.upgrade(url)
    peak, out = peak_mb("reconcile", str(log), "--json", "--database-url", url)
    assert peak < PEAK_MB, peak
    assert json.loads(out)["summary"]["requests"] == 100


def test_many_large_redacted_spans_make_no_filler(tmp_path: Path) -> None:
    # 200 messages each claiming 9,999,999 redacted characters (each under the per-field
    # limit; 2e9 characters together) and one request: inspect and reconcile stay small.
    lines = [
        {"timestamp": "2026-02-23T11:40:00Z", "type": "session_meta", "payload": {"id": "x"}},
        {"timestamp": "2026-02-23T11:40:01Z", "type": "turn_context", "payload": {"model": "m"}},
    ]
    for index in range(200):
        text = f"[REDACTED_TEXT len=9999999 sha={index:08x}]"
        content = [{"type": "input_text", "text": text}]
        lines.append(
            {
                "timestamp": "2026-02-23T11:40:02Z",
                "type": "response_item",
                "payload": {"type": "message", "role": "user", "content": content},
            }
        )
    usage = {"input_tokens": 5000, "cached_input_tokens": 0, "output_tokens": 10}
    info = {"total_token_usage": usage, "last_token_usage": usage}
    lines.append(
        {
            "timestamp": "2026-02-23T11:40:03Z",
            "type": "event_msg",
            "payload": {"type": "token_count", "info": info},
        }
    )
    rollout = tmp_path / "rollout.jsonl"
    rollout.write_text("".join(json.dumps(line) + "\n" for line in lines))
    peak, out = peak_mb("inspect", str(rollout), "--json")
    assert peak < PEAK_MB, peak
    assert json.loads(out)["files"][0]["requests"] == 1
