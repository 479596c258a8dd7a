"""Anthropic top-level ``cache_control`` (automatic caching) and the 4-breakpoint limit.

Token arithmetic used below (o200k, the approximation Anthropic models use here): a framed
block is ``<|start|> role <|message|> text <|end|>``; "user", "assistant", "system" and
"hello world" ... are counted from o200k: "user" and "assistant" are one token each and
"hello world" is two (see test_records), so a block "hello world" is 1 + 1 + 1 + 2 + 1 = 6
tokens, and the reply priming ``<|start|> assistant <|message|>`` is 3.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from cachecast.core.errors import LogRecordError
from cachecast.tokenizers import read_log, read_records

HW = "hello world"


def text(marker: dict[str, Any] | None = None) -> dict[str, Any]:
    block: dict[str, Any] = {"type": "text", "text": HW}
    if marker is not None:
        block["cache_control"] = marker
    return block


def body(messages: list[dict[str, Any]], **fields: Any) -> dict[str, Any]:
    return {"model": "claude-sonnet-4-5", "messages": messages, **fields}


def run(records: list[dict[str, Any]]) -> tuple[list[Any], list[LogRecordError]]:
    errors: list[LogRecordError] = []
    return list(read_records(records, "mem.jsonl", errors=errors)), errors


def test_top_level_cache_control_marks_the_last_block() -> None:
    record = body(
        [
            {"role": "user", "content": HW},
            {"role": "assistant", "content": [text()]},
            {"role": "user", "content": [text()]},
        ],
        cache_control={"type": "ephemeral"},
    )
    (request,), errors = run([record])
    assert errors == []
    # Three 6-token blocks, then the priming: the breakpoint closes the third block.
    assert request.input_tokens == 3 * 6 + 3
    assert [(b.offset, b.ttl) for b in request.breakpoints] == [(18, None)]


def test_automatic_breakpoint_skips_thinking_blocks_and_keeps_ttl() -> None:
    thinking = {"type": "thinking", "thinking": HW, "signature": "sig"}
    record = body(
        [
            {"role": "user", "content": HW},
            {"role": "assistant", "content": [text(), thinking]},
        ],
        cache_control={"type": "ephemeral", "ttl": "1h"},
    )
    (request,), errors = run([record])
    assert errors == []
    # Blocks: user (6), assistant text (6), thinking (6, cannot be cached): on the text.
    assert request.input_tokens == 18 + 3
    assert [(b.offset, b.ttl) for b in request.breakpoints] == [(12, "1h")]


def test_automatic_on_an_already_marked_block_adds_nothing() -> None:
    record = body(
        [{"role": "user", "content": [text(), text({"type": "ephemeral", "ttl": "1h"})]}],
        cache_control={"type": "ephemeral"},
    )
    (request,), errors = run([record])
    assert errors == []
    assert [(b.offset, b.ttl) for b in request.breakpoints] == [(12, "1h")]


def test_more_than_four_breakpoints_is_a_clear_error() -> None:
    marker = {"type": "ephemeral"}
    four_marked = {
        "tools": [{"name": "t", "input_schema": {}, "cache_control": marker}],
        "system": [{"type": "text", "text": HW, "cache_control": marker}],
    }
    messages = [{"role": "user", "content": [text(marker), text(marker), text()]}]
    five_explicit = body(
        [{"role": "user", "content": [text(marker), text(marker), text(marker)]}], **four_marked
    )
    four_plus_automatic = body(messages, cache_control=marker, **four_marked)
    exactly_four = body(messages, **four_marked)
    requests, errors = run([five_explicit, four_plus_automatic, exactly_four])
    # Lines 1 and 2 are refused (5 breakpoints each), line 3 (4) is accepted.
    assert [request.line for request in requests] == [3]
    assert len(requests[0].breakpoints) == 4
    assert [(error.line, error.field) for error in errors] == [
        (1, "cache_control"),
        (2, "cache_control"),
    ]
    assert "5 cache breakpoints" in errors[0].reason and "at most 4" in errors[0].reason
    assert "top-level cache_control" in errors[1].reason


def test_bad_top_level_ttl_names_the_field() -> None:
    record = body([{"role": "user", "content": HW}], cache_control={"type": "ephemeral", "ttl": 5})
    requests, errors = run([record])
    assert requests == []
    assert [(error.line, error.field) for error in errors] == [(1, "cache_control.ttl")]


def test_automatic_breakpoint_moves_forward_as_the_conversation_grows(tmp_path: Path) -> None:
    # read_log takes the first request's blocks over for the second: the automatic breakpoint
    # of the first (end of its last block) must not stay in the second.
    first = [{"role": "user", "content": HW}, {"role": "assistant", "content": [text()]}]
    second = [*first, {"role": "user", "content": [text()]}]
    log = tmp_path / "log.jsonl"
    lines = [
        {"session": "s", "request": body(first, cache_control={"type": "ephemeral"})},
        {"session": "s", "request": body(second, cache_control={"type": "ephemeral"})},
    ]
    log.write_text("".join(json.dumps(line) + "\n" for line in lines))
    errors: list[LogRecordError] = []
    one, two = list(read_log(log, errors=errors))
    assert errors == []
    assert [(b.offset, b.ttl) for b in one.breakpoints] == [(12, None)]
    assert [(b.offset, b.ttl) for b in two.breakpoints] == [(18, None)]
    assert two.input_tokens == 18 + 3
