"""Claude Code rebuilds its environment context (working directory, git status, CLAUDE.md) at a
prompt whose working directory differs from the previous turn's: the provider reads only the
stable part before it (docs/clients.md, "Working directory changed"). Hand-built transcripts
and mini sessions; expected values worked by hand in the comments."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

from cachecast.sessions.causes import DIRECTORY_CHANGED, PREFIX_CHANGED, explain, within
from cachecast.sessions.predictor import ObservedSplit, PromptFacts, SessionPredictor
from cachecast.sessions.profiles import CLAUDE_CODE
from cachecast.sessions.reading import SessionRequest, session_requests
from cachecast.sessions.replay import missed_reads, predict_sessions

SESSION = "5e55a0b1-0000-4000-8000-00000000000d"
T0 = 1_770_000_000.0


class Transcript:
    """Lines of a Claude Code transcript, each a child of the one before."""

    def __init__(self) -> None:
        self.lines: list[dict[str, Any]] = []
        self.second = 0

    def _add(self, kind: str, cwd: str, message: dict[str, Any], **extra: Any) -> None:
        self.second += 5
        self.lines.append(
            {
                "type": kind,
                "uuid": f"l{len(self.lines) + 1}",
                "parentUuid": self.lines[-1]["uuid"] if self.lines else None,
                "sessionId": SESSION,
                "cwd": cwd,
                "version": "1.0.89",
                "timestamp": f"2026-02-23T10:00:{self.second:02d}Z",
                "message": message,
                **extra,
            }
        )

    def prompt(self, cwd: str, text: str, **extra: Any) -> None:
        self._add("user", cwd, {"role": "user", "content": text}, **extra)

    def tool_result(self, cwd: str) -> None:
        content = [{"type": "tool_result", "tool_use_id": "t", "content": "done"}]
        self._add("user", cwd, {"role": "user", "content": content})

    def response(self, cwd: str, read: int, write: int, uncached: int = 3) -> None:
        usage = {
            "input_tokens": uncached,
            "cache_read_input_tokens": read,
            "cache_creation_input_tokens": write,
            "output_tokens": 10,
        }
        message = {
            "id": f"msg_{len(self.lines) + 1}",
            "role": "assistant",
            "model": "claude-sonnet-4-20250514",
            "content": [{"type": "text", "text": "ok"}],
            "usage": usage,
        }
        self._add("assistant", cwd, message)

    def write(self, path: Path) -> Path:
        path.write_text("".join(json.dumps(line) + "\n" for line in self.lines))
        return path


def requests(path: Path) -> list[SessionRequest]:
    found = list(session_requests(path, "t"))
    assert all(isinstance(each, SessionRequest) for each in found)
    return [each for each in found if isinstance(each, SessionRequest)]


def test_reader_marks_the_turn_whose_prompt_ran_elsewhere(tmp_path: Path) -> None:
    t = Transcript()
    t.prompt("/a", "first")  # line 1
    t.response("/a", 0, 10_000)  # line 2: turn 1 in /a
    t.tool_result("/b")  # line 3: a cd inside the turn: no new turn, nothing rebuilt
    t.response("/b", 10_000, 200)  # line 4
    t.prompt("/b", "Caveat: ...", isMeta=True)  # line 5: Claude Code's own line
    t.prompt("/b", "<bash-input>pwd</bash-input>")  # line 6: typed, no request follows
    t.prompt("/b", "second")  # line 7
    t.response("/b", 4_000, 6_500)  # line 8: turn 2 in /b: changed from /a
    t.prompt("/b", "third")  # line 9
    t.response("/b", 10_500, 100)  # line 10: turn 3 in /b: unchanged
    found = requests(t.write(tmp_path / "s.jsonl"))
    assert [(r.facts.line, r.facts.directory_change) for r in found] == [
        (2, None),
        (4, None),
        (8, ("/a", "/b")),
        (10, None),
    ]


def test_stable_part_from_the_sessions_warm_start(tmp_path: Path) -> None:
    # Turn 1 (/a): read 4,000 (the part an earlier session left: tools and system prompt),
    # wrote 6,000: 10,003 tokens, prefix 10,000. Turn 2 (/b, 10,003 + 497 = 10,500 tokens):
    # predicted read 4,000, write 10,500 - 4,000 - 3 (the tail seen) = 6,497; it read 4,000
    # and wrote 6,497. Turn 3 (/b again): reads what turn 2 cached, 10,497.
    t = Transcript()
    t.prompt("/a", "first")
    t.response("/a", 4_000, 6_000)
    t.prompt("/b", "second")
    t.response("/b", 4_000, 6_497)
    t.prompt("/b", "third")
    t.response("/b", 10_497, 100)
    found = requests(t.write(tmp_path / "s.jsonl"))
    rows = list(predict_sessions(found, CLAUDE_CODE))
    second = rows[1]
    assert (second.predicted.read, second.predicted.write) == (4_000, 6_497)
    assert second.within_tolerance and second.cause is None
    assert "from /a to /b" in second.why and "only the 4,000 tokens before it" in second.why
    assert (rows[2].predicted.read, rows[2].within_tolerance) == (10_497, True)
    # Predicted right, and still 6,000 cached tokens (10,000 - 4,000) written again: the
    # usage report counts them lost to the change of directory.
    lost = missed_reads(second)
    assert lost is not None
    assert (lost.tokens, lost.expected, lost.cause) == (6_000, 10_000, DIRECTORY_CHANGED)
    assert missed_reads(rows[2]) is None


def facts(line: int, total: int, at: float, change: tuple[str, str] | None) -> PromptFacts:
    return PromptFacts(
        source="mini",
        line=line,
        request_id=f"r{line}",
        lineage="s",
        model="m",
        timestamp=T0 + at,
        prompt_tokens=total,
        directory_change=change,
    )


def test_stable_part_unknown_is_said_not_guessed() -> None:
    # A cold start (nothing read): no earlier request shows where the stable part ends, so
    # the prefix of 20,000 is predicted; it read 12,000: classed as the change of directory.
    session = [
        (facts(1, 20_003, 0, None), ObservedSplit(0, 20_000, 3)),
        (facts(2, 20_500, 30, ("/a", "/b")), ObservedSplit(12_000, 8_497, 3)),
    ]
    predictor = SessionPredictor(CLAUDE_CODE)
    first = predictor.predict(session[0][0])
    predictor.learn(session[0][0], first, session[0][1])
    second = predictor.predict(session[1][0])
    assert second.read == 20_000 and second.before_directory_change is None
    assert "whose size no earlier request in this log shows" in second.basis
    assert not within(session[1][0], second, session[1][1])
    cause, words = explain(session[1][0], second, session[1][1], CLAUDE_CODE)
    assert cause == DIRECTORY_CHANGED
    assert "from /a to /b" in words and "read only 12,000 of the 20,000" in words
    assert "(8,000 written again)" in words
    # The same miss with no change of directory stays a changed system prompt.
    plain = dataclasses.replace(session[1][0], directory_change=None)
    assert explain(plain, second, session[1][1], CLAUDE_CODE)[0] == PREFIX_CHANGED


def test_a_directory_changed_read_teaches_the_stable_part() -> None:
    # Cold start; turn 2 in /b reads 12,000 of 20,000 (part unknown then); turn 3 back in /a
    # (21,000 tokens, 20,497 cached by turn 2): predicted read 12,000, write 21,000 - 12,000
    # - 3 = 8,997.
    session = [
        (facts(1, 20_003, 0, None), ObservedSplit(0, 20_000, 3)),
        (facts(2, 20_500, 30, ("/a", "/b")), ObservedSplit(12_000, 8_497, 3)),
        (facts(3, 21_000, 60, ("/b", "/a")), ObservedSplit(12_000, 8_997, 3)),
    ]
    predictor = SessionPredictor(CLAUDE_CODE)
    predicted = []
    for each, observed in session:
        predicted.append(predictor.predict(each))
        predictor.learn(each, predicted[-1], observed)
    third = predicted[2]
    assert (third.read, third.write, third.before_directory_change) == (12_000, 8_997, 20_497)
    assert within(session[2][0], third, session[2][1])
