"""Format variants of Claude Code transcripts and Codex CLI rollouts across versions
(docs/clients.md, "Format variants"), hand-written after the documented shapes: what the one
session reader counts of each. Expected values are the usage the lines carry, summed by hand
in the comments."""

from __future__ import annotations

import json
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from cachecast.contracts import ContractStore
from cachecast.sessions.native import native_format
from cachecast.sessions.predictor import SessionPredictor
from cachecast.sessions.profiles import CLAUDE_CODE
from cachecast.sessions.reading import SessionRequest, log_format
from cachecast.usecases.usage import SessionFile, UsageRequest, usage_report
from tests.sessions.test_reading import SESSION, line, requests, user, write


def answer(uuid: str, parent: str, when: str, usage: dict[str, Any], **more: Any) -> dict[str, Any]:
    """An assistant line; ``message_id`` and ``model`` in ``more`` go into the message (an
    absent ``message_id`` writes a message without id)."""
    message: dict[str, Any] = {
        "model": more.pop("model", "claude-sonnet-4-5"),
        "role": "assistant",
        "content": [{"type": "text", "text": "ok"}],
        "usage": usage,
    }
    message_id = more.pop("message_id", None)
    if message_id is not None:
        message["id"] = message_id
    return line("assistant", uuid, parent, when, message=message, **more)


def tokens(
    uncached: int, read: int, five: int, hour: int = 0, output: int = 1, **more: Any
) -> dict[str, Any]:
    """A usage with the 5m/1h split Claude Code writes since 1.0.x (``cache_creation``)."""
    return {
        "input_tokens": uncached,
        "cache_read_input_tokens": read,
        "cache_creation_input_tokens": five + hour,
        "cache_creation": {"ephemeral_5m_input_tokens": five, "ephemeral_1h_input_tokens": hour},
        "output_tokens": output,
        "service_tier": "standard",
        **more,
    }


def totals(found: list[SessionRequest]) -> tuple[int, int, int, int, int, int]:
    """(requests, uncached input, reads, 5m writes, 1h writes, output)."""
    return (
        len(found),
        sum(each.observed.uncached for each in found),
        sum(each.observed.read for each in found),
        sum(each.write_5m for each in found),
        sum(each.write_1h for each in found),
        sum(each.observed.output for each in found),
    )


# --- Claude Code -------------------------------------------------------------------------------


def test_claude_code_lines_of_every_version_counted_once(tmp_path: Path) -> None:
    flat = {  # 1.0.x before the 5m/1h split: the flat count only (all 5 minutes)
        "input_tokens": 4,
        "cache_read_input_tokens": 0,
        "cache_creation_input_tokens": 2_000,
        "output_tokens": 30,
    }
    transcript = write(
        tmp_path / "t.jsonl",
        [
            {"type": "summary", "summary": "Fix the bug", "leafUuid": "a9"},  # no request
            user("u1", None, "2026-01-10T10:00:00Z", "fix the bug"),
            answer("a1", "u1", "2026-01-10T10:00:05Z", flat, message_id="m1", requestId="r1"),
            # One streamed response over three lines (text, thinking, tool_use), each with the
            # usage so far: one request, with the last line's output (250).
            answer("a2", "a1", "2026-01-10T10:00:09Z", tokens(3, 2_000, 500, output=8),
                   message_id="m2", requestId="r2"),
            answer("a3", "a2", "2026-01-10T10:00:09Z", tokens(3, 2_000, 500, output=8),
                   message_id="m2", requestId="r2"),
            answer("a4", "a3", "2026-01-10T10:00:10Z", tokens(3, 2_000, 500, output=250),
                   message_id="m2", requestId="r2"),
            # 2.x on a subscription: one-hour writes; web search counted in server_tool_use.
            answer("a5", "a4", "2026-01-10T10:00:20Z",
                   tokens(1, 2_500, 0, hour=700, output=40,
                          server_tool_use={"web_search_requests": 1, "web_fetch_requests": 0}),
                   message_id="m3", requestId="r3"),
            # An API error Claude Code wrote itself: <synthetic>, no API call.
            answer("a6", "a5", "2026-01-10T10:00:30Z", tokens(0, 0, 0, output=0),
                   message_id="e1", model="<synthetic>", isApiErrorMessage=True),
            # No message id (older or hand-made lines): the requestId names the response...
            answer("a7", "a5", "2026-01-10T10:01:00Z", tokens(2, 3_200, 100, output=5),
                   requestId="r4"),
            answer("a8", "a7", "2026-01-10T10:01:00Z", tokens(2, 3_200, 100, output=9),
                   requestId="r4"),
            # ... and with neither, the line's uuid: one request of its own.
            answer("a9", "a8", "2026-01-10T10:02:00Z", tokens(2, 3_300, 50, output=7)),
        ],
    )  # fmt: skip
    assert native_format(transcript) == "claude-code"
    found = requests(transcript)
    assert [each.facts.request_id for each in found] == ["m1", "m2", "m3", "r4", "a9"]
    # uncached 4 + 3 + 1 + 2 + 2 = 12; reads 0 + 2,000 + 2,500 + 3,200 + 3,300 = 11,000;
    # 5m writes 2,000 + 500 + 0 + 100 + 50 = 2,650; 1h writes 700;
    # output 30 + 250 + 40 + 9 + 7 = 336.
    assert totals(found) == (5, 12, 11_000, 2_650, 700, 336)


def test_fast_mode_is_priced_at_its_own_rates_not_the_standard_ones(
    migrated_db_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))  # remembered answers
    transcript = write(
        tmp_path / "t.jsonl",
        [
            user("u1", None, "2026-02-10T10:00:00Z", "go"),
            answer("a1", "u1", "2026-02-10T10:00:05Z", tokens(3, 0, 900, speed="standard"),
                   message_id="m1", model="claude-opus-4-6"),
            answer("a2", "a1", "2026-02-10T10:00:09Z", tokens(3, 0, 950, speed="fast"),
                   message_id="m2", model="claude-opus-4-6"),
        ],
    )  # fmt: skip
    # Fast mode (Claude Code 2.1.36+) says "speed": "fast" in the usage: a model of its own.
    assert [each.facts.model for each in requests(transcript)] == [
        "claude-opus-4-6",
        "claude-opus-4-6-fast",
    ]
    report = usage_report(
        UsageRequest(files=[SessionFile(path=transcript)], by=["model"]),
        ContractStore(migrated_db_url),
    )
    rows = {row.group["model"]: row for row in report.rows}
    # Opus 4.6 from 2026-02-05: $5 input, 5m writes 1.25x = $6.25, $25 output per MTok:
    # 3 x 5 + 900 x 6.25 + 1 x 25 = 5,665 / 1e6.
    assert rows["claude-opus-4-6"].cost == Decimal("0.005665")
    # Fast mode on 2026-02-10, during its launch promotion (50% off until 2026-02-16 PT,
    # code.claude.com "Fast mode"): half of 6x the standard rates, $15 input, $75 output; the
    # caching multipliers stack on top (platform.claude.com "Fast mode"): 5m writes
    # 1.25 x 15 = $18.75. 3 x 15 + 950 x 18.75 + 1 x 75 = 45 + 17,812.5 + 75 = 17,932.5 / 1e6.
    assert rows["claude-opus-4-6-fast"].cost == Decimal("0.0179325")
    assert rows["claude-opus-4-6-fast"].unpriced_requests == 0
    assert report.unpriced == []
    assert report.complete_bill


def test_claude_code_on_bedrock_or_vertex_is_billed_by_them(
    migrated_db_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))  # remembered answers
    bedrock = "us.anthropic.claude-sonnet-4-5-20250929-v1:0"
    transcript = write(
        tmp_path / "t.jsonl",
        [
            user("u1", None, "2026-02-10T10:00:00Z", "go"),
            answer("a1", "u1", "2026-02-10T10:00:05Z", tokens(3, 0, 1_000, output=10),
                   message_id="m1", model=bedrock),
            answer("a2", "a1", "2026-02-10T10:00:09Z", tokens(3, 0, 1_000, output=10),
                   message_id="m2", model="claude-sonnet-4-5@20250929"),
            answer("a3", "a2", "2026-02-10T10:00:19Z", tokens(3, 0, 1_000, output=10),
                   message_id="m3", model="claude-sonnet-4-5-20250929"),
        ],
    )  # fmt: skip
    assert [each.provider for each in requests(transcript)] == ["bedrock", "vertex", "anthropic"]
    report = usage_report(
        UsageRequest(files=[SessionFile(path=transcript)], by=["model"]),
        ContractStore(migrated_db_url),
    )
    rows = {row.group["model"]: row for row in report.rows}
    # Bedrock's US inference profile: $3.30 input, 5m writes 1.25x = $4.125, $16.50 output:
    # 3 x 3.3 + 1,000 x 4.125 + 10 x 16.5 = 4,299.9 / 1e6. Anthropic's (and Vertex's global)
    # $3, $3.75, $15: 9 + 3,750 + 150 = 3,909 / 1e6.
    assert rows[bedrock].cost == Decimal("0.0042999")
    assert rows["claude-sonnet-4-5-20250929"].cost == Decimal("0.003909")
    assert rows["claude-sonnet-4-5@20250929"].cost == Decimal("0.003909")


def test_compaction_before_compact_boundary_lines(tmp_path: Path) -> None:
    # Older Claude Code wrote a compaction as a parentless user line marked isCompactSummary
    # (no compact_boundary): the next request rewrote the history, not a new conversation.
    transcript = write(
        tmp_path / "t.jsonl",
        [
            user("u1", None, "2026-01-10T10:00:00Z", "fix the bug"),
            answer("a1", "u1", "2026-01-10T10:00:05Z", tokens(3, 0, 9_000), message_id="m1"),
            user("u2", None, "2026-01-10T10:30:00Z", "This session is being continued ...",
                 isCompactSummary=True),
            answer("a2", "u2", "2026-01-10T10:30:05Z", tokens(3, 4_000, 1_500), message_id="m2"),
            user("u3", None, "2026-01-10T11:00:00Z", "a new question"),
            answer("a3", "u3", "2026-01-10T11:00:05Z", tokens(3, 4_000, 200), message_id="m3"),
        ],
    )  # fmt: skip
    assert [each.facts.event for each in requests(transcript)] == [None, "compacted", "restarted"]


def test_compaction_the_api_ran_inside_a_request(tmp_path: Path) -> None:
    # Server-side compaction: the API summarizes inside a request; usage.iterations lists the
    # compaction sampling (billed, not in the top-level counts) and the message sampling (the
    # top-level counts). The compaction reads the history the session cached.
    summary = {"type": "compaction", **tokens(3, 150_000, 200, output=3_500)}
    top = tokens(3, 0, 12_000, output=500)
    message = {"type": "message", **top}
    transcript = write(
        tmp_path / "t.jsonl",
        [
            user("u1", None, "2026-03-10T10:00:00Z", "go on"),
            answer("a1", "u1", "2026-03-10T10:00:05Z", tokens(3, 0, 150_000),
                   message_id="m1"),
            user("u2", "a1", "2026-03-10T10:01:00Z", "and then"),
            answer("a2", "u2", "2026-03-10T10:01:30Z",
                   {**top, "iterations": [summary, message]}, message_id="m2"),
        ],
    )  # fmt: skip
    found = requests(transcript)
    assert [(r.facts.request_id, r.facts.lineage, r.facts.event) for r in found] == [
        ("m1", SESSION, None),
        ("m2#compaction-0", f"{SESSION}/agent-acompact-m2", None),
        ("m2", SESSION, "compacted"),
    ]
    # uncached 3 + 3 + 3; reads 150,000; writes 150,000 + 200 + 12,000; output 1 + 3,500 + 500.
    assert totals(found) == (3, 9, 150_000, 162_200, 0, 4_001)
    # The compaction is predicted to read the 150,000 tokens its session cached 85 s before.
    predictor = SessionPredictor(CLAUDE_CODE)
    predicted = []
    for each in found:
        predicted.append(predictor.predict(each.facts))
        predictor.learn(each.facts, predicted[-1], each.observed)
    assert (predicted[1].read, predicted[1].write) == (150_000, 200)


def test_sub_agent_transcripts_beside_or_under_the_session(tmp_path: Path) -> None:
    project = tmp_path / "projects" / "-home-me-app"
    (project / SESSION / "subagents").mkdir(parents=True)
    main = write(
        project / f"{SESSION}.jsonl",
        [
            user("u1", None, "2026-01-10T10:00:00Z", "explore"),
            answer("a1", "u1", "2026-01-10T10:00:05Z", tokens(3, 0, 5_000), message_id="m1"),
        ],
    )
    side = {"isSidechain": True}
    # 2.0.x: agent-<id>.jsonl beside the session file; 2.1.x: <session>/subagents/.
    beside = write(
        project / "agent-abc.jsonl",
        [
            user("s1", None, "2026-01-10T10:00:06Z", "find x", agentId="abc", **side),
            answer("s2", "s1", "2026-01-10T10:00:08Z", tokens(3, 0, 3_000, hour=0),
                   message_id="m2", agentId="abc", **side),
        ],
    )  # fmt: skip
    under = write(
        project / SESSION / "subagents" / "agent-def.jsonl",
        [
            user("t1", None, "2026-01-10T10:00:07Z", "find y", agentId="def", **side),
            answer("t2", "t1", "2026-01-10T10:00:09Z", tokens(3, 3_000, 40),
                   message_id="m3", agentId="def", **side),
            # A response of the session's own file repeated here: counted once.
            answer("a1", "u1", "2026-01-10T10:00:05Z", tokens(3, 0, 5_000), message_id="m1"),
        ],
    )  # fmt: skip
    seen: set[str] = set()
    found = [each for path in (main, beside, under) for each in requests(path, seen)]
    assert [(each.facts.lineage, each.project, each.session) for each in found] == [
        (SESSION, "-home-me-app", SESSION),
        (f"{SESSION}/agent-abc", "-home-me-app", SESSION),
        (f"{SESSION}/agent-def", "-home-me-app", SESSION),
    ]
    assert all(each.facts.subagent for each in found[1:])
    # uncached 3 x 3 = 9; reads 3,000; 5m writes 5,000 + 3,000 + 40 = 8,040.
    assert totals(found) == (3, 9, 3_000, 8_040, 0, 3)


# --- Codex CLI ---------------------------------------------------------------------------------


def rollout(path: Path, events: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(event) + "\n" for event in events))
    return path


def meta(session: str, when: str, **more: Any) -> dict[str, Any]:
    payload = {"id": session, "cwd": "/w/app", "cli_version": "0.60.0", **more}
    return {"timestamp": when, "type": "session_meta", "payload": payload}


def context(when: str, model: str = "gpt-5-codex") -> dict[str, Any]:
    return {"timestamp": when, "type": "turn_context", "payload": {"model": model}}


def usage(uncached: int, cached: int, output: int) -> dict[str, int]:
    return {
        "input_tokens": uncached + cached,
        "cached_input_tokens": cached,
        "output_tokens": output,
        "reasoning_output_tokens": 0,
        "total_tokens": uncached + cached + output,
    }


def count(when: str, total: dict[str, int] | None, last: dict[str, int] | None) -> dict[str, Any]:
    info: dict[str, Any] = {}
    if total is not None:
        info["total_token_usage"] = total
    if last is not None:
        info["last_token_usage"] = last
    payload = {"type": "token_count", "info": info, "rate_limits": None}
    return {"timestamp": when, "type": "event_msg", "payload": payload}


def added(one: dict[str, int], two: dict[str, int]) -> dict[str, int]:
    return {key: one[key] + two[key] for key in one}


def test_codex_rollout_before_session_meta_records_no_usage(tmp_path: Path) -> None:
    # Codex CLI before the {timestamp, type, payload} envelope: a bare first line, then
    # response items and record_type: state lines; no token counts were written.
    path = rollout(
        tmp_path / "rollout-2025-05-01T10-00-00-x.jsonl",
        [
            {"id": "x", "timestamp": "2025-05-01T10:00:00Z", "instructions": None},
            {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "hi"}]},
            {"record_type": "state"},
        ],
    )
    assert native_format(path) == log_format(path) == "codex"  # the reader's, inspect's
    assert requests(path) == []


def test_codex_running_total_alone_gives_each_request(tmp_path: Path) -> None:
    first, second = usage(5_000, 0, 100), usage(300, 5_120, 60)
    path = rollout(
        tmp_path / "rollout-t.jsonl",
        [
            meta("t", "2026-01-10T10:00:00Z"),
            context("2026-01-10T10:00:00Z"),
            # A turn aborted before any response: an event of no tokens, no request.
            count("2026-01-10T10:00:02Z", usage(0, 0, 0), None),
            count("2026-01-10T10:00:05Z", first, None),
            count("2026-01-10T10:00:09Z", added(first, second), None),
        ],
    )
    # Request 2 is the total's growth: 5,420 - 5,000 input, 5,120 - 0 cached, 160 - 100 output.
    found = requests(path)
    assert [(r.facts.prompt_tokens, r.observed.read, r.observed.output) for r in found] == [
        (5_000, 0, 100),
        (5_420, 5_120, 60),
    ]


def fork_pair(tmp_path: Path) -> tuple[Path, Path]:
    """A parent rollout of two requests and a fork of it: the fork's file starts with its own
    session_meta (forked_from_id), the parent's session_meta and the parent's history, token
    counts included (stamped at the fork's time), then one request of its own."""
    one, two, own = usage(5_000, 0, 100), usage(300, 5_120, 60), usage(200, 5_376, 40)
    after_one, after_two = one, added(one, two)
    parent_events = [
        meta("p", "2026-01-10T10:00:00Z"),
        context("2026-01-10T10:00:00Z"),
        count("2026-01-10T10:00:05Z", after_one, one),
        count("2026-01-10T10:00:09Z", after_two, two),
    ]
    parent = rollout(tmp_path / "rollout-2026-01-10T10-00-00-p.jsonl", parent_events)
    copied = [{**event, "timestamp": "2026-01-10T12:00:00Z"} for event in parent_events]
    fork = rollout(
        tmp_path / "rollout-2026-01-10T12-00-00-f.jsonl",
        [
            meta("f", "2026-01-10T12:00:00Z", forked_from_id="p"),
            *copied,
            context("2026-01-10T12:00:01Z"),
            count("2026-01-10T12:00:05Z", added(after_two, own), own),
        ],
    )
    return parent, fork


def test_codex_fork_copies_its_parents_token_counts_counted_once(tmp_path: Path) -> None:
    parent, fork = fork_pair(tmp_path)
    for order in ((parent, fork), (fork, parent)):
        seen: set[str] = set()
        found = [each for path in order for each in requests(path, seen)]
        # Three requests in all: the parent's two and the fork's own (prompts 5,000, 5,420,
        # 5,576; reads 0 + 5,120 + 5,376 = 10,496; output 100 + 60 + 40 = 200).
        assert sorted(each.facts.prompt_tokens for each in found) == [5_000, 5_420, 5_576]
        assert totals(found) == (3, 5_500, 10_496, 0, 0, 200)
    # Read alone, the fork is its own session ("f", not the parent's copied "p") and its
    # copied history is the only record of the parent's requests: counted there.
    alone = requests(fork, set())
    assert {each.session for each in alone} == {"f"}
    assert len(alone) == 3


def test_codex_sessions_that_began_alike_stay_two(tmp_path: Path) -> None:
    # Two unrelated sessions whose first requests reported the same usage: both counted.
    first = usage(5_000, 3_456, 20)
    paths = [
        rollout(
            tmp_path / f"rollout-{name}.jsonl",
            [
                meta(name, "2026-01-10T10:00:00Z"),
                context("2026-01-10T10:00:00Z"),
                count("2026-01-10T10:00:05Z", first, first),
            ],
        )
        for name in ("a", "b")
    ]
    seen: set[str] = set()
    assert [each.session for path in paths for each in requests(path, seen)] == ["a", "b"]
