"""The command line on hostile logs built here (issue 28): a 200 MB JSON line, a timestamp
of 1e300, an integer of 5,000 digits, nesting of 1,000 levels, a log over the pass's byte
budget. Each is exit 2 naming file, line and field, in a child process whose peak memory is
measured (``bench.peak``), never exit 3."""

from __future__ import annotations

import dataclasses
import json
import os
from pathlib import Path

import pytest

from bench.peak import run_measured
from cachecast.core.errors import LimitExceededError
from cachecast.core.limits import DEFAULT_LIMITS, limits_in_force
from cachecast.passes.log_input import LogInput

REPO = Path(__file__).resolve().parents[2]
RECORD = {
    "provider": "openai",
    "model": "gpt-4o",
    "request": {"model": "gpt-4o", "messages": [{"role": "user", "content": "hi"}]},
}
MIB = 1024 * 1024
# The bound for any hostile file: the process stays under 500 MB.
PEAK_KIB = 500 * 1024
ESTIMATE = ["--target", "openai:gpt-4o", "--at", "2026-11-01", "--strict"]


def env(database_url: str | None = None) -> dict[str, str]:
    extra = {"CACHECAST_DATABASE_URL": database_url} if database_url else {}
    return {**os.environ, "PYTHONPATH": str(REPO), **extra}


def write_long_line(path: Path, first: dict[str, object] | None, megabytes: int) -> None:
    """A JSONL file whose (second, or only) line holds a prompt of ``megabytes`` MiB, written
    a MiB at a time."""
    with path.open("wb") as handle:
        if first is not None:
            handle.write(json.dumps(first).encode() + b"\n")
        head, tail = json.dumps(RECORD).encode().split(b'"hi"')
        handle.write(head + b'"')
        for _ in range(megabytes):
            handle.write(b"x" * MIB)
        handle.write(b'"' + tail + b"\n")


def test_a_200_mb_json_line_is_refused_before_it_is_read_whole(tmp_path: Path) -> None:
    """Before: read whole, then tokenized (4.5 GB). The line is over max_line_bytes (64 MiB
    on the command line), refused once that many bytes of it are read."""
    log = tmp_path / "long.jsonl"
    write_long_line(log, RECORD, 200)
    ran = run_measured("cachecast", ["inspect", str(log)], env=env(), cwd=REPO)
    assert ran.returncode == 2, ran.stderr
    assert f"{log}:2: <line>: a line longer than 67,108,864 bytes" in ran.stderr
    assert "max_line_bytes" in ran.stderr and "Traceback" not in ran.stderr
    assert ran.peak_kib < PEAK_KIB, ran


def test_a_200_mb_single_line_document_is_refused_by_its_size(tmp_path: Path) -> None:
    """One line only: it might be one JSON document (a minified HAR), which is refused above
    max_document_bytes (64 MiB) before it is read; no reader reads it whole."""
    log = tmp_path / "one.json"
    write_long_line(log, None, 200)
    ran = run_measured("cachecast", ["inspect", str(log)], env=env(), cwd=REPO)
    assert ran.returncode == 2, ran.stderr
    assert "over the 64 MiB bound for a JSON document read whole" in ran.stderr
    assert "max_document_bytes" in ran.stderr
    assert ran.peak_kib < PEAK_KIB, ran


@pytest.mark.parametrize(
    ("line", "field"),
    [
        ({**RECORD, "timestamp": 1e300}, "timestamp"),
        ({**RECORD, "timestamp": "9999-12-31T23:59:59-01:00"}, "timestamp"),
        ({**RECORD, "usage": {"prompt_tokens": "9" * 5000}}, "usage.prompt_tokens"),
    ],
)
def test_estimate_on_a_hostile_record_is_exit_2_naming_the_field(
    migrated_db_url: str, tmp_path: Path, line: dict[str, object], field: str
) -> None:
    log = tmp_path / "hostile.jsonl"
    log.write_text(json.dumps(line) + "\n")
    ran = run_measured(
        "cachecast", ["estimate", str(log), *ESTIMATE], env=env(migrated_db_url), cwd=REPO
    )
    assert ran.returncode == 2, ran.stderr
    assert f"{log}:1: {field}:" in ran.stderr
    assert "Traceback" not in ran.stderr and "internal error" not in ran.stderr
    assert len(ran.stderr) < 2000  # a 5,000-digit value is not repeated


def test_a_tool_schema_nested_1000_levels_is_exit_2(migrated_db_url: str, tmp_path: Path) -> None:
    """Before: a RecursionError or a JSON encoder's depth error (exit 3)."""
    schema = '{"a":' * 1000 + "1" + "}" * 1000
    tool = '{"type":"function","function":{"name":"f","parameters":' + schema + "}}"
    body = dict(RECORD["request"], tools=["TOOL"])  # type: ignore[call-overload]
    log = tmp_path / "tool.jsonl"
    log.write_text(json.dumps({**RECORD, "request": body}).replace('"TOOL"', tool) + "\n")
    ran = run_measured(
        "cachecast", ["estimate", str(log), *ESTIMATE], env=env(migrated_db_url), cwd=REPO
    )
    assert ran.returncode == 2, ran.stderr
    assert f"{log}:1: request.tools[0].function.parameters.a.a" in ran.stderr
    assert "nested more than 254 levels deep" in ran.stderr


def test_the_pass_byte_budget_is_checked_before_anything_is_read(tmp_path: Path) -> None:
    first = tmp_path / "a.jsonl"
    second = tmp_path / "b.jsonl"
    first.write_text(json.dumps(RECORD) + "\n")
    second.write_text(json.dumps(RECORD) + "\n")
    size = first.stat().st_size  # both files have this size
    log = LogInput.of_paths([first, second])
    with limits_in_force(dataclasses.replace(DEFAULT_LIMITS, max_log_bytes=2 * size)):
        log.check_sources()  # exactly the budget
    with (
        limits_in_force(dataclasses.replace(DEFAULT_LIMITS, max_log_bytes=2 * size - 1)),
        pytest.raises(LimitExceededError) as caught,
    ):
        log.check_sources()
    assert f"a log (all its files) of {2 * size:,} bytes is over the limit" in str(caught.value)
    assert "max_log_bytes" in str(caught.value)


def test_a_claude_code_usage_over_the_token_limit_names_file_and_line(tmp_path: Path) -> None:
    """Before: ``error: message.usage.input_tokens: a token count of 1e+40 ...`` without the
    file or line (the Claude Code reader normalizes a response's usage after its last line,
    outside the per-line error handling). The second line holds the claim."""
    event = {
        "type": "assistant",
        "sessionId": "s1",
        "timestamp": "2026-01-01T00:00:00Z",
        "uuid": "u1",
        "requestId": "r1",
        "message": {
            "id": "m1",
            "model": "claude-sonnet-4-5",
            "role": "assistant",
            "content": [{"type": "text", "text": "hi"}],
            "usage": {"input_tokens": 10, "output_tokens": 5},
        },
    }
    claim = json.loads(json.dumps(event))
    claim["uuid"], claim["message"]["id"] = "u2", "m2"
    claim["message"]["usage"]["input_tokens"] = 1e40
    log = tmp_path / "session.jsonl"
    log.write_text(json.dumps(event) + "\n" + json.dumps(claim) + "\n")
    ran = run_measured("cachecast", ["inspect", str(log)], env=env(), cwd=REPO)
    assert ran.returncode == 2, ran.stderr
    assert f"{log}:2: message.usage.input_tokens: a token count of 1e+40" in ran.stderr
    assert "max_request_tokens" in ran.stderr and "Traceback" not in ran.stderr
    assert ran.peak_kib < PEAK_KIB, ran


RUBY_CASSETTE = """---
http_interactions:
- request:
    method: post
    uri: https://api.openai.com/v1/chat/completions
    body:
      encoding: UTF-8
      string: '{"model":"gpt-4o","messages":[{"role":"user","content":"hi"}]}'
    headers: {}
  response:
    status:
      code: CODE
      message: OK
    headers: {}
    body:
      encoding: UTF-8
      string: '{"id":"x","usage":{"prompt_tokens":5,"completion_tokens":1}}'
  recorded_at: Mon, 01 Jan 2024 00:00:00 GMT
recorded_with: VCR 6.0.0
"""


@pytest.mark.parametrize(
    ("code", "returncode", "said"),
    [
        # A YAML integer Python will not convert (past 4,300 digits): the file is refused.
        ("7" * 5000, 2, "{log}: not a YAML cassette (line 12): an integer of 5,000 digits"),
        # The same digits as a string: the interaction is a bad record naming its field.
        (
            "'" + "7" * 5000 + "'",
            0,
            "{log}:3: http_interactions[0].response.status.code: an integer of 5,000 digits",
        ),
    ],
)
def test_a_vcr_status_code_of_5000_digits_is_bad_input_not_exit_3(
    tmp_path: Path, code: str, returncode: int, said: str
) -> None:
    """Before: exit 3 (``ValueError: Exceeds the limit (4300 digits)``) either way."""
    log = tmp_path / "cassette.yml"
    log.write_text(RUBY_CASSETTE.replace("CODE", code))
    ran = run_measured("cachecast", ["inspect", str(log)], env=env(), cwd=REPO)
    assert ran.returncode == returncode, ran.stderr
    assert said.format(log=log) in ran.stderr
    assert "internal error" not in ran.stderr and len(ran.stderr) < 2000
