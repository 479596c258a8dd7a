"""Variants found on public Claude Code transcripts of other users and newer versions
(docs/clients.md, "Format variants"): lines hand-written after their shape, never copied from
those files. Expected values are worked out by hand from the usage the lines carry and from
the documented prices and minimums, in the comments."""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from cachecast.contracts import ContractStore
from cachecast.passes.log_input import LogInput
from cachecast.sessions.causes import WARM_CACHE, explain
from cachecast.sessions.predictor import ObservedSplit, PromptFacts, SessionPredictor
from cachecast.sessions.profiles import CLAUDE_CODE
from cachecast.usecases.reconcile import ReconcileRequest, reconcile
from cachecast.usecases.usage import SessionFile, UsageRequest, usage_report
from tests.sessions.test_reading import requests, user, write
from tests.sessions.test_variants import answer, tokens, totals


def recent(uncached: int, read: int, five: int, hour: int, output: int) -> dict[str, Any]:
    """A usage as Claude Code 2.1.2xx writes it: the top-level counts, then ``iterations``
    holding the one sampling of the request (``type: message``, the same counts), the output's
    thinking share and ``speed``."""
    counts = tokens(uncached, read, five, hour, output)
    sampling = {key: counts[key] for key in ("input_tokens", "output_tokens")}
    sampling |= {
        "cache_read_input_tokens": read,
        "cache_creation_input_tokens": five + hour,
        "cache_creation": counts["cache_creation"],
        "type": "message",
    }
    return counts | {
        "output_tokens_details": {"thinking_tokens": 0},
        "server_tool_use": {"web_search_requests": 0, "web_fetch_requests": 0},
        "inference_geo": "not_available",
        "iterations": [sampling],
        "speed": "standard",
    }


@pytest.fixture
def store(migrated_db_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> ContractStore:
    """The migrated contracts, with answers remembered under the test's own folder."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    return ContractStore(migrated_db_url)


def one_turn(folder: Path, asked: str, *answers: dict[str, Any]) -> Path:
    """A transcript of one user message (at ``asked``) and the responses to it."""
    return write(folder / "t.jsonl", [user("u1", None, asked, "go"), *answers])


def test_responses_whose_ids_a_publisher_replaced_stay_apart(tmp_path: Path) -> None:
    # A published transcript with every other message id replaced by "REDACTED": two
    # responses share the placeholder, and only their requestId tells them apart (ccusage
    # keys responses on message.id + requestId). The lines of one response share both.
    side = {"isSidechain": True, "agentId": "ab12"}
    transcript = write(
        tmp_path / "agent-ab12.jsonl",
        [
            user("u1", None, "2026-04-05T19:42:25Z", "map the code", **side),
            answer("a1", "u1", "2026-04-05T19:42:30Z", tokens(3, 0, 600, output=8),
                   message_id="m1", requestId="r1", **side),
            answer("a2", "a1", "2026-04-05T19:42:39Z", tokens(5, 603, 4_000, output=1),
                   message_id="REDACTED", requestId="r2", **side),
            answer("a3", "a2", "2026-04-05T19:42:40Z", tokens(5, 603, 4_000, output=94),
                   message_id="REDACTED", requestId="r2", **side),
            answer("a4", "a3", "2026-04-05T19:42:50Z", tokens(5, 4_603, 120, output=74),
                   message_id="REDACTED", requestId="r3", **side),
        ],
    )  # fmt: skip
    found = requests(transcript)
    assert [each.facts.request_id for each in found] == ["m1", "REDACTED", "REDACTED/r3"]
    # uncached 3 + 5 + 5 = 13; reads 0 + 603 + 4,603 = 5,206; 5m writes 600 + 4,000 + 120 =
    # 4,720; output 8 + 94 (the second response's last line) + 74 = 176.
    assert totals(found) == (3, 13, 5_206, 4_720, 0, 176)
    # A resumed session's copy of a response (same placeholder, same requestId) is the same
    # response, counted in the file read first only.
    seen: set[str] = set()
    assert len(requests(transcript, seen)) == 3
    copy = write(
        tmp_path / "resumed.jsonl",
        [
            user("v1", None, "2026-04-05T20:00:00Z", "map the code", **side),
            answer("b1", "v1", "2026-04-05T19:42:39Z", tokens(5, 603, 4_000, output=94),
                   message_id="REDACTED", requestId="r2", **side),
        ],
    )  # fmt: skip
    assert requests(copy, seen) == []


def test_a_recent_line_counts_its_iterations_once(store: ContractStore, tmp_path: Path) -> None:
    # Claude Code 2.1.2xx: usage.iterations holds the request's one sampling (type message),
    # and the line carries diagnostics, stop_details, attributionAgent, effort, session_id and
    # a tool_use with caller; none of it adds a request or a token.
    newer = {
        "attributionAgent": "general-purpose",
        "effort": "high",
        "session_id": "s-1",
        "entrypoint": "sdk-cli",
        "isSidechain": False,
    }
    transcript = one_turn(
        tmp_path, "2026-05-04T01:50:00Z",
        answer("a1", "u1", "2026-05-04T01:50:18Z", recent(2, 10_000, 0, 1_000, 100),
               message_id="m1", requestId="r1", model="claude-sonnet-4-6",
               stop_details=None, diagnostics=None, **newer),
    )  # fmt: skip
    found = requests(transcript)
    assert totals(found) == (1, 2, 10_000, 0, 1_000, 100)
    report = usage_report(UsageRequest(files=[SessionFile(path=transcript)]), store)
    # Sonnet 4.6 (platform.claude.com pricing): $3 input, reads 0.1x = $0.30, 1h writes 2x =
    # $6, $15 output per MTok: 2 x 3 + 10,000 x 0.3 + 1,000 x 6 + 100 x 15 = 10,506 / 1e6.
    assert report.totals.cost == Decimal("0.010506")
    assert report.totals.requests == 1


def test_a_prompt_under_the_minimum_is_neither_written_nor_read(
    store: ContractStore, tmp_path: Path
) -> None:
    # `claude -p` with a short prompt of its own: 156 tokens on Haiku 4.5, whose documented
    # minimum cacheable length is 4,096 tokens (platform.claude.com, "Prompt caching": a
    # shorter prompt is processed without caching, even where marked). The usage says so:
    # 156 uncached, nothing read or written.
    transcript = one_turn(
        tmp_path, "2026-07-31T01:06:49Z",
        answer("a1", "u1", "2026-07-31T01:06:51Z", recent(156, 0, 0, 0, 79),
               message_id="m1", requestId="r1", model="claude-haiku-4-5-20251001"),
    )  # fmt: skip
    report = reconcile(ReconcileRequest(log=LogInput.of_paths([transcript])), store)
    (row,) = report.requests
    assert (row.predicted_cache_read_tokens, row.predicted_cache_write_tokens) == (0, 0)
    assert row.within_tolerance


def test_the_minimum_holds_a_breakpoint_back() -> None:
    # The predictor itself: the same session with a 1,024-token minimum and without one.
    def facts(line: int, total: int, minimum: int) -> PromptFacts:
        return PromptFacts("mini", line, f"r{line}", "s", "m", 1_000.0 + line, total,
                           minimum_prefix=minimum)  # fmt: skip

    short = SessionPredictor(CLAUDE_CODE).predict(facts(1, 800, 1_024))
    # 800 tokens, the breakpoint 3 before the end (the default tail): 797 < 1,024.
    assert (short.read, short.write, short.uncached) == (0, 0, 800)
    long = SessionPredictor(CLAUDE_CODE).predict(facts(1, 5_000, 1_024))
    # 5,000 - 3 = 4,997 written, 3 after the breakpoint.
    assert (long.read, long.write, long.uncached) == (0, 4_997, 3)


def test_a_compaction_agent_read_without_its_session_is_a_warm_start() -> None:
    # Claude Code's compaction agent (agent-acompact-*) resends its session's conversation.
    # Read alone, without the session's requests, what it reads was cached by that session:
    # the cache was warm before the log began, not a sub-agent's system prompt.
    facts = PromptFacts("agent-acompact-f1.jsonl", 2, "m1", "s/agent-acompact-f1", "m",
                        1_000.0, 169_248, subagent=True, parent="s")  # fmt: skip
    predictor = SessionPredictor(CLAUDE_CODE)
    predicted = predictor.predict(facts)
    # Nothing of the session is known: the whole prompt but the 3-token tail is written.
    assert (predicted.read, predicted.write) == (0, 169_245)
    observed = ObservedSplit(read=166_758, write=2_487, uncached=3, write_by_ttl={"1h": 2_487})
    cause, words = explain(facts, predicted, observed, CLAUDE_CODE)
    assert cause == WARM_CACHE
    assert "166,758" in words
