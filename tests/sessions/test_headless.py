"""Agents' headless output (``claude -p --output-format stream-json|json``, ``codex exec
--json``): hand-built files in the documented shapes (docs/clients.md, "Headless output").

Expected bills are worked by hand from the list prices in force today (the output has no
time: undated requests are priced under today's contract, docs/clients.md), $ per million
tokens: claude-sonnet-4-5 input 3, 5-minute write 3.75, read 0.30, output 15; gpt-5 input
1.25, cached input 0.125, output 10.
"""

from __future__ import annotations

import csv
import io
import json
from collections import Counter
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from cachecast.cli import app
from cachecast.contracts import ContractStore
from cachecast.core.errors import BadInputError
from cachecast.logs.errors import UnknownLogFormatError
from cachecast.logs.formats import detect_format
from cachecast.sessions.reading import SessionRequest, session_format, session_requests
from cachecast.usecases.usage import SessionFile, UsageReport, UsageRequest, usage_report

MILLION = Decimal(1_000_000)
SONNET = "claude-sonnet-4-5-20250929"
SESSION = "0b7c1a52-6a0e-4d8a-9f3c-3e2a1c5d7e90"


def write(path: Path, events: list[Any]) -> Path:
    path.write_text("".join(json.dumps(event) + "\n" for event in events))
    return path


def usage(uncached: int, written: int, read: int, output: int) -> dict[str, Any]:
    return {
        "input_tokens": uncached,
        "cache_creation_input_tokens": written,
        "cache_read_input_tokens": read,
        "cache_creation": {"ephemeral_5m_input_tokens": written, "ephemeral_1h_input_tokens": 0},
        "output_tokens": output,
        "service_tier": "standard",
    }


def assistant(message_id: str, block: dict[str, Any], counts: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": "assistant",
        "message": {
            "id": message_id,
            "type": "message",
            "role": "assistant",
            "model": SONNET,
            "content": [block],
            "stop_reason": None,
            "usage": counts,
        },
        "parent_tool_use_id": None,
        "session_id": SESSION,
        "uuid": f"u-{message_id}-{block['type']}",
    }


INIT = {
    "type": "system",
    "subtype": "init",
    "cwd": "/repo",
    "session_id": SESSION,
    "tools": ["Bash", "Read"],
    "mcp_servers": [],
    "model": SONNET,
    "permissionMode": "default",
    "apiKeySource": "ANTHROPIC_API_KEY",
    "claude_code_version": "2.0.14",
    "uuid": "u-init",
}


def result(
    summed: dict[str, Any], *, cost: float = 0.0488, model_usage: bool = True
) -> dict[str, Any]:
    event: dict[str, Any] = {
        "type": "result",
        "subtype": "success",
        "is_error": False,
        "duration_ms": 9100,
        "duration_api_ms": 8200,
        "num_turns": 3,
        "result": "Done.",
        "session_id": SESSION,
        "total_cost_usd": cost,
        "usage": summed,
        "permission_denials": [],
        "uuid": "u-result",
    }
    if model_usage:
        event["modelUsage"] = {
            SONNET: {
                "inputTokens": summed["input_tokens"],
                "outputTokens": summed["output_tokens"],
                "cacheReadInputTokens": summed["cache_read_input_tokens"],
                "cacheCreationInputTokens": summed["cache_creation_input_tokens"],
                "webSearchRequests": 0,
                "costUSD": cost,
                "contextWindow": 200000,
            }
        }
    return event


def stream(path: Path, final: dict[str, Any] | None = None) -> Path:
    """Two responses; the first written as two lines (a text block, then a tool call) that
    repeat its id and usage, the second line with the final output count (200)."""
    return write(
        path,
        [
            INIT,
            assistant("msg_01", {"type": "text", "text": "Looking."}, usage(3, 10_000, 0, 10)),
            assistant(
                "msg_01",
                {"type": "tool_use", "id": "toolu_1", "name": "Bash", "input": {"command": "ls"}},
                usage(3, 10_000, 0, 200),
            ),
            {
                "type": "user",
                "message": {
                    "role": "user",
                    "content": [{"tool_use_id": "toolu_1", "type": "tool_result", "content": "a"}],
                },
                "parent_tool_use_id": None,
                "session_id": SESSION,
                "uuid": "u-tool",
            },
            assistant("msg_02", {"type": "text", "text": "Done."}, usage(5, 1_000, 10_000, 100)),
            final if final is not None else result(usage(8, 11_000, 10_000, 300)),
        ],
    )


# Request 1: 3 x 3 + 10,000 x 3.75 + 200 x 15 = 40,509 micro-dollars; request 2: 5 x 3 +
# 1,000 x 3.75 + 10,000 x 0.30 + 100 x 15 = 8,265.
STREAM_BILL = Decimal(40_509 + 8_265) / MILLION

EXEC: list[dict[str, Any]] = [
    {"type": "thread.started", "thread_id": "0199a213-81c0-7800-8aa1-bbab2a035a53"},
    {"type": "turn.started"},
    {"type": "item.completed", "item": {"id": "item_0", "type": "reasoning", "text": "**Plan**"}},
    {
        "type": "item.completed",
        "item": {
            "id": "item_1",
            "type": "command_execution",
            "command": "bash -lc ls",
            "aggregated_output": "a\n",
            "exit_code": 0,
            "status": "completed",
        },
    },
    {"type": "item.completed", "item": {"id": "item_2", "type": "agent_message", "text": "Done."}},
    {
        "type": "turn.completed",
        "usage": {"input_tokens": 24_763, "cached_input_tokens": 24_448, "output_tokens": 122},
    },
    {"type": "turn.started"},
    {"type": "turn.failed", "error": {"message": "stream disconnected"}},
]


def report_of(url: str, *paths: Path, **options: Any) -> UsageReport:
    files = [SessionFile(path=path) for path in paths]
    return usage_report(UsageRequest(files=files, **options), ContractStore(url))


def requests_of(path: Path, **options: Any) -> list[SessionRequest]:
    found = list(session_requests(path, str(path), **options))
    assert all(isinstance(each, SessionRequest) for each in found), found
    return [each for each in found if isinstance(each, SessionRequest)]


# --- detection -------------------------------------------------------------------------


def test_each_shape_is_told_by_content_not_name(tmp_path: Path) -> None:
    # Named alike (.txt): only the content tells them apart.
    claude = stream(tmp_path / "a.txt")
    whole = write(tmp_path / "b.txt", [result(usage(8, 11_000, 10_000, 300))])
    codex = write(tmp_path / "c.txt", EXEC)
    assert [detect_format(p)[0].name for p in (claude, whole, codex)] == [
        "claude-stream-json",
        "claude-json",
        "codex-exec",
    ]
    assert [session_format(p) for p in (claude, whole, codex)] == [
        "claude-stream-json",
        "claude-json",
        "codex-exec",
    ]


def test_a_file_of_none_names_each_headless_shape_and_why(tmp_path: Path) -> None:
    path = write(tmp_path / "x.jsonl", [{"type": "assistant", "sessionid": "s"}])
    with pytest.raises(UnknownLogFormatError) as caught:
        detect_format(path)
    tried = dict(caught.value.tried)
    assert "session_id" in tried["claude-stream-json"]
    assert "result" in tried["claude-json"]
    assert "thread.started" in tried["codex-exec"]


# --- Claude Code stream-json -----------------------------------------------------------


def test_stream_json_counts_each_response_once_with_its_last_usage(tmp_path: Path) -> None:
    skipped: Counter[str] = Counter()
    found = requests_of(stream(tmp_path / "run.jsonl"), skipped=skipped)
    assert [(r.facts.request_id, r.observed.output) for r in found] == [
        ("msg_01", 200),
        ("msg_02", 100),
    ]
    first = found[0]
    assert (first.observed.read, first.observed.write, first.observed.uncached) == (0, 10_000, 3)
    assert first.client == "claude-code" and first.provider == "anthropic"
    assert first.client_version == "2.0.14" and first.project == "/repo"
    assert not first.dated and first.unit == "request"
    assert sum(skipped.values()) == 2  # the repeated line and the result


def test_stream_json_usage_billed_by_hand_beside_the_clients_estimate(
    migrated_db_url: str, tmp_path: Path
) -> None:
    report = report_of(migrated_db_url, stream(tmp_path / "run.jsonl"))
    assert report.totals.requests == 2 and report.totals.turns == 0
    assert report.totals.cost == STREAM_BILL
    assert report.rows[0].group == {"day": "(no time)"}
    [stated] = report.client_statements
    assert stated.stated_cost_usd == Decimal("0.0488") and stated.cost == STREAM_BILL
    assert stated.num_turns == 3 and stated.usage_matches is True


def test_a_result_that_disagrees_with_the_responses_is_reported_not_used(
    migrated_db_url: str, tmp_path: Path
) -> None:
    # The result claims 12,000 written; the responses wrote 11,000: the bill stays theirs.
    path = stream(tmp_path / "run.jsonl", result(usage(8, 12_000, 10_000, 300)))
    report = report_of(migrated_db_url, path)
    assert report.totals.cost == STREAM_BILL
    [stated] = report.client_statements
    assert stated.usage_matches is False
    assert "cache writes 11,000 vs 12,000" in stated.usage_check


def test_a_sub_agents_responses_are_a_lineage_of_their_own(tmp_path: Path) -> None:
    sub = assistant("msg_09", {"type": "text", "text": "x"}, usage(2, 500, 0, 5))
    sub["parent_tool_use_id"] = "toolu_task"
    path = write(tmp_path / "run.jsonl", [INIT, sub])
    [request] = requests_of(path)
    assert request.facts.lineage == f"{SESSION}/agent-toolu_task"
    assert request.facts.subagent and request.session == SESSION


# --- Claude Code json (the result alone) -----------------------------------------------


def test_json_result_is_one_total_per_model_no_request_count(
    migrated_db_url: str, tmp_path: Path
) -> None:
    path = write(tmp_path / "out.json", [result(usage(8, 11_000, 10_000, 300))])
    report = report_of(migrated_db_url, path, by=["model"])
    totals = report.totals
    assert (totals.requests, totals.runs) == (0, 1)
    # 8 x 3 + 11,000 x 3.75 + 10,000 x 0.30 + 300 x 15 = 48,774 micro-dollars: the same
    # tokens as the stream's two responses.
    assert totals.cost == STREAM_BILL
    assert totals.missed_tokens_by_cause == {} and report.worst_requests == []
    [stated] = report.client_statements
    assert stated.usage_matches is True  # modelUsage against the aggregate usage


def test_json_result_without_model_usage_needs_model(migrated_db_url: str, tmp_path: Path) -> None:
    path = write(tmp_path / "out.json", [result(usage(8, 0, 0, 300), model_usage=False)])
    with pytest.raises(BadInputError, match="--model"):
        report_of(migrated_db_url, path)
    report = report_of(migrated_db_url, path, model="claude-sonnet-4-5")
    assert report.totals.cost == Decimal(8 * 3 + 300 * 15) / MILLION


# --- codex exec --json -----------------------------------------------------------------


def test_codex_exec_turns_need_model_and_are_billed_per_turn(
    migrated_db_url: str, tmp_path: Path
) -> None:
    path = write(tmp_path / "exec.jsonl", EXEC)
    with pytest.raises(BadInputError, match="--model") as caught:
        report_of(migrated_db_url, path)
    assert caught.value.location is not None and caught.value.location.source == str(path)
    report = report_of(migrated_db_url, path, model="gpt-5")
    totals = report.totals
    assert (totals.requests, totals.turns) == (0, 1)
    # 315 uncached x 1.25 + 24,448 cached x 0.125 + 122 x 10 = 4,669.75 micro-dollars.
    assert totals.cost == Decimal("4669.75") / MILLION
    assert totals.cache_read_tokens == 24_448 and totals.prompt_tokens == 24_763


def test_older_codex_exec_protocol_counts_requests_with_the_configured_model(
    tmp_path: Path,
) -> None:
    path = write(
        tmp_path / "old.jsonl",
        [
            {
                "model": "codex-mini-latest",
                "provider": "openai",
                "approval": "never",
                "sandbox": "read-only",
                "workdir": "/repo",
            },
            {"prompt": "fix the test"},
            {"id": "0", "msg": {"type": "task_started"}},
            {
                "id": "0",
                "msg": {
                    "type": "token_count",
                    "input_tokens": 3804,
                    "cached_input_tokens": 0,
                    "output_tokens": 95,
                    "reasoning_output_tokens": 64,
                    "total_tokens": 3899,
                },
            },
            {"id": "0", "msg": {"type": "task_complete", "last_agent_message": "done"}},
        ],
    )
    assert detect_format(path)[0].name == "codex-exec"
    [request] = requests_of(path)
    assert request.unit == "request" and request.facts.model == "codex-mini-latest"
    assert request.facts.prompt_tokens == 3804 and request.observed.output == 95


def test_reconcile_refuses_turns_and_estimate_too(migrated_db_url: str, tmp_path: Path) -> None:
    path = write(tmp_path / "exec.jsonl", EXEC)
    runner = CliRunner()
    for command, *more in (("reconcile",), ("estimate", "--target", "openai:gpt-5")):
        result = runner.invoke(
            app,
            [command, str(path), *more, "--model", "gpt-5", "--database-url", migrated_db_url],
        )
        assert result.exit_code == 2, (command, result.output)
        assert "per turn" in result.output, (command, result.output)


def test_usage_cli_says_requests_are_not_known(migrated_db_url: str, tmp_path: Path) -> None:
    path = write(tmp_path / "exec.jsonl", EXEC)
    result = CliRunner().invoke(
        app, ["usage", str(path), "--model", "gpt-5", "--database-url", migrated_db_url]
    )
    assert result.exit_code == 0, result.output
    assert "not known" in result.output and "1 turn(s) of codex exec --json" in result.output
    table = CliRunner().invoke(
        app,
        ["usage", str(path), "--model", "gpt-5", "--csv", "--database-url", migrated_db_url],
    )
    rows = list(csv.DictReader(io.StringIO(table.stdout)))
    assert [(row["requests"], row["turns"], row["runs"]) for row in rows] == [
        ("0", "1", "0"),
        ("0", "1", "0"),
    ]


def test_usage_cli_sets_the_clients_estimate_beside_the_bill(
    migrated_db_url: str, tmp_path: Path
) -> None:
    path = stream(tmp_path / "run.jsonl")
    result = CliRunner().invoke(app, ["usage", str(path), "--database-url", migrated_db_url])
    assert result.exit_code == 0, result.output
    assert "the client's own estimate total_cost_usd $0.0488, our bill $0.05" in result.output
    assert "2 responses summed match the result's modelUsage" in result.output


def test_usage_without_model_names_the_file_and_the_option(
    migrated_db_url: str, tmp_path: Path
) -> None:
    path = write(tmp_path / "exec.jsonl", EXEC)
    result = CliRunner().invoke(app, ["usage", str(path), "--database-url", migrated_db_url])
    assert result.exit_code == 2
    assert f"{path}:6: model:" in result.output and "--model" in result.output


def test_a_compaction_boundary_marks_the_next_response(tmp_path: Path) -> None:
    boundary = {
        "type": "system",
        "subtype": "compact_boundary",
        "session_id": SESSION,
        "uuid": "u-compact",
        "compact_metadata": {"trigger": "auto", "pre_tokens": 150_000},
    }
    path = write(
        tmp_path / "run.jsonl",
        [
            INIT,
            assistant("msg_01", {"type": "text", "text": "a"}, usage(3, 10_000, 0, 10)),
            boundary,
            assistant("msg_02", {"type": "text", "text": "b"}, usage(3, 2_000, 0, 10)),
        ],
    )
    first, second = requests_of(path)
    assert (first.facts.event, second.facts.event) == (None, "compacted")


def test_inspect_says_the_time_span_is_unknown(tmp_path: Path) -> None:
    from cachecast.usecases.inspect import inspect_logs

    [summary] = inspect_logs([stream(tmp_path / "run.jsonl")]).files
    assert summary.format == "claude-stream-json"
    assert summary.first_timestamp is None and summary.last_timestamp is None


def test_older_protocol_counts_a_repeated_running_total_once(tmp_path: Path) -> None:
    last = {"input_tokens": 2000, "cached_input_tokens": 1024, "output_tokens": 50}
    count = {"type": "token_count", "info": {"total_token_usage": last, "last_token_usage": last}}
    path = write(
        tmp_path / "old.jsonl",
        [
            {"model": "o4-mini", "provider": "openai", "approval": "never", "sandbox": "x"},
            {"id": "1", "msg": count},
            {"id": "1", "msg": count},  # the same event again: no new request
            {"id": "1", "msg": {"type": "token_count", "info": None}},  # rate limits only
        ],
    )
    skipped: Counter[str] = Counter()
    [request] = requests_of(path, skipped=skipped)
    assert request.observed.read == 1024 and request.observed.uncached == 976
    assert sum(skipped.values()) == 2


def test_json_under_verbose_is_the_array_of_every_message(
    migrated_db_url: str, tmp_path: Path
) -> None:
    # anthropics/claude-code#84784: --output-format json with --verbose prints a JSON array
    # of the session's messages, the result last: read as the stream is.
    lines = stream(tmp_path / "run.jsonl").read_text().splitlines()
    array = tmp_path / "out.json"
    array.write_text("[" + ",".join(lines) + "]")
    assert detect_format(array)[0].name == "claude-stream-json"
    report = report_of(migrated_db_url, array)
    assert report.totals.requests == 2 and report.totals.cost == STREAM_BILL
    [stated] = report.client_statements
    assert stated.usage_matches is True


def test_a_result_printed_over_several_lines_is_read(migrated_db_url: str, tmp_path: Path) -> None:
    path = tmp_path / "out.json"
    path.write_text(json.dumps(result(usage(8, 11_000, 10_000, 300)), indent=2))
    assert detect_format(path)[0].name == "claude-json"
    assert report_of(migrated_db_url, path).totals.cost == STREAM_BILL


def test_reconcile_reads_the_stream_as_requests_priced_today_or_at(
    migrated_db_url: str, tmp_path: Path
) -> None:
    path = stream(tmp_path / "run.jsonl")
    for extra in ([], ["--at", "2026-01-15"]):
        result = CliRunner().invoke(
            app, ["reconcile", str(path), "--json", *extra, "--database-url", migrated_db_url]
        )
        assert result.exit_code == 0, result.output
        summary = json.loads(result.stdout)["summary"]
        # Sonnet 4.5's prices did not change between those days: the same bill by hand.
        assert summary["requests"] == 2
        assert Decimal(summary["observed_cost"]) == STREAM_BILL


def test_two_runs_appended_to_one_file_each_beside_its_own_bill(
    migrated_db_url: str, tmp_path: Path
) -> None:
    first = stream(tmp_path / "a.jsonl").read_text()
    other = "1f3e9c60-2b7d-4c11-8a55-6d0e4b9a2c11"
    second = first.replace(SESSION, other).replace("msg_0", "msg_1")
    path = tmp_path / "ci.jsonl"
    path.write_text(first + second)
    report = report_of(migrated_db_url, path)
    assert report.totals.requests == 4 and report.totals.cost == 2 * STREAM_BILL
    assert [(s.session, s.cost, s.usage_matches) for s in report.client_statements] == [
        (SESSION, STREAM_BILL, True),
        (other, STREAM_BILL, True),
    ]
