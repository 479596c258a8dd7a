"""Format detection: each real sample is told by its shape; a file of no known shape gets
one error naming every format tried and why it did not fit; format= forces a format."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cachecast.logs import (
    LogFileError,
    UnknownLogFormatError,
    detect_format,
    format_names,
    open_log,
)
from cachecast.logs import stream as stream_module
from tests.conftest import shared_data
from tests.logs.helpers import read, write_jsonl

SESSION = "claude_code/spotter/8463c716-a2ea-4c14-9efa-87158ebd9f20"
ROLLOUT = "rollout-2026-02-23T13-19-38-019c8a70-dda7-7f33-98ea-f30553347322.jsonl"
SAMPLES = {
    "claude_code/spotter/short.jsonl": "claude-code",
    f"{SESSION}/subagents/agent-acompact-f46190.jsonl": "claude-code",
    "claude_code/1af7fc5e-8455-4414-9ccd-011d40f70b2a.jsonl": "claude-code",
    "codex_cli/ccusage_fixture_session-alpha.jsonl": "codex",
    f"codex_cli/localpush/raw/sessions/{ROLLOUT}": "codex",
    "langfuse/openai-agents-2025-09-30.trace.json": "langfuse",
    "otel_genai_spans/genai-interlingua_openinference_in.json": "otel",
    "otel_genai_spans/genai-interlingua_openllmetry_in.json": "otel",
    "openai_batch/langbatch_chat_completion_batch.jsonl": "openai-batch",
    "openai_batch/langbatch_chat_completion_batch_results.jsonl": "openai-batch-output",
    "vcr_cassettes/openllmetry/test_invoke_model_cache_tokens.yaml": "vcr",
}


@pytest.mark.parametrize("relative", sorted(SAMPLES))
def test_each_sample_is_detected(relative: str) -> None:
    path = shared_data(f"recordings/{relative}")
    fmt, _ = detect_format(path)
    assert fmt.name == SAMPLES[relative]
    assert open_log(path).format == SAMPLES[relative]


def test_cachecast_lines_pass_through(tmp_path: Path) -> None:
    mooncake = {"timestamp": 0, "input_length": 700, "output_length": 5, "hash_ids": [1, 2]}
    body = {"model": "gpt-4o", "messages": [{"role": "user", "content": "hi"}]}
    path = write_jsonl(tmp_path / "mine.jsonl", [{"request": body, "provider": "openai"}, mooncake])
    stream = open_log(path)
    assert stream.format == "cachecast"
    items = list(stream)
    assert [line for line, _ in items] == [1, 2]
    assert items[0][1] == {"request": body, "provider": "openai"}  # as written, no rework
    assert (stream.records, stream.errors) == (2, 0)


def test_unknown_shape_gets_one_error_naming_every_format(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "mystery.jsonl", [{"what": 1}, {"what": 2}])
    with pytest.raises(UnknownLogFormatError) as raised:
        open_log(path)
    message = str(raised.value)
    assert message.startswith(f"{path}: not a log format cachecast reads")
    assert [name for name, _ in raised.value.tried] == format_names()
    for name, why in raised.value.tried:
        assert name in message and why in message
    assert "no request/body/messages/input/instructions/contents/prompt... key" in message
    not_json = tmp_path / "notes.txt"
    not_json.write_text("hello\nworld\n")
    with pytest.raises(UnknownLogFormatError) as raised:
        open_log(not_json)
    assert "neither JSON lines nor one JSON document (line 1:" in str(raised.value)


def test_one_json_document_of_no_format_is_named_as_one(tmp_path: Path) -> None:
    # A manifest written indented, as tools keep them: line 1 ("{") is no JSON line, but the
    # file is one JSON document, and the formats that read lines say so, naming its first
    # six top-level keys and counting all eight.
    manifest = {name: 1 for name in ("a", "b", "c", "d", "e", "f", "g", "h")}
    path = tmp_path / "manifest.json"
    path.write_text(json.dumps(manifest, indent=2))
    with pytest.raises(UnknownLogFormatError) as raised:
        open_log(path)
    why = dict(raised.value.tried)
    expected = "one JSON document, not JSON lines (top-level keys: a, b, c, d, e, f, ... 8 in all)"
    for name in ("claude-code", "codex"):
        assert why[name] == expected
    # cachecast's own format also reads one JSON record: it says which key it missed.
    assert why["cachecast"].startswith("one JSON document: no request/body/messages/")
    assert "neither JSON lines nor one JSON document" not in str(raised.value)
    # A list of numbers over several lines (no line a JSON object): its length is said.
    listed = tmp_path / "list.json"
    listed.write_text("[\n  1,\n  2\n]\n")
    with pytest.raises(UnknownLogFormatError) as raised:
        open_log(listed)
    assert (
        dict(raised.value.tried)["codex"] == "one JSON document, not JSON lines (a list of 2 items)"
    )


def test_empty_and_forced_and_unknown_format_names(tmp_path: Path) -> None:
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    with pytest.raises(LogFileError, match="the file is empty"):
        open_log(empty)
    blank = tmp_path / "blank.jsonl"
    blank.write_text("\n  \n")
    with pytest.raises(LogFileError, match="only whitespace"):
        open_log(blank)
    with pytest.raises(LogFileError, match="unknown format 'csv'; known: otel, har"):
        open_log(blank, format="csv")
    # Forced: a Claude Code reader on a cachecast line finds no message in it.
    path = write_jsonl(tmp_path / "mine.jsonl", [{"prompt": "hi", "model": "gpt-4o"}])
    forced = read(path, format="claude-code")
    assert forced.format == "claude-code" and forced.requests == []


def test_no_readable_record_is_visible_to_the_caller(tmp_path: Path) -> None:
    path = tmp_path / "broken.jsonl"
    path.write_text('{"prompt": "hi", "model": "gpt-4o"}\n{oops\n[1, 2]\n')
    stream = open_log(path)
    items = list(stream)
    assert (stream.records, stream.errors) == (1, 2)
    assert [str(item[1]).split(": ", 1)[0] for item in items[1:]] == [f"{path}:2", f"{path}:3"]


def test_whole_documents_are_bounded_before_parsing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    spans = {"resourceSpans": [{"scopeSpans": [{"spans": []}]}]}
    path = tmp_path / "trace.json"
    path.write_text(json.dumps(spans, indent=2))
    monkeypatch.setattr(stream_module, "MAX_DOCUMENT_BYTES", 16)
    with pytest.raises(UnknownLogFormatError, match="over the 0 MiB bound"):
        open_log(path)  # detection needs the document, which is refused unread
    with pytest.raises(LogFileError, match="over the 0 MiB bound for a JSON document"):
        list(open_log(path, format="otel"))
