"""Claude Code session transcripts: the real sessions in ../shared/data/recordings/claude_code.

Expected values come from the files themselves, read here with plain json by the rule the
format documents (one API response spans several assistant lines repeating its message.id;
count it once, with its last line's usage), and from the totals PROVENANCE.md states."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from cachecast.logs import open_log
from tests.conftest import shared_data
from tests.logs.helpers import read, totals, write_jsonl

FILES = [
    "1af7fc5e-8455-4414-9ccd-011d40f70b2a.jsonl",
    "5c0375b4-57a5-4f26-b12d-d022ee4e51b7.jsonl",
    "fe5e1c67-53e7-4862-81ae-d0e013e3270b.jsonl",
    "spotter/8463c716-a2ea-4c14-9efa-87158ebd9f20.jsonl",
    "spotter/8463c716-a2ea-4c14-9efa-87158ebd9f20/subagents/agent-a7be2f0.jsonl",
    "spotter/8463c716-a2ea-4c14-9efa-87158ebd9f20/subagents/agent-acompact-f46190.jsonl",
    "spotter/short.jsonl",
    "spotter/tool_heavy.jsonl",
    "spotter/subagent.jsonl",
]

# From PROVENANCE.md: unique messages, cache writes (by TTL) and reads.
STATED = {
    "1af7fc5e-8455-4414-9ccd-011d40f70b2a.jsonl": (7, {"5m": 12_698}, 103_219),
    "5c0375b4-57a5-4f26-b12d-d022ee4e51b7.jsonl": (20, {"5m": 47_747}, 324_259),
    "fe5e1c67-53e7-4862-81ae-d0e013e3270b.jsonl": (170, {"5m": 137_976}, 3_647_854),
    "spotter/8463c716-a2ea-4c14-9efa-87158ebd9f20.jsonl": (143, {"1h": 260_451}, 15_740_561),
    "spotter/8463c716-a2ea-4c14-9efa-87158ebd9f20/subagents/agent-a7be2f0.jsonl": (
        13,
        {"1h": 13_554},
        299_487,
    ),
    "spotter/short.jsonl": (1, {"1h": 13_835}, 11_515),
    "spotter/tool_heavy.jsonl": (4, {"1h": 17_696}, 88_231),
    "spotter/subagent.jsonl": (12, {"1h": 25_842}, 427_286),
}


def session_file(name: str) -> Path:
    return shared_data(f"recordings/claude_code/{name}")


def responses(path: Path) -> dict[str, dict[str, Any]]:
    """message.id -> {first line, last usage, sidechain, session}, by the documented rule."""
    found: dict[str, dict[str, Any]] = {}
    for number, text in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        event = json.loads(text)
        if event.get("type") != "assistant" or event["message"].get("model") == "<synthetic>":
            continue
        message = event["message"]
        entry = found.setdefault(
            message["id"],
            {
                "line": number,
                "sidechain": event.get("isSidechain"),
                "agent": event.get("agentId"),
                "session": event["sessionId"],
            },
        )
        entry["usage"] = message["usage"]  # the last line's: the final output count
    return found


def expected_totals(found: dict[str, dict[str, Any]]) -> dict[str, int]:
    out = {"input": 0, "read": 0, "write": 0, "output": 0}
    for entry in found.values():
        usage = entry["usage"]
        # Anthropic: input_tokens excludes cache reads and writes.
        out["input"] += (
            usage["input_tokens"]
            + usage.get("cache_creation_input_tokens", 0)
            + usage.get("cache_read_input_tokens", 0)
        )
        out["read"] += usage.get("cache_read_input_tokens", 0)
        out["write"] += usage.get("cache_creation_input_tokens", 0)
        out["output"] += usage["output_tokens"]
    return out


@pytest.mark.parametrize("name", FILES)
def test_each_response_once_with_its_final_usage(name: str) -> None:
    path = session_file(name)
    found = responses(path)
    result = read(path)
    assert result.format == "claude-code"
    assert result.errors == []
    assert [r.request_id for r in result.requests] == sorted(found, key=lambda i: found[i]["line"])
    assert {r.request_id: r.line for r in result.requests} == {
        i: e["line"] for i, e in found.items()
    }
    assert totals(result.requests) == expected_totals(found)
    for request in result.requests:
        assert request.provider == "anthropic"
        assert not request.prompt_complete  # no system prompt, no tool definitions
        assert request.observed is not None
        # The approximate prompt is fitted to the observed count.
        assert request.input_tokens == request.observed.input_tokens
        assert len(request.tokens or ()) == request.input_tokens


@pytest.mark.parametrize("name", sorted(STATED))
def test_totals_stated_by_the_publisher(name: str) -> None:
    messages, writes, reads = STATED[name]
    result = read(session_file(name))
    assert len(result.requests) == messages
    by_ttl: dict[str, int] = {}
    for request in result.requests:
        assert request.observed is not None
        for ttl, tokens in request.observed.cache_write_by_ttl.items():
            by_ttl[ttl] = by_ttl.get(ttl, 0) + tokens
    assert by_ttl == writes
    assert totals(result.requests)["read"] == reads


def test_split_response_interleaved_with_tool_results_is_one_request() -> None:
    path = session_file("spotter/tool_heavy.jsonl")
    lines = [json.loads(t) for t in path.read_text(encoding="utf-8").splitlines()]
    # Lines 34 and 37 are two blocks of one response, a tool result between them.
    first, second = lines[33], lines[36]
    assert first["message"]["id"] == second["message"]["id"]
    assert lines[35]["type"] == "user"
    result = read(path)
    request = next(r for r in result.requests if r.request_id == first["message"]["id"])
    assert request.line == 34
    assert request.observed is not None
    assert request.observed.output_tokens == second["message"]["usage"]["output_tokens"] == 173
    assert result.skipped["Claude Code line repeating a response (counted once per message.id)"]


def test_prompt_rebuilds_one_assistant_message_per_response() -> None:
    path = session_file("spotter/tool_heavy.jsonl")
    records = [record for _, record in open_log(path) if isinstance(record, dict)]
    last = records[-1]
    messages = last["request"]["messages"]
    # The response of lines 27-30 (text, thinking, two tool calls) is one assistant message;
    # its two tool results (lines 32-33) one user message after it.
    assistant, results = messages[-2], messages[-1]
    assert assistant["role"] == "assistant"
    assert [b["type"] for b in assistant["content"]] == ["text", "thinking", "tool_use", "tool_use"]
    assert results["role"] == "user"
    assert [b["type"] for b in results["content"]] == ["tool_result", "tool_result"]
    assert all(m["role"] in ("user", "assistant") for m in messages)


def test_subagent_file_and_sidechains_are_their_own_lineage() -> None:
    agent = read(
        session_file("spotter/8463c716-a2ea-4c14-9efa-87158ebd9f20/subagents/agent-a7be2f0.jsonl")
    )
    assert {r.session for r in agent.requests} == {
        "8463c716-a2ea-4c14-9efa-87158ebd9f20/agent-a7be2f0"
    }
    path = session_file("fe5e1c67-53e7-4862-81ae-d0e013e3270b.jsonl")
    found = responses(path)
    result = read(path)
    main = found[next(iter(found))]["session"]
    for request in result.requests:
        if found[request.request_id]["sidechain"]:
            assert request.session is not None and request.session.startswith(f"{main}/sidechain-")
        else:
            assert request.session == main
    sidechains = {r.session for r in result.requests if r.session != main}
    assert sidechains  # the file holds sidechain responses


def test_compaction_starts_the_conversation_again() -> None:
    path = session_file("spotter/8463c716-a2ea-4c14-9efa-87158ebd9f20.jsonl")
    lines = [json.loads(t) for t in path.read_text(encoding="utf-8").splitlines()]
    boundary = next(i for i, e in enumerate(lines, 1) if e.get("subtype") == "compact_boundary")
    records = [(line, r) for line, r in open_log(path) if isinstance(r, dict)]
    after = next(r for line, r in records if line > boundary)
    before = [r for line, r in records if line < boundary][-1]
    # The first request after the boundary starts from the summary, not the old history.
    assert len(after["request"]["messages"]) < len(before["request"]["messages"])
    first = after["request"]["messages"][0]["content"][0]["text"]
    assert first.startswith("This session is being continued from a previous conversation")


def _user(uuid: str, parent: str | None, text: str) -> dict[str, Any]:
    return {
        "type": "user",
        "uuid": uuid,
        "parentUuid": parent,
        "sessionId": "s-1",
        "timestamp": "2026-01-05T10:00:00Z",
        "message": {"role": "user", "content": text},
    }


def _assistant(uuid: str, parent: str, message_id: str, usage: Any) -> dict[str, Any]:
    return {
        "type": "assistant",
        "uuid": uuid,
        "parentUuid": parent,
        "sessionId": "s-1",
        "timestamp": "2026-01-05T10:00:01Z",
        "message": {
            "id": message_id,
            "role": "assistant",
            "model": "claude-sonnet-4-5",
            "content": [{"type": "text", "text": "ok"}],
            "usage": usage,
        },
    }


def test_malformed_lines_name_file_line_and_field(tmp_path: Path) -> None:
    usage = {"input_tokens": 3, "output_tokens": 5, "cache_read_input_tokens": 100}
    path = write_jsonl(
        tmp_path / "session.jsonl",
        [
            _user("u1", None, "hello"),
            _assistant("a1", "u1", "msg_1", usage),
            _user("u2", "a1", "again"),
            _assistant("a2", "u2", "msg_2", {**usage, "output_tokens": -4}),
            _user("u3", "a2", "more"),
            {**_assistant("a3", "u3", "msg_3", usage), "message": {"role": "assistant"}},
        ],
    )
    with path.open("a", encoding="utf-8") as handle:
        handle.write("{not json\n")
    result = read(path)
    assert [r.request_id for r in result.requests] == ["msg_1"]
    assert [str(e) for e in result.errors] == [
        f"{path}:4: message.usage.output_tokens: expected a non-negative integer, got -4",
        f"{path}:6: message.id: expected a string, got None",
        f"{path}:7: <line>: invalid JSON: " + result.errors[2].reason.split("invalid JSON: ")[-1],
    ]
    assert result.errors[2].field == "<line>" and result.errors[2].line == 7


def test_a_request_is_dated_when_its_user_line_was_written(tmp_path: Path) -> None:
    """docs/clients.md, "When a request was sent": msg_2 answers the user line of 10:00:03
    but its first line is written at 10:04:40 (a long block); its time is 10:00:03. msg_1's
    user line (10:00:00) is before its response's line: 10:00:00. A user line later than
    the response line (a clock step) leaves the response's own time (msg_3: 10:06:02)."""
    usage = {"input_tokens": 3, "output_tokens": 5, "cache_read_input_tokens": 100}

    def at(event: dict[str, Any], when: str) -> dict[str, Any]:
        return {**event, "timestamp": when}

    path = write_jsonl(
        tmp_path / "session.jsonl",
        [
            at(_user("u1", None, "hello"), "2026-01-05T10:00:00Z"),
            at(_assistant("a1", "u1", "msg_1", usage), "2026-01-05T10:00:02Z"),
            at(_user("u2", "a1", "tool result"), "2026-01-05T10:00:03Z"),
            at(_assistant("a2", "u2", "msg_2", usage), "2026-01-05T10:04:40Z"),
            at(_user("u3", "a2", "tool result"), "2026-01-05T10:07:00Z"),
            at(_assistant("a3", "u3", "msg_3", usage), "2026-01-05T10:06:02Z"),
        ],
    )
    result = read(path)
    # 2026-01-05T10:00:00Z = 1767607200 (epoch seconds).
    assert [r.timestamp for r in result.requests] == [1767607200, 1767607203, 1767607562]
