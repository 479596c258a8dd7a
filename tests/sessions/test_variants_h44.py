"""Rollout and transcript variants as the clients' own source defines them (docs/clients.md,
"Format variants"), hand-written: the two oldest Codex rollout formats (which record no
usage and must say so), a current rollout with every event kind its recorder persists, and
Claude Code 2.1 lines that quote a sub-agent's usage. Expected counts and bills are summed
by hand from the lines and the list prices in force on the lines' dates (in the comments)."""

from __future__ import annotations

import gzip
import json
from collections import Counter
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from cachecast.cli import app
from cachecast.contracts import ContractStore
from cachecast.logs.codex import LEGACY_LINE, TYPESCRIPT_ROLLOUT
from cachecast.sessions.native import native_format
from cachecast.sessions.reading import log_format, session_requests
from cachecast.usecases.usage import SessionFile, UsageRequest, usage_report
from tests.sessions.test_reading import line, requests, user, write
from tests.sessions.test_variants import answer, tokens, totals

# --- Codex: the two formats that record no usage -------------------------------------------


def typescript_rollout(path: Path, indent: int | None = 2) -> Path:
    """What the TypeScript Codex CLI wrote (openai/codex ``codex-cli/src/utils/storage/
    save-rollout.ts``): ``JSON.stringify({session: {timestamp, id, instructions}, items},
    null, 2)`` as ``rollout-<date>-<id>.json``; the items are response items, no usage."""
    document = {
        "session": {"timestamp": "2025-04-20T10:00:00.000Z", "id": "9f1c", "instructions": ""},
        "items": [
            {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "hi"}]},
            {"type": "message", "role": "assistant", "content": [{"type": "output_text"}]},
        ],
    }
    path.write_text(json.dumps(document, indent=indent))
    return path


def test_typescript_cli_rollout_is_codex_without_requests(tmp_path: Path) -> None:
    pretty = typescript_rollout(tmp_path / "rollout-2025-04-20-9f1c.json")
    compact = typescript_rollout(tmp_path / "rollout-2025-04-20-9f1d.json", indent=None)
    for path in (pretty, compact):
        # Told as Codex by the session reader and by format detection (inspect, reconcile).
        assert native_format(path) == log_format(path) == "codex"
        skipped: Counter[str] = Counter()
        assert list(session_requests(path, path.name, skipped=skipped)) == []
        assert skipped == Counter({TYPESCRIPT_ROLLOUT: 1})


def test_rollouts_that_record_no_usage_are_refused_saying_so(
    migrated_db_url: str, tmp_path: Path
) -> None:
    legacy = tmp_path / "rollout-2025-05-01T10-00-00-x.jsonl"
    write(
        legacy,
        [
            {"id": "x", "timestamp": "2025-05-01T10:00:00Z", "instructions": None},
            {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "hi"}]},
            {"record_type": "state"},
        ],
    )
    skipped: Counter[str] = Counter()
    assert list(session_requests(legacy, legacy.name, skipped=skipped)) == []
    assert skipped == Counter({LEGACY_LINE: 1})
    typescript = typescript_rollout(tmp_path / "rollout-2025-04-20-9f1c.json")
    runner = CliRunner()
    for path, why in (
        (legacy, "a Codex rollout of the format before session_meta"),
        (typescript, "a rollout of the TypeScript Codex CLI ({session, items}, before codex-rs)"),
    ):
        result = runner.invoke(app, ["reconcile", str(path), "--database-url", migrated_db_url])
        assert result.exit_code == 2 and "Traceback" not in result.output
        assert f"{path}: no readable record: {why}" in result.stderr
        assert "no token usage" in result.stderr
        # Not the reason given for a current rollout cut before its first response.
        assert "stops before its first response" not in result.stderr
        inspected = runner.invoke(app, ["inspect", str(path)])
        assert inspected.exit_code == 0, inspected.output
        assert "format codex" in inspected.stdout and "requests      0" in inspected.stdout


# --- Codex: a current rollout with every persisted event kind ------------------------------


def envelope(when: str, kind: str, payload: dict[str, Any]) -> dict[str, Any]:
    return {"timestamp": when, "type": kind, "payload": payload}


def spent(uncached: int, cached: int, output: int, reasoning: int = 0) -> dict[str, int]:
    return {
        "input_tokens": uncached + cached,
        "cached_input_tokens": cached,
        "output_tokens": output,
        "reasoning_output_tokens": reasoning,
        "total_tokens": uncached + cached + output,
    }


def plus(one: dict[str, int], two: dict[str, int]) -> dict[str, int]:
    return {key: one[key] + two[key] for key in one}


def counted(when: str, total: dict[str, int], last: dict[str, int]) -> dict[str, Any]:
    info = {"total_token_usage": total, "last_token_usage": last, "model_context_window": 272_000}
    limits = {"primary": {"used_percent": 5.0, "window_minutes": 300, "resets_in_seconds": 900}}
    return envelope(when, "event_msg", {"type": "token_count", "info": info, "rate_limits": limits})


def test_current_rollout_with_every_persisted_event_kind(
    migrated_db_url: str, tmp_path: Path
) -> None:
    # codex-rs's recorder persists session_meta (with git and originator), turn_context,
    # response items (ghost_snapshot among them), and the events user_message, token_count
    # (info null before the first response), turn_aborted, entered/exited_review_mode and
    # context_compacted, and compacted items (codex-rs/core/src/rollout/policy.rs).
    one, two, three, four = (
        spent(5_000, 0, 200, 100),
        spent(1_008, 4_992, 300, 50),
        spent(1_112, 5_888, 100),
        spent(3_000, 0, 50),
    )
    after_two = plus(one, two)
    after_three = plus(after_two, three)
    meta = {
        "id": "019a-x1",
        "timestamp": "2025-10-10T10:00:00Z",
        "cwd": "/w",
        "originator": "codex_cli_rs",
        "cli_version": "0.46.0",
        "instructions": None,
        "source": "cli",
        "model_provider": "openai",
        "git": {"commit_hash": "abc", "branch": "main", "repository_url": "git@h:o/r.git"},
    }
    path = write(
        tmp_path / "rollout-2025-10-10T10-00-00-019a-x1.jsonl",
        [
            envelope("2025-10-10T10:00:00Z", "session_meta", meta),
            envelope("2025-10-10T10:00:00Z", "turn_context", {"cwd": "/w", "model": "gpt-5-codex"}),
            envelope("2025-10-10T10:00:01Z", "event_msg", {"type": "user_message", "message": "a"}),
            envelope("2025-10-10T10:00:01Z", "event_msg", {"type": "token_count", "info": None}),
            envelope("2025-10-10T10:00:02Z", "response_item",
                     {"type": "ghost_snapshot", "ghost_commit": {"id": "c1", "parent": "c0"}}),
            counted("2025-10-10T10:00:05Z", one, one),
            counted("2025-10-10T10:00:05Z", one, one),  # written again before the next turn
            counted("2025-10-10T10:00:09Z", after_two, two),
            envelope("2025-10-10T10:01:00Z", "event_msg", {"type": "user_message", "message": "b"}),
            envelope("2025-10-10T10:01:02Z", "event_msg",
                     {"type": "turn_aborted", "reason": "interrupted"}),
            envelope("2025-10-10T10:01:30Z", "event_msg",
                     {"type": "entered_review_mode", "target": {"type": "uncommittedChanges"}}),
            envelope("2025-10-10T10:01:40Z", "event_msg",
                     {"type": "exited_review_mode", "review_output": None}),
            envelope("2025-10-10T10:02:00Z", "event_msg", {"type": "user_message", "message": "c"}),
            counted("2025-10-10T10:02:05Z", after_three, three),
            envelope("2025-10-10T10:03:00Z", "compacted",
                     {"message": "summary", "replacement_history": []}),
            envelope("2025-10-10T10:03:00Z", "event_msg", {"type": "context_compacted"}),
            envelope("2025-10-10T10:03:01Z", "turn_context", {"cwd": "/w", "model": "gpt-5"}),
            envelope("2025-10-10T10:03:02Z", "event_msg", {"type": "user_message", "message": "d"}),
            counted("2025-10-10T10:03:05Z", plus(after_three, four), four),
        ],
    )  # fmt: skip
    found = requests(path)
    assert [each.facts.model for each in found] == ["gpt-5-codex"] * 3 + ["gpt-5"]
    assert [each.facts.event for each in found] == [None, None, None, "compacted"]
    # Uncached 5,000 + 1,008 + 1,112 + 3,000 = 10,120; reads 4,992 + 5,888 = 10,880;
    # output 200 + 300 + 100 + 50 = 650 (reasoning inside it).
    assert totals(found) == (4, 10_120, 10_880, 0, 0, 650)
    report = usage_report(
        UsageRequest(files=[SessionFile(path=path)]), ContractStore(migrated_db_url)
    )
    # GPT-5 and GPT-5-Codex on 2025-10-10: $1.25 input, $0.125 cached input, $10 output per
    # MTok: 10,120 x 1.25 + 10,880 x 0.125 + 650 x 10 = 12,650 + 1,360 + 6,500 = 20,510 / 1e6.
    assert report.totals.requests == 4
    assert report.totals.cost == Decimal("0.02051")
    assert report.complete_bill


# --- Claude Code 2.1: lines that quote a sub-agent's usage ---------------------------------


def test_progress_lines_and_task_results_quote_usage_without_billing_it(
    migrated_db_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))  # remembered answers
    # Claude Code 2.1 writes a sub-agent's messages into its session's file as progress
    # lines (data.type agent_progress, the message with its usage nested), and the Task
    # tool's result as toolUseResult with the sub-agent's summed usage; the sub-agent's
    # requests are its own file's (subagents/agent-<id>.jsonl). Neither is a request here.
    sub_usage = tokens(5, 0, 8_000, output=50)
    nested = {
        "type": "assistant",
        "requestId": "req_sub",
        "message": {"id": "msg_sub", "model": "claude-haiku-4-5-20251001", "usage": sub_usage},
    }
    result = {"status": "completed", "agentId": "ab12", "totalTokens": 8_055, "usage": sub_usage}
    answered = [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "done"}]
    transcript = write(
        tmp_path / "t.jsonl",
        [
            user("u1", None, "2025-12-01T10:00:00Z", "go"),
            answer("a1", "u1", "2025-12-01T10:00:02Z", tokens(3, 15_000, 500, output=40),
                   message_id="m1", requestId="r1", model="claude-opus-4-5-20251101"),
            line("progress", "p1", "a1", "2025-12-01T10:00:05Z", toolUseID="toolu_1",
                 data={"type": "agent_progress", "agentId": "ab12", "message": nested}),
            line("user", "u2", "a1", "2025-12-01T10:00:10Z", toolUseResult=result,
                 message={"role": "user", "content": answered}),
            answer("a2", "u2", "2025-12-01T10:00:12Z", tokens(3, 15_500, 200, output=30),
                   message_id="m2", requestId="r2", model="claude-opus-4-5-20251101"),
        ],
    )  # fmt: skip
    found = requests(transcript)
    assert [each.facts.request_id for each in found] == ["m1", "m2"]
    # Uncached 3 + 3; reads 15,000 + 15,500 = 30,500; 5m writes 500 + 200; output 40 + 30.
    assert totals(found) == (2, 6, 30_500, 700, 0, 70)
    report = usage_report(
        UsageRequest(files=[SessionFile(path=transcript)]), ContractStore(migrated_db_url)
    )
    # Claude Opus 4.5 (from 2025-11-24): $5 input, 5m writes $6.25, reads $0.50, $25 output:
    # 6 x 5 + 700 x 6.25 + 30,500 x 0.5 + 70 x 25 = 30 + 4,375 + 15,250 + 1,750 = 21,405 / 1e6.
    assert report.totals.cost == Decimal("0.021405")


def test_a_prompt_over_200k_tokens_is_billed_at_the_long_context_rates(
    migrated_db_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))  # remembered answers
    # Claude Code with the 1M-token context (Sonnet 4.5): the API's model name carries no
    # [1m]; the prompt's length decides the rates.
    transcript = write(
        tmp_path / "t.jsonl",
        [
            user("u1", None, "2025-11-01T10:00:00Z", "go"),
            answer("a1", "u1", "2025-11-01T10:00:02Z", tokens(10, 240_000, 9_990, output=1_000),
                   message_id="m1", model="claude-sonnet-4-5-20250929"),
        ],
    )  # fmt: skip
    report = usage_report(
        UsageRequest(files=[SessionFile(path=transcript)]), ContractStore(migrated_db_url)
    )
    # A 250,000-token prompt (> 200K): $6 input, 5m writes $7.50, reads $0.60, $22.50
    # output per MTok: 10 x 6 + 240,000 x 0.6 + 9,990 x 7.5 + 1,000 x 22.5
    # = 60 + 144,000 + 74,925 + 22,500 = 241,485 / 1e6.
    assert report.totals.cost == Decimal("0.241485")


def test_web_searches_left_out_of_the_bill_are_counted_in_a_note(
    migrated_db_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))  # remembered answers
    searched = {"web_search_requests": 2, "web_fetch_requests": 1}
    transcript = write(
        tmp_path / "t.jsonl",
        [
            user("u1", None, "2025-11-01T10:00:00Z", "look it up"),
            answer("a1", "u1", "2025-11-01T10:00:02Z",
                   tokens(10, 20_000, 1_000, output=100, server_tool_use=searched),
                   message_id="m1", model="claude-sonnet-4-5-20250929"),
            answer("a2", "a1", "2025-11-01T10:00:09Z", tokens(3, 21_100, 50, output=20),
                   message_id="m2", model="claude-sonnet-4-5-20250929"),
        ],
    )  # fmt: skip
    report = usage_report(
        UsageRequest(files=[SessionFile(path=transcript)]), ContractStore(migrated_db_url)
    )
    # The tokens only, Sonnet 4.5 ($3, 5m writes $3.75, reads $0.30, $15 output):
    # 13 x 3 + 41,100 x 0.3 + 1,050 x 3.75 + 120 x 15 = 39 + 12,330 + 3,937.5 + 1,800
    # = 18,106.5 / 1e6; the two searches are not in it, and a note says so.
    assert report.totals.cost == Decimal("0.0181065")
    assert any(
        note.startswith("3 server tool call(s) in 1 request(s)") and "not include" in note
        for note in report.notes
    ), report.notes
    result = CliRunner().invoke(app, ["usage", str(transcript), "--database-url", migrated_db_url])
    assert result.exit_code == 0, result.output
    assert "note: 3 server tool call(s) in 1 request(s)" in result.stdout
    page = tmp_path / "usage.html"
    args = ["usage", str(transcript), "--html", str(page), "--database-url", migrated_db_url]
    assert CliRunner().invoke(app, args).exit_code == 0
    assert "note: 3 server tool call(s) in 1 request(s)" in page.read_text("utf-8")


# --- Codex: the estimate after a compaction, and rollouts kept compressed ------------------


def test_the_estimate_codex_states_after_a_compaction_is_no_request(tmp_path: Path) -> None:
    # After a compaction Codex recomputes the new history's size and sends a token_count
    # whose last_token_usage is all zeros but total_tokens (its estimate), the running total
    # unchanged (codex-rs Session::recompute_token_usage; compact_remote.rs calls it).
    estimate = {**spent(0, 0, 0), "total_tokens": 5_000}
    meta = {"id": "x12", "cli_version": "0.80.0"}
    compacted = {"message": "", "replacement_history": []}
    first, second = spent(6_000, 0, 100), spent(1_000, 0, 10)
    path = write(
        tmp_path / "rollout-2026-01-20T10-00-00-x12.jsonl",
        [
            envelope("2026-01-20T10:00:00Z", "session_meta", meta),
            envelope("2026-01-20T10:00:00Z", "turn_context", {"model": "gpt-5.2-codex"}),
            # Compacted before any response of this file (a resumed session): no total yet.
            envelope("2026-01-20T10:00:01Z", "compacted", compacted),
            counted("2026-01-20T10:00:01Z", spent(0, 0, 0), estimate),
            counted("2026-01-20T10:00:05Z", first, first),
            envelope("2026-01-20T10:01:00Z", "compacted", compacted),
            counted("2026-01-20T10:01:00Z", first, {**spent(0, 0, 0), "total_tokens": 900}),
            counted("2026-01-20T10:01:05Z", plus(first, second), second),
        ],
    )  # fmt: skip
    found = requests(path)
    # Two requests: 6,000 + 1,000 uncached, output 100 + 10; the estimates are none.
    assert totals(found) == (2, 7_000, 0, 0, 0, 110)
    assert [each.facts.event for each in found] == ["compacted", "compacted"]


def gzipped(path: Path) -> Path:
    packed = path.with_name(path.name + ".gz")
    packed.write_bytes(gzip.compress(path.read_bytes()))
    path.unlink()
    return packed


def test_compressed_rollouts_are_read_by_the_same_rules(tmp_path: Path) -> None:
    # Codex may keep rollouts compressed (.jsonl.zst), and users compress old ones: the same
    # reader reads them. Before, a compressed rollout went through the record reader, which
    # refused a running total alone and counted a fork's copied history twice.
    one, two, own = spent(5_000, 0, 100), spent(300, 5_120, 60), spent(200, 5_376, 40)
    total_only = gzipped(
        write(
            tmp_path / "rollout-2025-09-20T08-00-00-t.jsonl",
            [
                envelope("2025-09-20T08:00:00Z", "session_meta", {"id": "t"}),
                envelope("2025-09-20T08:00:00Z", "turn_context", {"model": "gpt-5"}),
                envelope("2025-09-20T08:00:05Z", "event_msg",
                         {"type": "token_count", "info": {"total_token_usage": one}}),
                envelope("2025-09-20T08:00:09Z", "event_msg",
                         {"type": "token_count", "info": {"total_token_usage": plus(one, two)}}),
            ],
        )
    )  # fmt: skip
    assert native_format(total_only) == "codex"
    # The second request is the total's growth: 300 uncached, 5,120 cached, 60 output.
    assert totals(requests(total_only)) == (2, 5_300, 5_120, 0, 0, 160)
    parent_events = [
        envelope("2026-01-10T10:00:00Z", "session_meta", {"id": "p"}),
        envelope("2026-01-10T10:00:00Z", "turn_context", {"model": "gpt-5-codex"}),
        counted("2026-01-10T10:00:05Z", one, one),
        counted("2026-01-10T10:00:09Z", plus(one, two), two),
    ]
    parent = gzipped(write(tmp_path / "rollout-2026-01-10T10-00-00-p.jsonl", parent_events))
    copied = [{**event, "timestamp": "2026-01-10T12:00:00Z"} for event in parent_events]
    forked = {"id": "f", "forked_from_id": "p"}
    fork = gzipped(
        write(
            tmp_path / "rollout-2026-01-10T12-00-00-f.jsonl",
            [
                envelope("2026-01-10T12:00:00Z", "session_meta", forked),
                *copied,
                counted("2026-01-10T12:00:05Z", plus(plus(one, two), own), own),
            ],
        )
    )  # fmt: skip
    for order in ((parent, fork), (fork, parent)):
        seen: set[str] = set()
        found = [each for path in order for each in requests(path, seen)]
        # The parent's two requests and the fork's own: uncached 5,000 + 300 + 200 = 5,500,
        # cached 5,120 + 5,376 = 10,496, output 100 + 60 + 40 = 200.
        assert totals(found) == (3, 5_500, 10_496, 0, 0, 200)
    # A session id comes from session_meta; without one, from the file's own name, not the
    # inflated copy's.
    nameless = gzipped(
        write(
            tmp_path / "rollout-2026-01-10T13-00-00-n.jsonl",
            [
                envelope("2026-01-10T13:00:00Z", "turn_context", {"model": "gpt-5-codex"}),
                counted("2026-01-10T13:00:05Z", one, one),
            ],
        )
    )
    assert [each.session for each in requests(nameless)] == ["rollout-2026-01-10T13-00-00-n"]


def test_a_resumed_claude_code_session_kept_compressed_counts_each_response_once(
    tmp_path: Path,
) -> None:
    # A resumed session's file copies the earlier file's lines (same message ids), then goes
    # on. Plain, the session reader counts each response once across files; compressed,
    # the record reader counted the copies again (5 requests for 3).
    project = tmp_path / "projects" / "-w-app"
    project.mkdir(parents=True)
    first = [
        user("u1", None, "2025-12-01T10:00:00Z", "go"),
        answer("a1", "u1", "2025-12-01T10:00:02Z", tokens(3, 0, 5_000, output=50),
               message_id="m1", requestId="r1"),
        user("u2", "a1", "2025-12-01T10:01:00Z", "more"),
        answer("a2", "u2", "2025-12-01T10:01:02Z", tokens(3, 5_000, 200, output=30),
               message_id="m2", requestId="r2"),
    ]  # fmt: skip
    resumed = [
        *first,
        user("u3", "a2", "2025-12-01T11:00:00Z", "again"),
        answer("a3", "u3", "2025-12-01T11:00:02Z", tokens(3, 0, 5_300, output=20),
               message_id="m3", requestId="r3"),
    ]  # fmt: skip
    files = [
        gzipped(write(project / "s1.jsonl", first)),
        gzipped(write(project / "s2.jsonl", resumed)),
    ]
    seen: set[str] = set()
    found = [each for path in files for each in requests(path, seen)]
    # m1, m2, m3 once: uncached 3 x 3 = 9, reads 5,000, 5m writes 5,000 + 200 + 5,300 =
    # 10,500, output 50 + 30 + 20 = 100.
    assert totals(found) == (3, 9, 5_000, 10_500, 0, 100)
    # The project is the transcript's folder under projects/, not the inflated copy's.
    assert {each.project for each in found} == {"-w-app"}
