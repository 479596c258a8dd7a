"""At a new user turn the Anthropic API no longer sends the thinking blocks of earlier turns, and
the cache then matches the prompt only up to where that thinking began (docs/clients.md, Claude
Code, "Thinking of earlier turns"). Hand-built transcripts; expected values worked by hand in
the comments (a request's prompt is input + read + write; the tail Claude Code leaves after
its last breakpoint is 3 tokens throughout)."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

from cachecast.sessions.profiles import CLAUDE_CODE
from cachecast.sessions.reading import SessionRequest, session_requests
from cachecast.sessions.replay import predict_sessions

SESSION = "7e1a0c2d-0000-4000-8000-0000000000aa"


class Transcript:
    """Lines of a Claude Code transcript, each a child of the one before, ``seconds`` after
    10:00:00 (each call gives its own time)."""

    def __init__(self, model: str = "claude-sonnet-4-5-20250929") -> None:
        self.model = model
        self.lines: list[dict[str, Any]] = []

    def _add(self, kind: str, at: int, message: dict[str, Any], **extra: Any) -> None:
        self.lines.append(
            {
                "type": kind,
                "uuid": f"l{len(self.lines) + 1}",
                "parentUuid": self.lines[-1]["uuid"] if self.lines else None,
                "sessionId": SESSION,
                "cwd": "/w",
                "version": "2.0.28",
                "timestamp": f"2026-02-23T10:{at // 60:02d}:{at % 60:02d}Z",
                "message": message,
                **extra,
            }
        )

    def prompt(self, at: int, text: str, **extra: Any) -> None:
        self._add("user", at, {"role": "user", "content": text}, **extra)

    def tool_result(self, at: int) -> None:
        content = [{"type": "tool_result", "tool_use_id": "t", "content": "done"}]
        self._add("user", at, {"role": "user", "content": content})

    def response(self, at: int, read: int, write: int, thinking: bool = False) -> None:
        """One response as Claude Code writes it: a line per content block (a thinking block
        first where ``thinking``, then a tool call), each with the same id and usage."""
        usage = {
            "input_tokens": 3,
            "cache_read_input_tokens": read,
            "cache_creation_input_tokens": write,
            "cache_creation": {"ephemeral_5m_input_tokens": write, "ephemeral_1h_input_tokens": 0},
            "output_tokens": 10,
        }
        blocks: list[dict[str, Any]] = [{"type": "tool_use", "id": "t", "name": "Bash"}]
        if thinking:
            blocks.insert(0, {"type": "thinking", "thinking": "...", "signature": "s"})
        message_id = f"msg_{len(self.lines) + 1}"
        for block in blocks:
            message = {
                "id": message_id,
                "role": "assistant",
                "model": self.model,
                "content": [block],
                "usage": usage,
            }
            self._add("assistant", at, message)

    def write(self, path: Path) -> Path:
        path.write_text("".join(json.dumps(line) + "\n" for line in self.lines))
        return path


def requests(path: Path) -> list[SessionRequest]:
    found = list(session_requests(path, "t"))
    assert all(isinstance(each, SessionRequest) for each in found)
    return [each for each in found if isinstance(each, SessionRequest)]


def turn_one(t: Transcript, thinking: bool = True) -> None:
    """Turn 1: three requests. The first (10,003 tokens) reads 4,000 an earlier session
    cached and writes 6,000: cached end 10,000, before its own thinking. The next two read
    what the one before cached: 10,000 + 500 = 10,500, then 10,500 + 200 = 10,700."""
    t.prompt(0, "first")
    t.response(2, 4_000, 6_000, thinking=thinking)
    t.tool_result(5)
    t.response(7, 10_000, 500, thinking=thinking)
    t.tool_result(10)
    t.response(12, 10_500, 200, thinking=thinking)


def test_reader_marks_new_turns_and_thinking(tmp_path: Path) -> None:
    t = Transcript()
    turn_one(t)
    t.prompt(20, "Caveat: ...", isMeta=True)  # Claude Code's own line: no new turn
    t.prompt(21, "second")  # a typed prompt: the next response opens turn 2
    t.response(25, 10_000, 300)  # no thinking in this one
    found = requests(t.write(tmp_path / "s.jsonl"))
    assert [(r.facts.user_turn, r.observed.thought) for r in found] == [
        (True, True),  # the first response of the file follows a prompt
        (False, True),  # after tool results: the same turn
        (False, True),
        (True, False),
    ]


def test_new_turn_reads_what_was_cached_before_the_dropped_thinking(tmp_path: Path) -> None:
    # Turn 2's prompt: 10,303 tokens, shorter than the 10,700 cached: turn 1's thinking is no
    # longer sent. Predicted read 10,000 (what turn 1's first request cached, before its
    # thinking), write 10,303 - 10,000 - 3 = 300; observed the same. The request after it
    # reads what it cached: 10,300.
    t = Transcript()
    turn_one(t)
    t.prompt(20, "second")
    t.response(22, 10_000, 300)
    t.tool_result(25)
    t.response(27, 10_300, 150)
    rows = list(predict_sessions(requests(t.write(tmp_path / "s.jsonl")), CLAUDE_CODE))
    second = rows[3]
    assert (second.predicted.read, second.predicted.write) == (10_000, 300)
    assert second.within_tolerance and second.cause is None
    assert "thinking blocks are no longer sent" in second.why
    assert "10,303 tokens, shorter than the 10,700 cached" in second.why
    assert (rows[4].predicted.read, rows[4].within_tolerance) == (10_300, True)


def test_the_record_reader_of_compressed_transcripts_agrees(tmp_path: Path) -> None:
    # The same transcript gzipped is read by the record reader (cachecast.logs.claude_code):
    # the same marks, the same prediction for turn 2 (read 10,000, write 300).
    t = Transcript()
    turn_one(t)
    t.prompt(20, "second")
    t.response(22, 10_000, 300)
    plain = t.write(tmp_path / "s.jsonl")
    packed = tmp_path / "s.jsonl.gz"
    packed.write_bytes(gzip.compress(plain.read_bytes()))
    found = requests(packed)
    assert [(r.facts.user_turn, r.observed.thought) for r in found] == [
        (True, True),
        (False, True),
        (False, True),
        (True, False),
    ]
    second = list(predict_sessions(found, CLAUDE_CODE))[3]
    assert (second.predicted.read, second.predicted.write) == (10_000, 300)


def test_thinking_that_began_later_in_the_turn(tmp_path: Path) -> None:
    # Turn 1's first response does not think; its second does: the prompt matches up to the
    # second request's cached end, 10,500. Turn 2 (10,603 tokens < 10,700): read 10,500,
    # write 10,603 - 10,500 - 3 = 100.
    t = Transcript()
    t.prompt(0, "first")
    t.response(2, 4_000, 6_000)
    t.tool_result(5)
    t.response(7, 10_000, 500, thinking=True)
    t.tool_result(10)
    t.response(12, 10_500, 200, thinking=True)
    t.prompt(20, "second")
    t.response(22, 10_500, 100)
    second = list(predict_sessions(requests(t.write(tmp_path / "s.jsonl")), CLAUDE_CODE))[3]
    assert (second.predicted.read, second.predicted.write) == (10_500, 100)
    assert second.within_tolerance


def test_a_prompt_that_kept_growing_reads_the_whole_prefix(tmp_path: Path) -> None:
    # A model that keeps earlier turns' thinking sends a longer prompt: 10,903 tokens, more
    # than the 10,700 cached. Predicted read 10,700, write 10,903 - 10,700 - 3 = 200.
    t = Transcript(model="claude-opus-4-6")
    turn_one(t)
    t.prompt(20, "second")
    t.response(22, 10_700, 200)
    second = list(predict_sessions(requests(t.write(tmp_path / "s.jsonl")), CLAUDE_CODE))[3]
    assert (second.predicted.read, second.predicted.write) == (10_700, 200)
    assert second.within_tolerance


def test_without_thinking_a_shorter_prompt_is_not_explained_by_it(tmp_path: Path) -> None:
    # The same shorter prompt after a turn that did not think: nothing in the log says where
    # the prompt and the cache part, so no cached prefix is predicted (read 0, write
    # 10,303 - 3 = 10,300); it read 10,000: a miss.
    t = Transcript()
    turn_one(t, thinking=False)
    t.prompt(20, "second")
    t.response(22, 10_000, 300)
    second = list(predict_sessions(requests(t.write(tmp_path / "s.jsonl")), CLAUDE_CODE))[3]
    assert (second.predicted.read, second.predicted.write) == (0, 10_300)
    assert not second.within_tolerance


def test_the_prefix_before_the_thinking_expires(tmp_path: Path) -> None:
    # Turn 1's requests read through the 10,000 prefix until the third was sent, at 10:00:10
    # (its tool results' time; 5-minute writes); turn 2's prompt comes at 10:05:30, 5 min
    # 20 s later: nothing is read (predicted write 10,303 - 3 = 10,300), as observed.
    t = Transcript()
    turn_one(t)
    t.prompt(330, "second")
    t.response(332, 0, 10_300)
    second = list(predict_sessions(requests(t.write(tmp_path / "s.jsonl")), CLAUDE_CODE))[3]
    assert (second.predicted.read, second.predicted.write) == (0, 10_300)
    assert second.within_tolerance
