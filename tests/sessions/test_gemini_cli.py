"""Gemini CLI chat recordings (``~/.gemini/tmp/<project>/chats/session-*.jsonl`` and the
older ``.json``): hand-built files in the shapes Gemini CLI's ChatRecordingService writes
(docs/clients.md, "Gemini CLI"): a header, message records written again whole each time
they change, ``$set`` and ``$rewindTo`` records; a ``gemini`` message's ``tokens`` are one
response's usageMetadata (``input`` = promptTokenCount, cached included; ``output`` =
candidatesTokenCount; ``thoughts`` billed as output; ``tool`` = toolUsePromptTokenCount,
input).

Expected bills are worked by hand from Google's list prices for gemini-2.5-pro on
2025-10-05 (prompts up to 200K tokens), $ per million tokens: input 1.25, cached input
0.125 (0.1x), output 10.
"""

from __future__ import annotations

import json
from collections import Counter
from decimal import Decimal
from pathlib import Path
from typing import Any

from cachecast.contracts import ContractStore
from cachecast.core.errors import LogRecordError
from cachecast.logs.formats import detect_format
from cachecast.sessions.native import ModelDefaults, native_format
from cachecast.sessions.reading import SessionRequest, session_format, session_requests
from cachecast.usecases.session_files import default_locations, find_sessions
from cachecast.usecases.usage import SessionFile, UsageRequest, usage_report

PRO = "gemini-2.5-pro"
SESSION = "0b7c1a52-6a0e-4d8a-9f3c-3e2a1c5d7e90"
MILLION = Decimal(1_000_000)


def tokens(
    prompt: int, cached: int, output: int, thoughts: int = 0, tool: int = 0
) -> dict[str, int]:
    return {
        "input": prompt,
        "output": output,
        "cached": cached,
        "thoughts": thoughts,
        "tool": tool,
        "total": prompt + output + thoughts + tool,
    }


def reply(message_id: str, at: str, counts: dict[str, int] | None, **extra: Any) -> dict[str, Any]:
    message = {
        "id": message_id,
        "timestamp": f"2025-10-05T07:{at}.000Z",
        "type": "gemini",
        "content": "",
        "thoughts": [],
        "tokens": counts,
        "model": PRO,
    }
    message.update(extra)
    return message


def user(message_id: str, at: str) -> dict[str, Any]:
    return {
        "id": message_id,
        "timestamp": f"2025-10-05T07:{at}.000Z",
        "type": "user",
        "content": [{"text": "fix the build"}],
    }


HEADER = {
    "sessionId": SESSION,
    "projectHash": "9da8b3df",
    "startTime": "2025-10-05T07:00:00.000Z",
    "lastUpdated": "2025-10-05T07:00:00.000Z",
    "kind": "main",
}
G1 = reply("g1", "00:05", tokens(8_000, 0, 100, thoughts=50))
G2 = reply("g2", "00:09", tokens(9_000, 7_000, 200))
G4 = reply("g4", "01:00", tokens(9_500, 8_800, 50, thoughts=30, tool=100))
CALL = {"id": "c1", "name": "read_file", "args": {"file_path": "a"}, "status": "success"}


def recording(path: Path) -> Path:
    """Lines 1-11: header, user, $set, g1, g1 again (its tool calls), g2, a reply whose usage
    never came, the history rewritten ($set messages), a second user message, g4, a rewind."""
    lines: list[dict[str, Any]] = [
        HEADER,
        user("u1", "00:01"),
        {"$set": {"lastUpdated": "2025-10-05T07:00:01.000Z"}},
        G1,
        {**G1, "toolCalls": [CALL]},
        G2,
        reply("g3", "00:12", None),
        {"$set": {"messages": [user("u1", "00:01"), G1, G2]}},
        user("u2", "00:59"),
        G4,
        {"$rewindTo": "u2"},
    ]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path


def read(
    *paths: Path, defaults: ModelDefaults | None = None
) -> list[SessionRequest | LogRecordError]:
    seen: set[str] = set()
    found: list[SessionRequest | LogRecordError] = []
    for path in paths:
        found += session_requests(
            path, path.name, seen=seen, skipped=Counter(), defaults=defaults or ModelDefaults()
        )
    return found


def test_each_reply_with_tokens_is_one_request(tmp_path: Path) -> None:
    path = recording(tmp_path / "session-2025-10-05T07-00-0b7c1a52.jsonl")
    assert native_format(path) is None  # the header's sessionId is not Claude Code's
    assert session_format(path) == "gemini-cli"
    assert detect_format(path)[0].name == "gemini-cli"
    requests = read(path)
    assert all(isinstance(each, SessionRequest) for each in requests)
    got = [
        (
            r.facts.request_id,
            r.facts.line,
            r.facts.prompt_tokens,
            r.observed.read,
            r.observed.output,
            r.facts.user_turn,
            r.provider,
        )
        for r in requests
        if isinstance(r, SessionRequest)
    ]
    # g1 counted once (line 4, its first write); g3 has no tokens; g4 was rewound out of
    # the conversation but its request was made. Prompt = input + tool; output = output +
    # thoughts.
    assert got == [
        ("g1", 4, 8_000, 0, 150, True, "google"),
        ("g2", 6, 9_000, 7_000, 200, False, "google"),
        ("g4", 10, 9_600, 8_800, 80, True, "google"),
    ]
    first = requests[0]
    assert isinstance(first, SessionRequest)
    assert (first.session, first.facts.lineage, first.project) == (SESSION, SESSION, "9da8b3df")


def test_the_older_document_and_its_migrated_lines_count_once(tmp_path: Path) -> None:
    chats = tmp_path / "chats"
    chats.mkdir()
    document = {**HEADER, "messages": [user("u1", "00:01"), G1, G2]}
    text = json.dumps(document, indent=2)
    legacy = chats / "session-2025-10-05T07-00-0b7c1a52.json"
    legacy.write_text(text)
    # Where each reply's id stands in the pretty-printed file, found here by plain search.
    lines = text.splitlines()
    g1_line = next(i for i, line in enumerate(lines, 1) if '"id": "g1"' in line)
    g2_line = next(i for i, line in enumerate(lines, 1) if '"id": "g2"' in line)
    assert session_format(legacy) == "gemini-cli"
    alone = read(legacy)
    assert [(r.facts.request_id, r.facts.line) for r in alone if isinstance(r, SessionRequest)] == [
        ("g1", g1_line),
        ("g2", g2_line),
    ]
    # Resuming it, Gemini CLI copies the whole record into a .jsonl and goes on there.
    migrated = recording(chats / "session-2025-10-05T07-00-0b7c1a52.jsonl")
    both = read(legacy, migrated)
    assert [r.facts.request_id for r in both if isinstance(r, SessionRequest)] == ["g1", "g2", "g4"]


def test_a_subagent_recording_is_a_lineage_of_its_parent(tmp_path: Path) -> None:
    folder = tmp_path / "chats" / SESSION
    folder.mkdir(parents=True)
    child = {**HEADER, "sessionId": "7f3a0c21", "kind": "subagent"}
    path = folder / "7f3a0c21.jsonl"
    path.write_text(json.dumps(child) + "\n" + json.dumps(G2) + "\n")
    (request,) = read(path)
    assert isinstance(request, SessionRequest)
    assert (request.session, request.facts.lineage) == (SESSION, f"{SESSION}/agent-7f3a0c21")
    assert request.facts.subagent


def test_a_reply_naming_no_model_takes_model_else_is_a_bad_record(tmp_path: Path) -> None:
    path = tmp_path / "session-x.jsonl"
    nameless = {key: value for key, value in G2.items() if key != "model"}
    path.write_text(json.dumps(HEADER) + "\n" + json.dumps(nameless) + "\n")
    (error,) = read(path)
    assert isinstance(error, LogRecordError)
    assert (error.line, error.field) == (2, "model")
    (request,) = read(path, defaults=ModelDefaults("gemini-2.5-flash", "vertex"))
    assert isinstance(request, SessionRequest)
    assert (request.facts.model, request.provider) == ("gemini-2.5-flash", "vertex")


def test_usage_bills_a_recording_by_hand(tmp_path: Path, migrated_db_url: str) -> None:
    path = recording(tmp_path / "session-2025-10-05T07-00-0b7c1a52.jsonl")
    report = usage_report(
        UsageRequest(files=[SessionFile(path=path)]), ContractStore(migrated_db_url)
    )
    totals = report.totals
    assert (totals.requests, totals.prompt_tokens, totals.cache_read_tokens) == (3, 26_600, 15_800)
    assert totals.output_tokens == 430
    # g1: 8,000 x 1.25 + 150 x 10 = 11,500; g2: 2,000 x 1.25 + 7,000 x 0.125 + 200 x 10 =
    # 5,375; g4: 800 x 1.25 + 8,800 x 0.125 + 80 x 10 = 2,900 (millionths of a dollar).
    assert Decimal(totals.cost) == Decimal(19_775) / MILLION
    # Without caching: 26,600 x 1.25 + 430 x 10 = 37,550.
    assert Decimal(totals.cost_without_cache) == Decimal(37_550) / MILLION
    assert report.clients == {"gemini-cli": 3}


def test_default_location_and_older_recordings_in_folders(tmp_path: Path) -> None:
    home = tmp_path / "home"
    chats = home / ".gemini" / "tmp" / "9da8b3df" / "chats"
    chats.mkdir(parents=True)
    (chats / "session-2025-10-05T07-00-0b7c1a52.json").write_text("{}")
    (chats / "session-2025-10-06T08-00-1c8d2b63.jsonl").write_text("{}\n")
    (home / ".gemini" / "tmp" / "9da8b3df" / "logs.json").write_text("[]")  # not a recording
    assert default_locations({}, home) == [home / ".gemini" / "tmp"]
    found = find_sessions([], {"HOME": str(home)})
    assert [path.name for path in found] == [
        "session-2025-10-05T07-00-0b7c1a52.json",
        "session-2025-10-06T08-00-1c8d2b63.jsonl",
    ]
    elsewhere = tmp_path / "other"
    (elsewhere / ".gemini" / "tmp").mkdir(parents=True)
    assert default_locations({"GEMINI_CLI_HOME": str(elsewhere)}, home) == [
        elsewhere / ".gemini" / "tmp"
    ]
