"""The one reader of agent sessions (``sessions.reading``) on hand-written transcripts: it
parses only the lines that can bill or change a lineage, and still finds every lineage,
compaction, restart and root; and the usage report and ``reconcile`` agree on the shared
sessions because they read and predict through the same code."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from cachecast.contracts import ContractStore
from cachecast.passes.log_input import LogInput
from cachecast.sessions.reading import SessionRequest, session_requests
from cachecast.usecases.reconcile import ReconcileRequest, reconcile
from cachecast.usecases.usage import SessionFile, UsageRequest, usage_report
from tests.conftest import shared_data

SESSION = "s-1"


def line(kind: str, uuid: str, parent: str | None, when: str, **more: Any) -> dict[str, Any]:
    event = {"type": kind, "sessionId": SESSION, "uuid": uuid, "parentUuid": parent}
    return {**event, "timestamp": when, "version": "2.1.0", **more}


def user(uuid: str, parent: str | None, when: str, text: str, **more: Any) -> dict[str, Any]:
    return line("user", uuid, parent, when, message={"role": "user", "content": text}, **more)


def reply(
    uuid: str, parent: str, when: str, message_id: str, written: int, output: int, **more: Any
) -> dict[str, Any]:
    usage = {
        "input_tokens": 3,
        "cache_read_input_tokens": 0,
        "cache_creation_input_tokens": written,
        "output_tokens": output,
    }
    message = {
        "id": message_id,
        "model": "claude-sonnet-4-5",
        "role": "assistant",
        "content": [{"type": "text", "text": "ok"}],
        "usage": usage,
    }
    return line("assistant", uuid, parent, when, message=message, **more)


def write(path: Path, events: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(event) + "\n" for event in events))
    return path


def requests(path: Path, seen: set[str] | None = None) -> list[SessionRequest]:
    found = list(session_requests(path, path.name, seen=seen))
    assert all(isinstance(each, SessionRequest) for each in found), found
    return [each for each in found if isinstance(each, SessionRequest)]


def test_lineages_events_and_roots_of_a_transcript(tmp_path: Path) -> None:
    transcript = write(
        tmp_path / "t.jsonl",
        [
            user("u1", None, "2026-01-10T10:00:00Z", "fix the bug"),
            # One response over two lines: one request, with the second line's output (42).
            reply("a1", "u1", "2026-01-10T10:00:05Z", "m1", 1_000, 1),
            reply("a2", "a1", "2026-01-10T10:00:06Z", "m1", 1_000, 42),
            user("u2", "a2", "2026-01-10T10:00:10Z", "tool result"),
            # A sidechain (a Task of an older Claude Code): its own lineage, named by its root.
            user("sc1", None, "2026-01-10T10:00:11Z", "sub task", isSidechain=True),
            reply("sc2", "sc1", "2026-01-10T10:00:12Z", "m2", 500, 5, isSidechain=True),
            user("sc3", "sc2", "2026-01-10T10:00:13Z", "more", isSidechain=True),
            reply("sc4", "sc3", "2026-01-10T10:00:14Z", "m3", 600, 5, isSidechain=True),
            reply("a3", "u2", "2026-01-10T10:00:20Z", "m4", 1_100, 7),
            # A compaction: the next request says so; the summary is the lineage's new root.
            line("system", "b1", "a3", "2026-01-10T10:01:00Z", subtype="compact_boundary"),
            user("u3", "b1", "2026-01-10T10:01:01Z", "summary of the conversation"),
            reply("a4", "u3", "2026-01-10T10:01:05Z", "m5", 800, 9),
            # A conversation started again in the same session (a user line without parent).
            user("u4", None, "2026-01-10T10:02:00Z", "fix the bug"),
            reply("a5", "u4", "2026-01-10T10:02:05Z", "m6", 900, 3),
            # Claude Code's own error text: not an API call.
            reply("a6", "a5", "2026-01-10T10:02:06Z", "m7", 0, 0),
        ],
    )
    # The last line as <synthetic>: edit it in place.
    lines = transcript.read_text().splitlines()
    lines[-1] = lines[-1].replace("claude-sonnet-4-5", "<synthetic>")
    transcript.write_text("\n".join(lines) + "\n")
    found = requests(transcript)
    by_id = {each.facts.request_id: each for each in found}
    assert list(by_id) == ["m1", "m2", "m3", "m4", "m5", "m6"]
    assert by_id["m1"].observed.output == 42 and by_id["m1"].facts.line == 2
    # The sidechain's two requests share the lineage its root (sc1) names; the main chain's
    # lineage is the session.
    assert {by_id[m].facts.lineage for m in ("m2", "m3")} == {f"{SESSION}/sidechain-sc1"}
    assert by_id["m2"].facts.subagent and not by_id["m1"].facts.subagent
    assert {by_id[m].facts.lineage for m in ("m1", "m4", "m5", "m6")} == {SESSION}
    assert [by_id[m].facts.event for m in ("m1", "m4", "m5", "m6")] == [
        None,
        None,
        "compacted",
        "restarted",
    ]
    # Roots: the first user message of each conversation; the restart opens with the same
    # text as the first ("fix the bug"), so the two share a root; the summary's differs.
    roots = {m: by_id[m].facts.root for m in by_id}
    assert roots["m1"] == roots["m4"] == roots["m6"] is not None
    assert roots["m5"] not in (None, roots["m1"]) and roots["m2"] == roots["m3"] != roots["m1"]
    # Prompt = 3 uncached + written; every write is 5 minutes (no split given).
    assert (by_id["m1"].facts.prompt_tokens, by_id["m1"].write_5m) == (1_003, 1_000)
    assert (by_id["m1"].client, by_id["m1"].client_version, by_id["m1"].session) == (
        "claude-code",
        "2.1.0",
        SESSION,
    )


def test_a_resumed_session_repeats_a_response_counted_once(tmp_path: Path) -> None:
    first = write(
        tmp_path / "a.jsonl",
        [
            user("u1", None, "2026-01-10T10:00:00Z", "hi"),
            reply("a1", "u1", "2026-01-10T10:00:05Z", "m1", 100, 1),
        ],
    )
    resumed = write(
        tmp_path / "b.jsonl",
        [
            reply("a1", "u1", "2026-01-10T10:00:05Z", "m1", 100, 1),
            user("u2", "a1", "2026-01-11T09:00:00Z", "again"),
            reply("a2", "u2", "2026-01-11T09:00:05Z", "m2", 200, 1),
        ],
    )
    seen: set[str] = set()
    ids = [each.facts.request_id for path in (first, resumed) for each in requests(path, seen)]
    assert ids == ["m1", "m2"]


def test_usage_and_reconcile_give_the_same_predictions(migrated_db_url: str) -> None:
    # One reader and one predictor: for every request the usage report lists as lost to a
    # prediction outside tolerance, reconcile predicted the same reads and gave the same cause.
    files = sorted(shared_data("recordings/claude_code").rglob("*.jsonl"))
    store = ContractStore(migrated_db_url)
    usage = usage_report(
        UsageRequest(files=[SessionFile(path=path) for path in files], worst=1000), store
    )
    rows = {
        row.request_id: row
        for row in reconcile(ReconcileRequest(log=LogInput.of_paths(files)), store).requests
    }
    compared = 0
    for worst in usage.worst_requests:
        row = rows[worst.request_id]
        assert worst.cache_read_tokens == row.observed_cache_read_tokens
        if worst.cause != "idle_gap_outlived_ttl":
            assert not row.within_tolerance
            assert worst.expected_read_tokens == row.predicted_cache_read_tokens
            assert worst.cause == row.classification
            compared += 1
    assert compared > 0
